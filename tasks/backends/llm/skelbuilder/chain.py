"""Probe calls run as a chain: the calls of one testing-agent answer, in the order it gave them,
each on the state the earlier successful ones left, so a tool whose success needs a record the
initial state lacks (an appointment to complete) can be tested after the call that makes one.

A refused call leaves nothing behind (a bug that changed the state anyway shows in its own diff,
not in the next probe's). A call may name what an earlier one returned (``"$2.data.loan_id"``:
the value at ``data.loan_id`` in the result of call 2 of the answer), and may move the state's
clock forward first (``at_time``) for tools that depend on the time. A call whose reference or
clock move cannot be applied is not run; its result says why. It is kept as the tester's slip,
but shows nothing of the tool: the gate and the environment's warnings leave it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from envmill.schemas.skeleton import ProposedCall
from envmill.tasks.core.references import resolve_references
from envmill.tasks.core.statekit import diff_states
from envmill.tasks.core.system_message import ISO_DATE, TIME_KEYS
from envmill.tasks.envs import AdmittedEnvironment
from envmill.tasks.sandbox import ToolEpisode

NOT_RUN = "not run: "  # how a result says the call never reached the tool
Chain = list[tuple[int, ProposedCall]]  # calls with their number in the answer (from 1)


@dataclass
class RanProbe:
    """A proposed call after it ran: its number (from 1), round, the call as run (references
    resolved), result and the diff from the state it ran on."""

    index: int
    round: int
    call: ProposedCall
    tool_kind: str
    result: dict[str, Any]
    diff: list[dict[str, Any]]


def run_chain(
    episode: ToolEpisode,
    env: AdmittedEnvironment,
    start: dict[str, Any],
    chain: Chain,
    round_: int,
    first_index: int,
) -> list[RanProbe]:
    """Every call of ``chain`` in order, from ``start``, in one sandbox episode."""
    state, results, ran = start, {}, []
    for offset, (number, call) in enumerate(chain):
        kind = env.tool_kinds.get(call.tool, "query")
        try:
            arguments = resolve_references(call.arguments, results, "call")
            before = move_clock(state, call.at_time) if call.at_time else state
        except LookupError as exc:
            result = {"success": False, "error": f"{NOT_RUN}{exc}"}
            ran.append(RanProbe(first_index + offset, round_, call, kind, result, []))
            continue
        loaded = episode.load_state(before)
        before = loaded.state if loaded.ok and loaded.state is not None else before
        outcome = episode.call(call.tool, arguments)
        after = outcome.state
        diff = diff_states(before, after) if after is not None else []
        ran_call = call.model_copy(update={"arguments": arguments})
        ran.append(RanProbe(first_index + offset, round_, ran_call, kind, outcome.result, diff))
        results[number] = outcome.result
        if outcome.result.get("success") is True and after is not None:
            state = after
    return ran


def not_run(probe: RanProbe) -> bool:
    """Whether the call never reached its tool (a reference or clock move that failed)."""
    return str(probe.result.get("error", "")).startswith(NOT_RUN)


def clock_of(state: dict[str, Any]) -> str | None:
    """The attribute that holds the state's current time (``current_time`` mostly), or None."""
    return next((key for key in TIME_KEYS if isinstance(state.get(key), str)), None)


def move_clock(state: dict[str, Any], at_time: str) -> dict[str, Any]:
    """``state`` with its clock set to ``at_time``, written as the clock writes its time.

    Raises:
        LookupError: the state has no clock, ``at_time`` is no ISO time, or it lies before the
            state's time (the clock only moves forward: a state in which recorded events
            happen in its future is not one the environment could reach).
    """
    key = clock_of(state)
    if key is None:
        raise LookupError(f"at_time {at_time!r}: the state has no clock ({', '.join(TIME_KEYS)})")
    now, then = _parsed(state[key]), _parsed(at_time)
    if then is None:
        raise LookupError(f"at_time {at_time!r} is not an ISO 8601 time")
    if now is not None and _comparable(then, now) < _comparable(now, then):
        raise LookupError(
            f"at_time {at_time!r} is before the state's {key} {state[key]!r}; "
            "the clock only moves forward"
        )
    written = then.date().isoformat() if ISO_DATE.match(state[key].strip()) else at_time.strip()
    return {**state, key: written}


def _parsed(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        return None


def _comparable(value: datetime, other: datetime) -> datetime:
    """``value`` without its zone when ``other`` has none, so the two compare."""
    return value.replace(tzinfo=None) if other.tzinfo is None else value
