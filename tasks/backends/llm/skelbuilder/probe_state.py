"""Stage ``skeleton_probe_state``: a state in which the state-changing tools that never succeeded
on the initial state can, asked once, and the model's calls on it.

An initial state written to look like a working day need not hold a record every tool can act
on (an appointment checked in, a claim awaiting approval), so a tool may pass the check having
only ever refused. The model sees those tools with what their calls were told and gives the
attributes to change; the merged state passes the initial state's checks (``state_problem``)
before its calls run as one chain. An answer that never passes leaves the tools untested on
their success path, which the gate counts; a failed call ends the topic like any stage's.
"""

from __future__ import annotations

from typing import Any

from envmill.schemas.skeleton import ProbeStateReply
from envmill.tasks.backends.llm.scengen.references import dangling_reference
from envmill.tasks.backends.llm.skelbuilder.asking import SkeletonFailed
from envmill.tasks.backends.llm.skelbuilder.chain import RanProbe, clock_of
from envmill.tasks.backends.llm.skelbuilder.context import TopicContext, preview_state, to_json
from envmill.tasks.backends.llm.skelbuilder.initial_state import MAX_RECORDS, state_problem
from envmill.tasks.backends.llm.skelbuilder.probing import (
    capped,
    never_succeeded,
    other_tools,
    run_chains,
    tool_brief,
)
from envmill.tasks.envs import AdmittedEnvironment

STAGE = "skeleton_probe_state"


def probe_on_probe_state(
    ctx: TopicContext, env: AdmittedEnvironment, initial_state: dict[str, Any], ran: list[RanProbe]
) -> list[RanProbe]:
    """The probes run on the model's probe state, numbered after ``ran`` in a round of their own;
    none when every state-changing tool succeeded or no answer gave a usable state."""
    tools = never_succeeded(env, ran)
    if not tools:
        return []
    try:
        reply, state = _ask(ctx, env, initial_state, tools, ran)
    except SkeletonFailed as exc:
        if exc.code != "unusable_answer":
            raise
        return []
    round_ = max((probe.round for probe in ran), default=-1) + 1
    return run_chains(ctx, env, state, [capped(env, reply.calls)], round_, len(ran) + 1)


def _ask(
    ctx: TopicContext,
    env: AdmittedEnvironment,
    initial_state: dict[str, Any],
    tools: list[str],
    ran: list[RanProbe],
) -> tuple[ProbeStateReply, dict[str, Any]]:
    names = {tool.function.name for tool in env.tools}

    def problem(answer: ProbeStateReply) -> str | None:
        unknown = [call.tool for call in answer.calls if call.tool not in names]
        if unknown:
            return f"there is no tool {unknown[0]!r}; call only the environment's tools"
        if not any(call.tool in tools and call.kind == "positive" for call in answer.calls):
            return f"no positive call of {', '.join(tools)}; give one for each tool listed"
        merged = merged_state(initial_state, answer.state)
        return state_problem(merged, env, ctx.sandbox) or dangling_reference(merged)

    shown, cut = preview_state(initial_state, ctx.settings.preview_records)
    reply = ctx.asker.ask(
        STAGE,
        ProbeStateReply,
        rounds=ctx.settings.repair_rounds,
        check=problem,
        topic=ctx.topic,
        class_name=env.class_name,
        tools=to_json([{**tool_brief(env, name), "calls": _tried(name, ran)} for name in tools]),
        others=other_tools(env, tools),
        state=to_json(shown),
        cut=cut,
        clock=clock_of(shown),
        state_schema=to_json(env.state_schema),
        max_records=MAX_RECORDS,
    )
    return reply, merged_state(initial_state, reply.state)


def _tried(tool: str, ran: list[RanProbe]) -> list[str]:
    """What the tool's calls were told, one line each."""
    return [
        f"{p.call.kind} {to_json(p.call.arguments)} -> "
        f"{p.result.get('error') or p.result.get('message') or p.result.get('success')}"
        for p in ran
        if p.call.tool == tool
    ]


def merged_state(initial: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``initial`` with ``changes``: a collection (a dict) keeps the records the changes do not
    name and takes the fields they give of those they do (a new record needs all its fields);
    any other attribute is replaced. Changing a status is then one line, not the whole state."""
    merged = dict(initial)
    for key, value in changes.items():
        current = initial.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            records = dict(current)
            for name, record in value.items():
                records[name] = _merged_record(current.get(name), record)
            merged[key] = records
        else:
            merged[key] = value
    return merged


def _merged_record(current: Any, given: Any) -> Any:
    if isinstance(current, dict) and isinstance(given, dict):
        return {**current, **given}
    return given
