"""The testing agent (stage ``skeleton_probe``): positive and negative calls until every tool is
covered, a few tools per LLM call, each answer's calls run in order as one chain from the
initial state (``chain``). Chains are per answer, not per round: the answers of a round are
written side by side from the same state, so one answer's calls cannot foresee another's.

A tool is covered when it had a positive call and, when it takes arguments, a negative one. Each
round asks only for what is still missing; after ``probe_rounds`` rounds the rest stays untested
(and the check reports it). At most ``MAX_CALLS_PER_TOOL`` calls of one tool per answer are run.
"""

from __future__ import annotations

from typing import Any

from envmill.schemas.skeleton import ProbeCalls, ProposedCall
from envmill.tasks.backends.llm.skelbuilder.chain import Chain, RanProbe, clock_of, run_chain
from envmill.tasks.backends.llm.skelbuilder.context import (
    TopicContext,
    chunked,
    preview_state,
    to_json,
)
from envmill.tasks.envs import AdmittedEnvironment

MAX_CALLS_PER_TOOL = 3


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
        chains = _propose_round(ctx, env, missing, list(ran), (shown, cut), round_)
        ran += run_chains(ctx, env, initial_state, chains, round_, len(ran) + 1)
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


def never_succeeded(env: AdmittedEnvironment, ran: list[RanProbe]) -> list[str]:
    """The state-changing tools (in the module's order) no positive probe succeeded with."""
    won = {
        p.call.tool for p in ran if p.call.kind == "positive" and p.result.get("success") is True
    }
    return [
        tool.function.name
        for tool in env.tools
        if env.tool_kinds.get(tool.function.name) == "state_change"
        and tool.function.name not in won
    ]


def _propose_round(
    ctx: TopicContext,
    env: AdmittedEnvironment,
    missing: dict[str, list[str]],
    ran: list[RanProbe],
    preview: tuple[dict[str, Any], list[str]],
    round_: int,
) -> list[Chain]:
    """One round's chains: a testing-agent call per group of tools, in flight together."""
    groups = chunked(list(missing), ctx.settings.tools_per_probe_call)

    def propose(group: list[str]) -> Chain:
        return _propose(ctx, env, group, missing, ran, *preview, round_)

    return list(ctx.pool.map(propose, groups))


def _propose(
    ctx: TopicContext,
    env: AdmittedEnvironment,
    group: list[str],
    missing: dict[str, list[str]],
    ran: list[RanProbe],
    shown: dict[str, Any],
    cut: list[str],
    round_: int,
) -> Chain:
    tools = [
        {**tool_brief(env, tool.function.name), "calls_needed": missing[tool.function.name]}
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
        others=other_tools(env, group),
        state=to_json(shown),
        cut=cut,
        clock=clock_of(shown),
        earlier=earlier,
        round=round_,
    )
    return capped(env, reply.calls)


def tool_brief(env: AdmittedEnvironment, name: str) -> dict[str, Any]:
    """What the testing agent is shown of one tool."""
    tool = next(t for t in env.tools if t.function.name == name)
    return {
        "name": name,
        "kind": env.tool_kinds.get(name, "query"),
        "description": tool.function.description,
        "parameters": tool.function.parameters,
    }


def other_tools(env: AdmittedEnvironment, group: list[str]) -> list[str]:
    """The tools outside ``group``, one line each, for calls that set up a probe."""
    return [
        f"{t.function.name}({', '.join(t.function.parameters.get('properties', {}))}): "
        f"{t.function.description.strip().splitlines()[0] if t.function.description else ''}"
        for t in env.tools
        if t.function.name not in group
    ]


def capped(env: AdmittedEnvironment, calls: list[ProposedCall]) -> Chain:
    """The calls to run, each with its number in the answer: calls of tools the environment has,
    at most ``MAX_CALLS_PER_TOOL`` of each."""
    tools = {tool.function.name for tool in env.tools}
    per_tool: dict[str, int] = {}
    kept = []
    for number, call in enumerate(calls, 1):
        if call.tool in tools and per_tool.get(call.tool, 0) < MAX_CALLS_PER_TOOL:
            per_tool[call.tool] = per_tool.get(call.tool, 0) + 1
            kept.append((number, call))
    return kept


def run_chains(
    ctx: TopicContext,
    env: AdmittedEnvironment,
    start: dict[str, Any],
    chains: list[Chain],
    round_: int,
    first_index: int,
) -> list[RanProbe]:
    """Each chain from ``start``, one after another, in one sandbox episode."""
    ran: list[RanProbe] = []
    with ctx.sandbox.episode(env.source, env.class_name, start) as episode:
        for chain in chains:
            ran += run_chain(episode, env, start, chain, round_, first_index + len(ran))
    return ran
