"""The testing agent (stage ``skeleton_probe``): positive and negative calls until every tool is
covered, a few tools per LLM call, each call run in the sandbox from the initial state.

A tool is covered when it had a positive call and, when it takes arguments, a negative one. Each
round asks only for what is still missing; after ``probe_rounds`` rounds the rest stays untested
(and the check reports it). At most ``MAX_CALLS_PER_TOOL`` calls of one tool per round are run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envmill.schemas.skeleton import ProbeCalls, ProposedCall
from envmill.tasks.backends.llm.skelbuilder.context import (
    TopicContext,
    chunked,
    preview_state,
    to_json,
)
from envmill.tasks.core.statekit import diff_states
from envmill.tasks.envs import AdmittedEnvironment

MAX_CALLS_PER_TOOL = 3


@dataclass
class RanProbe:
    """A proposed call after it ran: its number (from 1), round, result and state diff."""

    index: int
    round: int
    call: ProposedCall
    tool_kind: str
    result: dict[str, Any]
    diff: list[dict[str, Any]]


def probe_tools(
    ctx: TopicContext, env: AdmittedEnvironment, initial_state: dict[str, Any]
) -> list[RanProbe]:
    """Every probe the testing agent proposed, run, in proposal order."""
    ran: list[RanProbe] = []
    shown, cut = preview_state(initial_state, ctx.settings.preview_records)
    for round_ in range(ctx.settings.probe_rounds):
        missing = missing_kinds(env, ran)
        if not missing:
            break
        proposals = _propose_round(ctx, env, missing, list(ran), (shown, cut), round_)
        ran += run_calls(ctx, env, initial_state, proposals, round_, len(ran) + 1)
    return ran


def missing_kinds(env: AdmittedEnvironment, ran: list[RanProbe]) -> dict[str, list[str]]:
    """Per tool, the kinds of probe it still needs (tools in the module's order)."""
    done = {(probe.call.tool, probe.call.kind) for probe in ran}
    missing = {}
    for tool in env.tools:
        name = tool.function.name
        takes_arguments = bool(tool.function.parameters.get("properties"))
        kinds = ["positive", "negative"] if takes_arguments else ["positive"]
        needed = [kind for kind in kinds if (name, kind) not in done]
        if needed:
            missing[name] = needed
    return missing


def _propose_round(
    ctx: TopicContext,
    env: AdmittedEnvironment,
    missing: dict[str, list[str]],
    ran: list[RanProbe],
    preview: tuple[dict[str, Any], list[str]],
    round_: int,
) -> list[ProposedCall]:
    """One round's calls: a testing-agent call per group of tools, in flight together."""
    groups = chunked(list(missing), ctx.settings.tools_per_probe_call)

    def propose(group: list[str]) -> list[ProposedCall]:
        return _propose(ctx, env, group, missing, ran, *preview, round_)

    return [call for calls in ctx.pool.map(propose, groups) for call in calls]


def _propose(
    ctx: TopicContext,
    env: AdmittedEnvironment,
    group: list[str],
    missing: dict[str, list[str]],
    ran: list[RanProbe],
    shown: dict[str, Any],
    cut: list[str],
    round_: int,
) -> list[ProposedCall]:
    tools = [
        {
            "name": tool.function.name,
            "kind": env.tool_kinds.get(tool.function.name, "query"),
            "description": tool.function.description,
            "parameters": tool.function.parameters,
            "calls_needed": missing[tool.function.name],
        }
        for tool in env.tools
        if tool.function.name in group
    ]
    earlier = [
        f"{p.call.tool} ({p.call.kind}) {to_json(p.call.arguments)} -> "
        f"success={p.result.get('success')}"
        for p in ran
        if p.call.tool in group
    ]
    reply = ctx.asker.ask(
        "skeleton_probe",
        ProbeCalls,
        topic=ctx.topic,
        class_name=env.class_name,
        tools=to_json(tools),
        state=to_json(shown),
        cut=cut,
        earlier=earlier,
        round=round_,
    )
    per_tool: dict[str, int] = {}
    kept = []
    for call in reply.calls:
        if call.tool in group and per_tool.get(call.tool, 0) < MAX_CALLS_PER_TOOL:
            per_tool[call.tool] = per_tool.get(call.tool, 0) + 1
            kept.append(call)
    return kept


def run_calls(
    ctx: TopicContext,
    env: AdmittedEnvironment,
    initial_state: dict[str, Any],
    calls: list[ProposedCall],
    round_: int,
    first_index: int,
) -> list[RanProbe]:
    """Each call from a fresh copy of the initial state, in one sandbox episode."""
    ran = []
    with ctx.sandbox.episode(env.source, env.class_name, initial_state) as episode:
        for offset, call in enumerate(calls):
            start = episode.load_state(initial_state)
            before = start.state if start.ok and start.state is not None else initial_state
            outcome = episode.call(call.tool, call.arguments)
            after = outcome.state
            diff = diff_states(before, after) if after is not None else []
            kind = env.tool_kinds.get(call.tool, "query")
            ran.append(RanProbe(first_index + offset, round_, call, kind, outcome.result, diff))
    return ran
