"""One episode: an environment instance alive in one host across many tool calls.

The episode remembers the last state the host reported, so when a call kills its host (a timeout,
a memory bomb) it reports the failure as a value and the next call runs in a fresh host loaded
with that last good state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envmill.tasks.sandbox.client import (
    EPISODE_SPENT,
    CallOutcome,
    HostHandle,
    episode_room,
)

if TYPE_CHECKING:
    from envmill.tasks.sandbox.client import Sandbox


class Episode:
    def __init__(
        self,
        sandbox: Sandbox,
        source: str,
        class_name: str,
        state: dict[str, Any] | None,
        image: int = 0,
    ) -> None:
        self.sandbox, self.source, self.class_name = sandbox, source, class_name
        self.image = image
        self.received: list[tuple[int, int]] = []  # (bytes, values) across all its hosts
        self._host: HostHandle | None = None
        self._state = state
        self.load_outcome = self._start()

    def _start(self) -> CallOutcome:
        self._host = self.sandbox.spawn_host(self.source, self.image)
        self._host.received = self.received  # one budget for the episode, not per host
        outcome = self._host.request(
            {
                "op": "load",
                "source": self.source,
                "class_name": self.class_name,
                "state": self._state,
            }
        )
        if outcome.ok:
            self._state = outcome.state
        return outcome

    @property
    def loaded(self) -> bool:
        return self.load_outcome.ok

    def call(self, tool: str, arguments: dict[str, Any]) -> CallOutcome:
        """Call one tool; a failed host gives ``{"success": False, "error": ...}`` as the result."""
        if min(episode_room(self.sandbox.limits, self.received)) <= 0:
            return _as_tool_error(CallOutcome(error=EPISODE_SPENT, error_class="too_large"))
        if self._host is None or not self._host.alive:
            self.load_outcome = self._start()
            if not self.load_outcome.ok:
                return _as_tool_error(self.load_outcome)
        outcome = self._host.request({"op": "call", "tool": tool, "arguments": arguments})
        if not outcome.ok:
            return _as_tool_error(outcome)
        self._state = outcome.state
        return CallOutcome(result=outcome.result["result"], state=outcome.state)

    def load_state(self, state: dict[str, Any]) -> CallOutcome:
        """Start over from ``state`` in the same host (a fresh instance, no new process)."""
        self._state = state
        if self._host is None or not self._host.alive:
            self.load_outcome = self._start()
            return self.load_outcome
        outcome = self._host.request({"op": "set_state", "state": state})
        if outcome.ok:
            self._state = outcome.state
        return outcome

    def replay(
        self, state: dict[str, Any], steps: list[tuple[str, dict[str, Any]]]
    ) -> tuple[list[bool], dict[str, Any] | None]:
        """Run ``steps`` from ``state`` in one round trip: whether each call succeeded, and the
        end state (None, with no step succeeded, when the host failed)."""
        if self._host is None or not self._host.alive:
            self._state = state
            self.load_outcome = self._start()
            if not self.load_outcome.ok:
                return [False] * len(steps), None
        request = {
            "op": "replay",
            "state": state,
            "steps": [{"tool": tool, "arguments": arguments} for tool, arguments in steps],
        }
        outcome = self._host.request(request)
        if not outcome.ok or len(outcome.result["succeeded"]) != len(steps):
            return [False] * len(steps), None
        self._state = outcome.state
        return outcome.result["succeeded"], outcome.state

    def state(self) -> dict[str, Any] | None:
        """The last state the host reported (no round trip: every call returns it)."""
        return self._state

    def close(self) -> None:
        if self._host is not None:
            self._host.close()

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _as_tool_error(outcome: CallOutcome) -> CallOutcome:
    result = {"success": False, "error": f"{outcome.error_class}: {outcome.error}"}
    return CallOutcome(
        result=result, state=None, error=outcome.error, error_class=outcome.error_class
    )
