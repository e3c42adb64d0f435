"""envmill's RL interface: certified scenarios of a data folder as a Gymnasium environment.

    from envmill.rl import open_env

    env = open_env("envmill-data", scenarios="mode = 'non_conversational'")
    observation, info = env.reset(seed=0)
    while True:
        reply = my_model(observation["messages"], tools=info["tools"])   # an assistant message
        observation, reward, terminated, truncated, step_info = env.step(reply)
        if terminated or truncated:
            break

See ``envmill.tasks.rollout.gym.ScenarioEnv`` for the observation, action and reward.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from envmill.schemas.benchmarks import SYNTHETIC_SOURCE
from envmill.schemas.rollout import EpisodeSpec, RolloutSettings
from envmill.schemas.settings import EnvmillSettings, load_settings
from envmill.tasks.rollout.gym import ScenarioEnv, UserFactory
from envmill.tasks.rollout.plan import episode_specs
from envmill.tasks.sandbox import Sandbox
from envmill.tasks.sandbox.shared import process_sandbox
from envmill.warehouse.episodes import certified_scenario_ids, scenario_rows
from envmill.warehouse.store import resolve_data_dir

__all__ = ["ScenarioEnv", "load_episode_specs", "llm_user", "open_env"]


def open_env(
    data_dir: str | os.PathLike[str] | None = None,
    scenarios: str = "",
    *,
    settings: EnvmillSettings | None = None,
    user: UserFactory | None = None,
    sandbox: Sandbox | None = None,
    policy: str = "rl-policy",
    include_sources: Sequence[str] = (),
) -> ScenarioEnv:
    """A :class:`ScenarioEnv` over the certified scenarios of ``data_dir`` that meet
    ``scenarios`` (a SQL condition, as ``envmill rollout --scenarios``). A benchmark's
    scenarios (``source`` other than envmill's, e.g. an imported BFCL test set) are left out
    unless their source is in ``include_sources``, as exports leave them out: a policy trained
    on a test set makes every later evaluation on it meaningless.

    Conversational scenarios need a simulated user: ``user`` makes one per (scenario, sample);
    by default the ``rollout_user`` stage's model through envmill's LLM layer (cached), when an
    endpoint is configured.
    """
    settings = settings or load_settings()
    root = resolve_data_dir(str(data_dir) if data_dir else None)
    specs = load_episode_specs(root, scenarios, settings.rollout, include_sources)
    if user is None and any(s.scenario.mode == "conversational" for s in specs):
        user = llm_user(settings, root)
    box = sandbox or process_sandbox(settings.sandbox)
    return ScenarioEnv(specs, box, settings.rollout, user=user, policy=policy)


def load_episode_specs(
    root: Path,
    scenarios: str = "",
    settings: RolloutSettings | None = None,
    include_sources: Sequence[str] = (),
) -> list[EpisodeSpec]:
    """The certified scenarios of ``root`` that meet ``scenarios``, ready to open; those of
    another source than envmill's only when it is in ``include_sources``."""
    rollout = (settings or RolloutSettings()).model_copy(update={"samples": 1})
    rows = scenario_rows(root, certified_scenario_ids(root, scenarios))
    sources = {SYNTHETIC_SOURCE, *include_sources}
    specs = [s for s in episode_specs(rows, {}, rollout) if s.scenario.source in sources]
    if not specs:
        raise ValueError(f"no certified scenarios in {root} match {scenarios!r}")
    return specs


def llm_user(settings: EnvmillSettings, root: Path) -> UserFactory:
    """Simulated users played by the ``rollout_user`` stage's model, cached in ``root``."""
    from envmill.tasks.backends import run_llm_client
    from envmill.tasks.rollout.user import LlmUser

    client = run_llm_client(settings, "", root)

    def make(spec: EpisodeSpec, sample: int) -> LlmUser:
        return LlmUser(client, spec.scenario, item=spec.key, sample=sample)

    return make
