"""Assemble the module, check it, and repair the parts the checks name, for a bounded number of
rounds.

A round's checks, first to last: the state code can be assembled (it parses, holds the class);
each method parses; then :func:`admit_environment` (policy, structure, state contract, load in the
sandbox, round-trip probes). Every finding names a line of the module, and the line names the
part it came from, so the model rewrites that method (or the state code), never the module. Parts
without a finding are kept as they are, so their cached answers stay valid.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from envmill.schemas.skeleton import CodeReply, OperationSpec, StatePlan
from envmill.tasks.backends.llm.skelbuilder.asking import SkeletonFailed
from envmill.tasks.backends.llm.skelbuilder.assemble import (
    STATE,
    AssembledModule,
    Problem,
    assemble_module,
    defined_twice,
    method_problems,
    state_problems,
    undefined_helpers,
)
from envmill.tasks.backends.llm.skelbuilder.context import TopicContext, to_json
from envmill.tasks.backends.llm.skelbuilder.skeleton import defines_method
from envmill.tasks.envs import AdmittedEnvironment, EnvironmentRejected, admit_environment


@dataclass
class Findings:
    """One round's verdict: the admitted environment, or the check that failed and its problems."""

    module: AssembledModule | None
    admitted: AdmittedEnvironment | None = None
    check: str = ""
    reason: str = ""
    problems: list[Problem] | None = None
    code: str = ""  # the category: a policy or contract rule, else the check


@dataclass
class Skeleton:
    """A module that passed admission, with the parts and plan it was made from."""

    plan: StatePlan
    operations: list[OperationSpec]
    parts: dict[str, str]
    module: AssembledModule
    admitted: AdmittedEnvironment
    repairs: int


def admit_parts(
    ctx: TopicContext, plan: StatePlan, operations: list[OperationSpec], parts: dict[str, str]
) -> Skeleton:
    """Assemble and admit, repairing named parts up to ``repair_rounds`` times.

    Raises:
        SkeletonFailed: ``env_<check>`` when the last round still fails, or a repair's call.
    """
    parts, repairs = dict(parts), 0
    for round_ in range(ctx.settings.repair_rounds + 1):
        findings = inspect_parts(parts, ctx)
        if findings.admitted is not None and findings.module is not None:
            return Skeleton(plan, operations, parts, findings.module, findings.admitted, repairs)
        for problem in {p.part: p for p in reversed(findings.problems or [])}.values():
            ctx.sent_back(problem.part, f"{findings.check}: {problem}")
        if round_ == ctx.settings.repair_rounds:
            break
        fixed = _repair_parts(ctx, findings, parts, operations, round_)
        parts.update(fixed)
        repairs += len(fixed)
    rounds = ctx.settings.repair_rounds
    raise SkeletonFailed(
        f"env_{findings.check}",
        f"{findings.reason} (still failing after {rounds} repair round{'s' * (rounds != 1)})",
        findings.code or findings.check,
        [f"{problem.part}: {problem}" for problem in findings.problems or []],
    )


def _repair_parts(
    ctx: TopicContext,
    findings: Findings,
    parts: dict[str, str],
    operations: list[OperationSpec],
    round_: int,
) -> dict[str, str]:
    """Every part with a problem, rewritten (calls in flight together)."""
    by_part: dict[str, list[Problem]] = defaultdict(list)
    for problem in findings.problems or []:
        by_part[problem.part].append(problem)

    def repair(name: str) -> str:
        return _repair(ctx, name, by_part[name], findings, parts, operations, round_)

    return dict(zip(by_part, ctx.pool.map(repair, list(by_part)), strict=True))


def inspect_parts(parts: dict[str, str], ctx: TopicContext) -> Findings:
    """The first check the parts fail, with every problem it found, or the admitted module."""
    early = state_problems(parts[STATE])
    if early:
        check = "syntax" if early[0].message.startswith("syntax") else "structure"
        return Findings(None, check=check, reason=str(early[0]), problems=early)
    methods = {name: code for name, code in parts.items() if name != STATE}
    module = assemble_module(parts[STATE], methods)
    broken = [
        Problem(name, module.module_line(name, p.line or 1), p.message)
        for name, code in methods.items()
        for p in method_problems(name, code)
    ]
    if broken:
        reason = f"{broken[0]} (in {broken[0].part})"
        return Findings(module, check="syntax", reason=reason, problems=broken)
    twice = defined_twice(module) or undefined_helpers(module)
    if twice:
        reason = f"{twice[0]} (in {twice[0].part})"
        return Findings(module, check="structure", reason=reason, problems=twice, code="helpers")
    try:
        admitted = admit_environment(module.source, ctx.sandbox)
    except EnvironmentRejected as exc:
        problems = [
            Problem(module.part_of(v.line), v.line, f"{v.message} [{v.rule}]")
            for v in exc.violations
        ] or [Problem(STATE, None, exc.reason)]
        code = exc.violations[0].rule if exc.violations else exc.stage
        return Findings(module, check=exc.stage, reason=exc.reason, problems=problems, code=code)
    lost = _lost_tools(methods, admitted)
    if lost:
        return Findings(
            module, check="structure", reason=str(lost[0]), problems=lost, code="lost_tool"
        )
    return Findings(module, admitted=admitted)


def _lost_tools(methods: dict[str, str], env: AdmittedEnvironment) -> list[Problem]:
    """Methods that did not become tools (written inside another class, say, or made private)."""
    tools = {tool.function.name for tool in env.tools}
    return [
        Problem(
            name,
            None,
            f"`{name}` is not a tool of the class: write only `def {name}(self, ...)`, a public "
            "method, with no class or other wrapper around it",
        )
        for name in methods
        if name not in tools
    ]


def _repair(
    ctx: TopicContext,
    part: str,
    problems: list[Problem],
    findings: Findings,
    parts: dict[str, str],
    operations: list[OperationSpec],
    round_: int,
) -> str:
    """Stage ``skeleton_repair``: the part rewritten with its problems shown (the round is the
    sample index, so a repair that meets the same problems again gets a fresh answer)."""
    operation = next((op for op in operations if op.name == part), None)
    receipt: list[int] = []
    reply = ctx.asker.ask(
        "skeleton_repair",
        CodeReply,
        rounds=1,
        receipt=receipt,
        check=None if part == STATE else defines_method(part),
        sample=round_,
        fresh_on_retry=True,
        topic=ctx.topic,
        part=part,
        is_state=part == STATE,
        check_name=findings.check,
        errors=[str(problem) for problem in problems],
        listing=_listing(part, findings.module, parts),
        state_code=parts[STATE],
        operation=to_json(operation.model_dump()) if operation else "",
        operations=[f"{op.name}: {op.summary}" for op in operations],
    )
    ctx.wrote([part], receipt)
    return reply.code


def _listing(part: str, module: AssembledModule | None, parts: dict[str, str]) -> str:
    """The part with line numbers that match its problems: as it stands in the module, or the
    state code on its own when it could not be assembled."""
    if module is not None:
        return module.listing(part)
    return "\n".join(
        f"{index:>5} | {line}" for index, line in enumerate(parts[part].splitlines(), start=1)
    )
