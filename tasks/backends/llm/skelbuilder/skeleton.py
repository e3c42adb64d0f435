"""The skeleton stages (EnvScaler's logic modelling): state plan → state code → operation list →
one method per operation. Each answer is structured and checked; a check that fails shows the
model its problem for at most ``repair_rounds`` more answers. Assembly and admission come next
(:mod:`admit`).
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from envmill.schemas.skeleton import (
    MAX_RULE_CHARS,
    MAX_RULES,
    CodeReply,
    OperationList,
    OperationSpec,
    StatePlan,
)
from envmill.schemas.topics import TopicSource
from envmill.tasks.backends.llm.skelbuilder.assemble import (
    STATE,
    group_problem,
    split_methods,
    state_problems,
)
from envmill.tasks.backends.llm.skelbuilder.context import TopicContext, to_json
from envmill.tasks.envs.reading import find_environment_class, list_tool_methods


def plan_state(ctx: TopicContext, source: TopicSource) -> StatePlan:
    """Stage ``skeleton_plan``: entities with their attributes, and the business rules, from
    the topic and what mining knew of it."""
    return ctx.asker.ask(
        "skeleton_plan",
        StatePlan,
        rounds=ctx.settings.repair_rounds,
        check=_plan_problem,
        topic=ctx.topic,
        introduction=source.introduction,
        request=source.request if source.request.strip() != ctx.topic.strip() else "",
    )


def write_state_code(ctx: TopicContext, plan: StatePlan) -> str:
    """Stage ``skeleton_state``: TypedDicts, the class, its constants and ``__init__``."""
    receipt: list[int] = []
    reply = ctx.asker.ask(
        "skeleton_state",
        CodeReply,
        rounds=ctx.settings.repair_rounds,
        check=_state_code_problem,
        receipt=receipt,
        topic=ctx.topic,
        plan=plan.model_dump(),
    )
    ctx.wrote([STATE], receipt)
    return reply.code


def list_operations(ctx: TopicContext, plan: StatePlan, state_code: str) -> list[OperationSpec]:
    """Stage ``skeleton_operations``: the tools, at least ``min_tools`` of them."""
    minimum = ctx.settings.min_tools

    def problem(answer: OperationList) -> str | None:
        return _operations_problem(answer.operations, minimum)

    reply = ctx.asker.ask(
        "skeleton_operations",
        OperationList,
        rounds=ctx.settings.repair_rounds,
        check=problem,
        topic=ctx.topic,
        plan=plan.model_dump(),
        state_code=state_code,
        min_tools=minimum,
    )
    return reply.operations


def write_methods(
    ctx: TopicContext, plan: StatePlan, state_code: str, operations: list[OperationSpec]
) -> dict[str, str]:
    """Stage ``skeleton_method``: the methods written a few per call, an entity's together
    (calls in flight together), each kept as a part of its own, in the operations' order.

    One method per call resent the plan and the whole state code with every method: about half
    of an environment's calls and prompt tokens."""

    def write(group: list[OperationSpec]) -> dict[str, str]:
        names = [op.name for op in group]
        others = [op for op in operations if op.name not in names]
        receipt: list[int] = []
        reply = ctx.asker.ask(
            "skeleton_method",
            CodeReply,
            rounds=ctx.settings.repair_rounds,
            check=defines_methods(names),
            receipt=receipt,
            topic=ctx.topic,
            introduction=plan.introduction,
            business_rules=plan.business_rules,
            state_code=state_code,
            operations=[to_json(op.model_dump(exclude={"entity"})) for op in group],
            operation_names=names,
            others=[f"{op.name}: {op.summary}" for op in others],
        )
        ctx.wrote(names, receipt)
        return split_methods(reply.code, names)

    written: dict[str, str] = {}
    for parts in ctx.pool.map(write, method_groups(operations, ctx.settings.methods_per_call)):
        written.update(parts)
    return {op.name: written[op.name] for op in operations}


def method_groups(operations: list[OperationSpec], size: int) -> list[list[OperationSpec]]:
    """Operations in groups of at most ``size``: each entity's together, in order of first
    mention, split evenly when it has more than ``size``; small groups then share a call."""
    by_entity: dict[str, list[OperationSpec]] = {}
    for op in operations:
        by_entity.setdefault(op.entity.strip().lower(), []).append(op)
    pieces = []
    for ops in by_entity.values():
        count = -(-len(ops) // size)
        pieces += [ops[i * len(ops) // count : (i + 1) * len(ops) // count] for i in range(count)]
    groups: list[list[OperationSpec]] = []
    for piece in sorted(pieces, key=len, reverse=True):
        home = next((g for g in groups if len(g) + len(piece) <= size), None)
        if home is None:
            groups.append(list(piece))
        else:
            home.extend(piece)
    return groups


def defines_methods(names: list[str]):
    """A check that an answer's code splits into exactly the methods ``names`` (anything else
    about the code is for the checks after assembly, which can name the line)."""

    def problem(answer: CodeReply) -> str | None:
        return group_problem(answer.code, names)

    return problem


def defines_method(name: str):
    """A check that an answer's code defines ``def name(self, ...)`` (anything else about the
    code is for the checks after assembly, which can name the line)."""
    pattern = re.compile(rf"^\s*def\s+{re.escape(name)}\s*\(\s*self\b", re.MULTILINE)

    def problem(answer: CodeReply) -> str | None:
        if pattern.search(answer.code):
            return None
        return f"the code must define the method `def {name}(self, ...)` and nothing else"

    return problem


def _plan_problem(plan: StatePlan) -> str | None:
    repeated = [name for name, n in Counter(e.name for e in plan.entities).items() if n > 1]
    if repeated:
        return f"entity {repeated[0]!r} is planned twice; give each entity once"
    rules = plan.business_rules
    if len(rules) > MAX_RULES or max(map(len, rules)) > MAX_RULE_CHARS:
        return f"business_rules: at most {MAX_RULES} rules of at most {MAX_RULE_CHARS} characters"
    return None


def _state_code_problem(answer: CodeReply) -> str | None:
    """The state code must parse, hold the class with ``__init__``, and no tools yet.

    A syntax error is shown with its line here: the state code is one answer, so its own
    conversation is the place to fix it.
    """
    problems = state_problems(answer.code)
    if problems:
        return f"the state code cannot be used: {problems[0]}"
    tools = [fn.name for fn in list_tool_methods(find_environment_class(ast.parse(answer.code)))]
    if tools:
        return (
            f"the state code defines public methods ({', '.join(tools)}); leave every operation "
            "out: each one is written separately later (private helpers are fine)"
        )
    return None


def _operations_problem(operations: list[OperationSpec], minimum: int) -> str | None:
    names = [op.name for op in operations]
    repeated = [name for name, n in Counter(names).items() if n > 1]
    kinds = {op.kind for op in operations}
    if repeated:
        return f"operation {repeated[0]!r} is listed twice; give every operation a distinct name"
    if len(operations) < minimum:
        return (
            f"only {len(operations)} operations; list at least {minimum}, aiming at about 10 "
            "queries and 8 state changes"
        )
    if kinds != {"query", "state_change"}:
        return "list both queries and state changes"
    return None
