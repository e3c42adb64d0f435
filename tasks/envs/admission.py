"""From a module's source to a checked environment: policy, class, sandbox load, schemas.

Everything derived here comes from the source text (``ast``) or from the sandbox; the module is
never imported into the factory's process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

from envmill.schemas.environment import EnvironmentRecord, PolicyViolation, ToolKind, ToolSchema
from envmill.tasks.envs.contract import check_state_contract
from envmill.tasks.envs.policy import check_module
from envmill.tasks.envs.policy.names import violation
from envmill.tasks.envs.probes import ToolLines, json_problem, run_probes
from envmill.tasks.envs.reading import (
    EnvModuleError,
    compute_env_id,
    derive_state_schema,
    derive_tool_schemas,
    find_environment_class,
    parse_module,
)
from envmill.tasks.envs.tool_kinds import classify_tools
from envmill.tasks.sandbox import Sandbox

_LINE = re.compile(r"^line (\d+): (.*)$", re.DOTALL)


class EnvironmentRejected(Exception):
    """The module cannot be an environment; ``stage`` says which step refused it."""

    def __init__(self, stage: str, reason: str, violations: list[PolicyViolation] | None = None):
        super().__init__(f"{stage}: {reason}")
        self.stage, self.reason = stage, reason
        self.violations = violations or []


@dataclass
class AdmittedEnvironment:
    """What certification and rollouts need to run an environment."""

    env_id: str
    source: str
    class_name: str
    tools: list[ToolSchema]
    tool_kinds: dict[str, ToolKind]
    state_schema: dict[str, Any]
    default_state: dict[str, Any]
    checked: dict[str, Any] = field(default_factory=dict)
    warnings: list[PolicyViolation] = field(default_factory=list)  # reported, not refused

    def to_record(self, **extra: Any) -> EnvironmentRecord:
        return EnvironmentRecord(
            env_id=self.env_id,
            class_name=self.class_name,
            source=self.source,
            tools=self.tools,
            tool_kinds=self.tool_kinds,
            state_schema=self.state_schema,
            checked=self.checked,
            **extra,
        )


def admit_environment(source: str, sandbox: Sandbox) -> AdmittedEnvironment:
    """Check a module and derive its schemas; raises EnvironmentRejected with a one-line reason
    and every line-numbered violation found at the stage that refused it.

    Stages: ``policy`` (the static policy, with the state contract's findings too), ``structure``
    (no environment class), ``contract`` (the static state contract alone), ``load`` (the module
    or ``__init__`` fails in the sandbox), ``probe`` (state-changing probe calls whose states
    must round-trip).
    """
    violations = check_module(source)
    class_name, tools, kinds = _read_structure(source, violations)
    contract = check_state_contract(source)
    if violations:
        _refuse("policy", [*violations, *contract.violations])
    if contract.violations:
        _refuse("contract", contract.violations)
    lines = ToolLines(source)
    with sandbox.episode(source, class_name) as episode:
        loaded = episode.load_outcome
        if not loaded.ok or loaded.state is None:
            _refuse_load(loaded.error or "", loaded.error_class or "", lines)
        probes = run_probes(episode, tools, kinds, lines)
    if probes.violations:
        _refuse("probe", probes.violations)
    checked: dict[str, Any] = {
        "policy": "passed",
        "sandbox_load": "passed",
        "isolation": sandbox.isolation,
        "state_contract": "passed",
        "probes": probes.summary(),
    }
    if contract.warnings:
        checked["warnings"] = [str(w) for w in contract.warnings]
    return AdmittedEnvironment(
        env_id=compute_env_id(source),
        source=source,
        class_name=class_name,
        tools=tools,
        tool_kinds=kinds,
        state_schema=derive_state_schema(source, loaded.state),
        default_state=loaded.state,
        checked=checked,
        warnings=contract.warnings,
    )


def _read_structure(
    source: str, violations: list[PolicyViolation]
) -> tuple[str, list[ToolSchema], dict[str, ToolKind]]:
    """The class name, tool schemas and tool kinds; a module without one environment class is
    refused (at ``policy`` when the policy refused it too)."""
    try:
        class_name = find_environment_class(parse_module(source)).name
        return class_name, derive_tool_schemas(source), classify_tools(source)
    except (EnvModuleError, SyntaxError) as exc:
        if violations:
            _refuse("policy", violations)
        located = _LINE.match(str(exc))
        line, message = (int(located[1]), located[2]) if located else (1, str(exc))
        found = [violation("structure", line, message)]
        raise EnvironmentRejected("structure", str(exc), found) from None


def _refuse(stage: str, violations: list[PolicyViolation]) -> NoReturn:
    found = sorted(dict.fromkeys(violations), key=lambda v: v.line)
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise EnvironmentRejected(stage, f"{found[0]}{more}", found)


def _refuse_load(error: str, error_class: str, lines: ToolLines) -> NoReturn:
    """A load that failed, with the line to fix when the sandbox names one."""
    reason = f"{error_class}: {error}"
    found = (
        json_problem(error, lines.init_line, lines.class_kinds) if error_class == "host" else None
    )
    located = _LINE.match(error) if error_class == "program" else None
    if located:
        found = violation(
            "load",
            int(located[1]),
            f"{located[2]} (raised while importing the module or running __init__); fix this "
            "line so the module loads and __init__(self) runs without arguments",
        )
    raise EnvironmentRejected("load", reason, [found] if found else [])
