"""One episode: an environment instance alive in one host across many tool calls.

``ToolEpisode`` is what every caller needs from an episode (certification, the procedural chains,
the command line); ``SandboxEpisode`` is the one that runs in a sandbox host, and tests may pass an
in-process fake. The sandbox episode remembers the last state the host reported, so when a call
kills its host (a timeout, a memory bomb) it reports the failure as a value and the next call runs
in a fresh host loaded with that last good state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from envmill.tasks.sandbox.client import EPISODE_SPENT, HostHandle, episode_room
from envmill.tasks.sandbox.outcomes import LoadOutcome, ReplayOutcome, ToolOutcome

if TYPE_CHECKING:
    from envmill.tasks.sandbox.client import Sandbox

Steps = list[tuple[str, dict[str, Any]]]  # (tool, arguments) per call
KEPT_EPISODES = 32  # episodes one kept host serves (its own CPU counts against cpu_seconds)


class ToolEpisode(Protocol):
    """An environment instance across tool calls; every method answers with a value, a failed
    host included (``ok`` False on the outcome), and never raises for the program's sake."""

    load_outcome: LoadOutcome  # the latest (re)start of the instance

    @property
    def loaded(self) -> bool: ...

    def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutcome: ...

    def load_state(self, state: dict[str, Any]) -> LoadOutcome: ...

    def replay(self, state: dict[str, Any], steps: Steps) -> ReplayOutcome: ...

    def replays(
        self,
        starts: list[dict[str, Any]],
        plans: list[tuple[int, Steps]],
        trace: bool = False,
        wall_seconds: float | None = None,
    ) -> list[ReplayOutcome] | None: ...

    def state(self) -> dict[str, Any] | None: ...


def known_state(episode: ToolEpisode) -> dict[str, Any]:
    """The state of an episode that loaded (a sandbox episode keeps its last good one); a caller
    that samples or replays from it may rely on it, and a missing one is a bug, said in a line."""
    state = episode.state()
    if state is None:
        raise RuntimeError("the episode has no state: its environment never loaded")
    return state


