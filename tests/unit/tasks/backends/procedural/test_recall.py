"""Sampling episodes answer a call they ran before from the same state without a round trip;
only a call that left the state as it was is kept, and the answer is a copy."""

from __future__ import annotations

import copy
from typing import Any

from envmill.tasks.backends.procedural.scenarios.recall import RecallingEpisode
from envmill.tasks.sandbox.outcomes import ToolOutcome


class Counter:
    """An episode over ``{"n": int}``: ``read`` changes nothing, ``bump`` adds one."""

    def __init__(self, n: Any = 0) -> None:
        self._state = {"n": n}
        self.calls: list[str] = []

    def state(self) -> dict[str, Any]:
        return self._state

    def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        self.calls.append(tool)
        if tool == "bump":
            self._state = {"n": self._state["n"] + 1}
        else:
            self._state = copy.deepcopy(self._state)  # a reply's state is always a new object
        return ToolOutcome(
            result={"success": True, "n": self._state["n"], **arguments}, state=self._state
        )


def test_a_call_that_changed_nothing_is_answered_again_without_the_host():
    inner = Counter()
    episode = RecallingEpisode(inner)  # type: ignore[arg-type]
    first = episode.call("read", {"a": 1})
    first.result["n"] = 99  # the caller's copy: the kept answer stays the host's
    again = episode.call("read", {"a": 1})
    assert inner.calls == ["read"] and again.result == {"success": True, "n": 0, "a": 1}
    assert again.state == {"n": 0}


def test_other_arguments_a_changed_state_or_a_state_equal_in_value_only_are_asked_anew():
    inner = Counter()
    episode = RecallingEpisode(inner)  # type: ignore[arg-type]
    episode.call("read", {"a": 1})
    episode.call("read", {"a": 2})  # other arguments
    episode.call("bump", {})
    episode.call("bump", {})  # it changed the state: never kept
    episode.call("read", {"a": 1})  # from another state
    assert inner.calls == ["read", "read", "bump", "bump", "read"]


def test_a_state_equal_in_value_but_not_in_type_is_another_state():
    inner = Counter(n=1)
    episode = RecallingEpisode(inner)  # type: ignore[arg-type]
    assert episode.call("read", {}).result["n"] == 1
    inner._state = {"n": True}  # the host's state now: equal to the last, not the same
    assert episode.call("read", {}).result["n"] is True
    inner._state = {"n": 1}
    assert episode.call("read", {}).result["n"] == 1  # the first state again: recalled
    assert inner.calls == ["read", "read"]
