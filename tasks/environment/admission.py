"""From a module's source to a checked environment: policy, class, sandbox load, schemas.

Everything derived here comes from the source text (``ast``) or from the sandbox; the module is
never imported into the factory's process.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from envmill.schemas.environment import EnvironmentRecord, PolicyViolation, ToolSchema
from envmill.tasks.environment.reading import (
    EnvModuleError,
    compute_env_id,
    derive_state_schema,
    derive_tool_schemas,
    find_environment_class,
)
from envmill.tasks.environment.tool_kinds import classify_tools
from envmill.tasks.policy import check_module
from envmill.tasks.sandbox import Sandbox


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
    tool_kinds: dict[str, str]
    state_schema: dict[str, Any]
    default_state: dict[str, Any]
    checked: dict[str, Any] = field(default_factory=dict)

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
    """Check a module and derive its schemas; raises EnvironmentRejected with a one-line reason."""
    violations = check_module(source)
    if violations:
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        raise EnvironmentRejected("policy", f"{violations[0]}{more}", violations)
    try:
        class_name = find_environment_class(ast.parse(source)).name
        tools = derive_tool_schemas(source)
        kinds = classify_tools(source)
    except (EnvModuleError, SyntaxError) as exc:
        raise EnvironmentRejected("structure", str(exc)) from None
    with sandbox.episode(source, class_name) as episode:
        loaded = episode.load_outcome
    if not loaded.ok or loaded.state is None:
        raise EnvironmentRejected("load", f"{loaded.error_class}: {loaded.error}")
    return AdmittedEnvironment(
        env_id=compute_env_id(source),
        source=source,
        class_name=class_name,
        tools=tools,
        tool_kinds=kinds,
        state_schema=derive_state_schema(source, loaded.state),
        default_state=loaded.state,
        checked={"policy": "passed", "sandbox_load": "passed", "isolation": sandbox.isolation},
    )