class SandboxEpisode:
    """A ``ToolEpisode`` served by sandbox hosts, one at a time, on one reply budget."""

    def __init__(
        self,
        sandbox: Sandbox,
        source: str,
        class_name: str,
        state: dict[str, Any] | None,
        image: int = 0,
        reuse: bool = False,
    ) -> None:
        self.sandbox, self.source, self.class_name = sandbox, source, class_name
        self.image, self.reuse = image, reuse
        self.received: list[tuple[int, int]] = []  # (bytes, values) across all its hosts
        self._host: HostHandle | None = None
        self._state = state
        self.load_outcome = self._resume() or self._start()

    @property
    def _key(self) -> tuple[str, str, int]:
        return (self.source, self.class_name, self.image)

    def _resume(self) -> LoadOutcome | None:
        """With ``reuse``, a fresh instance in a kept host of this program (a state it refuses
        is refused as a new host's load would); None if none is kept, or the one kept died."""
        host = self.sandbox.take_idle(self._key) if self.reuse else None
        if host is None:
            return None
        self._host, host.received = host, self.received
        reply = host.request({"op": "set_state", "state": self._state or {}})
        if not host.alive:  # it died on the state: a new host tries it afresh
            return None
        if reply.ok:
            self._state = reply.state
        return LoadOutcome(state=reply.state, error=reply.error, error_class=reply.error_class)

    def _start(self) -> LoadOutcome:
        self._host = self.sandbox.spawn_host(self.source, self.image)
        self._host.received = self.received  # one budget for the episode, not per host
        reply = self._host.request(
            {
                "op": "load",
                "source": self.source,
                "class_name": self.class_name,
                "state": self._state,
            }
        )
        if reply.ok:
            self._state = reply.state
        return LoadOutcome(state=reply.state, error=reply.error, error_class=reply.error_class)

    @property
    def loaded(self) -> bool:
        return self.load_outcome.ok

    def _live_host(self) -> HostHandle | None:
        """The host, started afresh (from the last good state) when the last one died; None
        when that start did not load (``load_outcome`` says why)."""
        if self._host is None or not self._host.alive:
            self.load_outcome = self._start()
            if not self.load_outcome.ok:
                return None
        return self._host

    def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Call one tool; a failed host gives ``{"success": False, "error": ...}`` as the result."""
        if min(episode_room(self.sandbox.limits, self.received)) <= 0:
            return ToolOutcome.host_failed(EPISODE_SPENT, "too_large")
        host = self._live_host()
        if host is None:
            return ToolOutcome.host_failed(self.load_outcome.error, self.load_outcome.error_class)
        reply = host.request({"op": "call", "tool": tool, "arguments": arguments})
        if not reply.ok:
            return ToolOutcome.host_failed(reply.error, reply.error_class)
        self._state = reply.state
        return ToolOutcome(result=reply.payload["result"], state=reply.state)

    def load_state(self, state: dict[str, Any]) -> LoadOutcome:
        """Start over from ``state`` in the same host (a fresh instance, no new process)."""
        self._state = state
        if self._host is None or not self._host.alive:
            self.load_outcome = self._start()
            return self.load_outcome
        reply = self._host.request({"op": "set_state", "state": state})
        if reply.ok:
            self._state = reply.state
        return LoadOutcome(state=reply.state, error=reply.error, error_class=reply.error_class)

    def replay(self, state: dict[str, Any], steps: Steps) -> ReplayOutcome:
        """Run ``steps`` from ``state`` in one round trip (certification replays dozens of
        variants of a solution; one round trip each keeps that cheap)."""
        if self._host is None or not self._host.alive:
            self._state = state  # the fresh host starts from the replay's state
        host = self._live_host()
        if host is None:
            return _replay_failed(steps, self.load_outcome.error, self.load_outcome.error_class)
        request = {
            "op": "replay",
            "state": state,
            "steps": [{"tool": tool, "arguments": arguments} for tool, arguments in steps],
        }
        reply = host.request(request)
        if not reply.ok:
            return _replay_failed(steps, reply.error, reply.error_class)
        if len(reply.payload["succeeded"]) != len(steps):
            return _replay_failed(
                steps, "malformed reply: wrong number of step outcomes", "protocol"
            )
        self._state = reply.state
        return ReplayOutcome(succeeded=reply.payload["succeeded"], state=reply.state)

    def replays(
        self,
        starts: list[dict[str, Any]],
        plans: list[tuple[int, Steps]],
        trace: bool = False,
        wall_seconds: float | None = None,
    ) -> list[ReplayOutcome] | None:
        """Every plan ``(start, steps)`` run from ``starts[start]`` in one round trip (with
        ``trace``, each step's result and the state after it too) within one request's wall
        time (or ``wall_seconds``); None when the host failed on them (it timed out or died:
        which plan did it is for a caller to find out one by one). The episode's state is
        then the last plan's end state."""
        if self._host is None or not self._host.alive:
            self._state = starts[plans[0][0]] if plans else self._state
        host = self._live_host()
        if host is None or not plans:
            return None if host is None else []
        request = {
            "op": "replays",
            "starts": starts,
            "plans": [
                {"start": start, "steps": [{"tool": t, "arguments": a} for t, a in steps]}
                for start, steps in plans
            ],
            "trace": trace,
        }
        reply = host.request(request, wall_seconds=wall_seconds)
        runs = reply.payload.get("runs") if reply.ok else None
        if runs is None or [len(r["succeeded"]) for r in runs] != [len(s) for _, s in plans]:
            return None
        self._state = runs[-1]["state"]
        return [
            ReplayOutcome(
                succeeded=run["succeeded"],
                state=run["state"],
                results=run.get("results"),
                states=run.get("states"),
            )
            for run in runs
        ]

    def state(self) -> dict[str, Any] | None:
        """The last state the host reported (no round trip: every call returns it)."""
        return self._state

    def close(self) -> None:
        if self._host is not None and self.reuse and self.loaded:
            self.sandbox.keep_idle(self._key, self._host, KEPT_EPISODES)
        elif self._host is not None:
            self._host.close()

    def __enter__(self) -> SandboxEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _replay_failed(steps: Steps, error: str | None, error_class: str | None) -> ReplayOutcome:
    return ReplayOutcome(succeeded=[False] * len(steps), error=error, error_class=error_class)
