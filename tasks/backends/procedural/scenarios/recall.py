"""An episode that answers a call it has already run from the same state without running it again.

Sampling draws the same call from the same state many times over: a refused draw is drawn again,
a lookup is made again for the next attempt, a rolled-back step leaves the state as it was (in a
default run, a third of the calls of the scenario stage repeated one made before). A tool is a
method of the instance, and the instance is the state (the host reports ``vars(instance)``), so
a call that left the state as it was gives the same result again from the same state: that
answer is kept, and a repeat costs no round trip. A call that changed the state, or that the
host did not serve, is never kept, so the episode's state is always the host's.
"""

from __future__ import annotations

import copy
from typing import Any

from envmill.tasks.sandbox import ToolEpisode
from envmill.tasks.sandbox.outcomes import LoadOutcome, ReplayOutcome, ToolOutcome


class RecallingEpisode:
    """A ``ToolEpisode`` over ``inner`` that keeps the result of each call that left the state
    unchanged, by the state (its exact text: key order and types count) and the call."""

    def __init__(self, inner: ToolEpisode) -> None:
        self.inner = inner
        self._versions: dict[str, int] = {}  # each state's text, numbered as first seen
        self._keyed: tuple[dict[str, Any] | None, int] = (None, -1)  # the last state numbered
        self._results: dict[tuple[int, str, str], dict[str, Any]] = {}

    @property
    def load_outcome(self) -> LoadOutcome:
        return self.inner.load_outcome

    @property
    def loaded(self) -> bool:
        return self.inner.loaded

    def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        """The kept result of this call from this state, else the host's answer."""
        state = self.inner.state()
        key = (self._version(state), tool, repr(arguments))
        kept = self._results.get(key)
        if kept is not None:
            return ToolOutcome(result=copy.deepcopy(kept), state=state)
        outcome = self.inner.call(tool, arguments)
        if outcome.ok and outcome.state is not None and self._version(outcome.state) == key[0]:
            self._results[key] = copy.deepcopy(outcome.result)  # the caller may change its copy
        return outcome

    def load_state(self, state: dict[str, Any]) -> LoadOutcome:
        return self.inner.load_state(state)

    def replay(self, state: dict[str, Any], steps: Any) -> ReplayOutcome:
        return self.inner.replay(state, steps)

    def replays(
        self,
        starts: list[dict[str, Any]],
        plans: list[tuple[int, Any]],
        trace: bool = False,
        wall_seconds: float | None = None,
    ) -> list[ReplayOutcome] | None:
        return self.inner.replays(starts, plans, trace, wall_seconds)

    def state(self) -> dict[str, Any] | None:
        return self.inner.state()

    def _version(self, state: dict[str, Any] | None) -> int:
        """The number of ``state``'s exact text; the last state numbered is remembered by
        identity (a reply's state is a new object, never changed in place)."""
        if self._keyed[0] is not state:
            text = repr(state)
            self._keyed = (state, self._versions.setdefault(text, len(self._versions)))
        return self._keyed[1]
