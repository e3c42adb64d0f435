"""Certified scenarios as a Gymnasium environment, for a trainer's rollout worker.

An observation is the conversation so far (``{"messages": [...], "new_messages": [...]}``,
Chat Completions messages; the tools are in ``info["tools"]`` at reset). An action is the
agent's next assistant message: text, tool calls or both, as a dict, bare text or an
``openai`` message object. The reward is 0 until the episode ends, then the scenario's checks
score the state reached (the one reward function certification uses). The sandbox host and the
simulated user live behind ``step``; the episode is ``terminated`` at its natural end and
``truncated`` at ``max_steps``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium

from envmill.schemas.rollout import EpisodeSpec, RolloutSettings
from envmill.schemas.trajectory import TrajectoryRecord
from envmill.tasks.rollout.episode import Episode, StepResult
from envmill.tasks.rollout.user import SimulatedUser
from envmill.tasks.sandbox import Sandbox

UserFactory = Callable[[EpisodeSpec, int], SimulatedUser]  # (scenario, sample) -> user
ROLES = frozenset({"system", "user", "assistant", "tool"})


class ConversationSpace(gymnasium.Space):
    """Observations: ``{"messages": [...], "new_messages": [...]}`` of Chat Completions
    messages. Not sampled: an environment produces them."""

    def contains(self, x: Any) -> bool:
        return (
            isinstance(x, dict)
            and set(x) == {"messages", "new_messages"}
            and all(_is_messages(x[key]) for key in x)
        )

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        return {"messages": [], "new_messages": []}


class AssistantMessageSpace(gymnasium.Space):
    """Actions: an assistant message (a dict with ``content`` and/or ``tool_calls``) or bare
    text. ``sample`` answers in text, which ends a non-conversational episode."""

    REPLIES = ("I cannot help with that.", "Done.", "Could you tell me more?")

    def contains(self, x: Any) -> bool:
        if isinstance(x, str):
            return True
        return isinstance(x, dict) and x.get("role", "assistant") == "assistant"

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        reply = self.REPLIES[int(self.np_random.integers(len(self.REPLIES)))]
        return {"role": "assistant", "content": reply}


def _is_messages(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(m, dict) and m.get("role") in ROLES for m in value
    )


class ScenarioEnv(gymnasium.Env):
    """Episodes over a pool of certified scenarios; ``reset`` draws one (seeded), or takes
    ``options={"scenario_id": ..., "sample": ...}``.

    Args:
        specs: the scenarios (``envmill.rl.open_env`` reads them from a data folder).
        sandbox: where the environments run.
        settings: turns and calls per turn (``RolloutSettings``).
        user: makes the simulated user of a conversational scenario; None refuses them.
        policy: the name a finished episode's trajectory carries.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        specs: Sequence[EpisodeSpec],
        sandbox: Sandbox,
        settings: RolloutSettings | None = None,
        *,
        user: UserFactory | None = None,
        policy: str = "rl-policy",
    ) -> None:
        if not specs:
            raise ValueError("no scenarios to open")
        self.specs = {spec.scenario_id: spec for spec in specs}
        self.order = sorted(self.specs)
        self.sandbox, self.settings = sandbox, settings or RolloutSettings()
        self.user, self.policy = user, policy
        self.observation_space = ConversationSpace()
        self.action_space = AssistantMessageSpace()
        self.episode: Episode | None = None
        self.trajectory: TrajectoryRecord | None = None  # of the episode that ended last

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self.close()
        self.trajectory = None
        options = options or {}
        spec = self._choose(options.get("scenario_id"))  # raises before anything opens
        sample = int(options.get("sample", 0))
        spec = spec.model_copy(update={"sample": sample})
        user = (
            self.user(spec, sample)
            if self.user and spec.scenario.mode == "conversational"
            else None
        )
        self.episode = Episode(spec, self.sandbox, self.settings, policy=self.policy, user=user)
        messages = self.episode.start()
        info = {
            "scenario_id": spec.scenario_id,
            "env_id": spec.scenario.env_id,
            "mode": spec.scenario.mode,
            "sample": sample,
            "tools": self.episode.offered_tools,  # without the scenario's withheld tools
        }
        return {"messages": messages, "new_messages": messages}, info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self.episode is None or self.trajectory is not None:
            raise RuntimeError("no episode is open; call reset()")
        if self.episode.done:  # it ended as it opened (the user stopped, the env failed)
            result = StepResult([], terminated=True)
        else:
            result = self.episode.step(action)
        observation = {"messages": list(self.episode.messages), "new_messages": result.messages}
        if not self.episode.done:
            return observation, 0.0, False, False, {}
        trajectory = self.trajectory = self.episode.finish()
        info = {
            "termination": trajectory.termination,
            "reason": trajectory.details.get("reason", ""),
            "check_results": trajectory.check_results,
            "success": trajectory.success,
        }  # deterministic for a seed and actions; the trajectory (timings too) is env.trajectory
        return observation, trajectory.reward, result.terminated, result.truncated, info

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()
            self.episode = None

    def _choose(self, scenario_id: str | None) -> EpisodeSpec:
        if scenario_id is None:
            return self.specs[self.order[int(self.np_random.integers(len(self.order)))]]
        if scenario_id not in self.specs:
            raise KeyError(f"scenario {scenario_id} is not among this environment's scenarios")
        return self.specs[scenario_id]
