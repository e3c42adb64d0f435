"""One OpenEnv session over envmill's episode machinery.

A :class:`ScenarioPool` is what the server shares: the chosen scenarios, the sandbox, the
episode settings, the simulated user's factory and a cursor that hands out scenarios in turn.
Each session's :class:`ScenarioEnvironment` wraps its own ``ScenarioEnv`` (the Gymnasium
environment of ``envmill.rl``), so a served episode is the same episode as an in-process one:
the same sandbox host per episode, the same error observations, the same reward.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from envmill.schemas.rollout import EpisodeSpec, RolloutSettings
from envmill.tasks.rollout.gym import ScenarioEnv, UserFactory
from envmill.tasks.sandbox import Sandbox
from envmill.tasks.serving.openenv.models import (
    ScenarioAction,
    ScenarioObservation,
    ScenarioState,
    tool_results,
)


@dataclass
class ScenarioPool:
    """What every session of one server shares.

    Args:
        specs: the certified scenarios served (at least one).
        sandbox: where every episode's environment runs.
        settings: turns and calls per turn.
        user: makes the simulated user of a conversational scenario; None refuses them.
        policy: the name a finished episode's trajectory carries.
        max_open: the most environments open at once (0: no bound), whoever opens them: a
            WebSocket session, or one of OpenEnv's stateless ``POST /reset`` requests, which
            OpenEnv's own session limit does not count.
    """

    specs: Sequence[EpisodeSpec]
    sandbox: Sandbox
    settings: RolloutSettings = field(default_factory=RolloutSettings)
    user: UserFactory | None = None
    policy: str = "openenv-client"
    max_open: int = 0
    _open: int = field(default=0, init=False)
    _cursor: int = field(default=0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        if not self.specs:
            raise ValueError("no scenarios to serve")
        self.order = sorted(spec.scenario_id for spec in self.specs)

    def next_scenario(self) -> str:
        """The next scenario in id order, round the selection (shared by every session)."""
        with self._lock:
            chosen = self.order[self._cursor % len(self.order)]
            self._cursor += 1
        return chosen

    def open(self) -> ScenarioEnv:
        """A new environment; RuntimeError when ``max_open`` are open already."""
        with self._lock:
            if self.max_open and self._open >= self.max_open:
                raise RuntimeError(f"at most {self.max_open} environments at once; try later")
            self._open += 1
        try:
            return ScenarioEnv(
                self.specs, self.sandbox, self.settings, user=self.user, policy=self.policy
            )
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """One environment closed."""
        with self._lock:
            self._open -= 1


def _check_reset(scenario_id: object, sample: object) -> None:
    """ValueError for a ``reset`` whose options cannot name an episode (JSON lets a client
    send anything: a ``{}`` scenario id once silently chose the next scenario)."""
    if scenario_id is not None and not isinstance(scenario_id, str):
        raise ValueError(f"scenario_id must be a string, not {type(scenario_id).__name__}")
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise ValueError(f"sample must be a whole number from 0, not {sample!r}")


class ScenarioEnvironment(Environment[ScenarioAction, ScenarioObservation, ScenarioState]):
    """A session: ``reset`` opens an episode (closing the one before), ``step`` takes one
    assistant turn, ``close`` ends the episode and its sandbox host."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session has its own episode and host

    def __init__(self, pool: ScenarioPool) -> None:
        super().__init__()
        self.pool = pool
        # opened by the first reset: OpenEnv makes one of these to answer /state or /metadata
        # too, which must neither take a slot nor be refused when every slot is taken
        self.env: ScenarioEnv | None = None
        self._state = ScenarioState()  # replaced whole: OpenEnv reads it from another thread
        self.ended = False  # closed by the server (the session idled out): no more episodes

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        scenario_id: str | None = None,
        sample: int = 0,
        **kwargs: Any,
    ) -> ScenarioObservation:
        """Open an episode of ``scenario_id``; else one drawn with ``seed`` (as
        ``ScenarioEnv.reset(seed=...)``); else the pool's next scenario.

        Raises:
            KeyError: ``scenario_id`` is not served here.
            RuntimeError: the server ended this session (it stayed idle too long).
        """
        if self.ended:
            raise RuntimeError("this session was ended (idle too long); open a new one")
        _check_reset(scenario_id, sample)
        if self.env is None:
            self.env = self.pool.open()
        if scenario_id is None and seed is None:
            scenario_id = self.pool.next_scenario()
        options = {"sample": sample} | ({"scenario_id": scenario_id} if scenario_id else {})
        observation, info = self.env.reset(seed=seed, options=options)
        self._state = ScenarioState(
            episode_id=episode_id or uuid.uuid4().hex,
            scenario_id=info["scenario_id"],
            env_id=info["env_id"],
            mode=info["mode"],
            sample=info["sample"],
            messages=observation["messages"],
        )
        return self._observe(observation, 0.0, info["tools"], {})

    def step(
        self, action: ScenarioAction, timeout_s: float | None = None, **kwargs: Any
    ) -> ScenarioObservation:
        """Apply one assistant turn.

        Raises:
            RuntimeError: no episode is open (before ``reset``, or after it ended).
        """
        if self.env is None:
            raise RuntimeError("no episode is open: reset first")
        observation, reward, terminated, truncated, info = self.env.step(action.message())
        done = terminated or truncated
        episode = self.env.episode
        tools = episode.offered_tools if episode is not None else []
        self._state = self._state.model_copy(
            update={
                "step_count": self._state.step_count + 1,
                "messages": observation["messages"],
                "done": done,
                "termination": info.get("termination"),
                "reward": reward if done else None,
                "success": info.get("success"),
            }
        )
        return self._observe(observation, reward, tools, info, done)

    def _observe(
        self,
        observation: dict[str, Any],
        reward: float,
        tools: list[dict[str, Any]],
        info: dict[str, Any],
        done: bool = False,
    ) -> ScenarioObservation:
        new = observation["new_messages"]
        return ScenarioObservation(
            done=done,
            reward=reward,
            scenario_id=self._state.scenario_id or "",
            messages=observation["messages"],
            new_messages=new,
            tool_results=tool_results(new),
            tools=tools,
            termination=info.get("termination"),
            reason=info.get("reason", ""),
            check_results=info.get("check_results", []),
            success=info.get("success"),
        )

    @property
    def state(self) -> ScenarioState:
        return self._state

    def close(self) -> None:
        """End the session's episode, if any: its sandbox host goes with it."""
        if self.env is not None and not self.ended:
            self.pool.release()
            self.env.close()
        self.ended = True

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="envmill",
            description=f"{len(self.pool.order)} certified envmill scenarios: tool calls run "
            "in envmill's sandbox, the reward is the share of the scenario's checks that hold",
            version="1",
        )
