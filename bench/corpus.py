"""Shared by the certification benchmarks: a default-run corpus built in this process.

Makes environments, admits them and makes scenarios the way ``envmill run`` does, without
certifying, so a benchmark can time certification (or audit it) on exactly the scenarios a run
would make.
"""

from __future__ import annotations

from dataclasses import dataclass

from envmill.schemas.scenario import ScenarioSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.procedural.backend import ProceduralBackend
from envmill.tasks.envs import AdmittedEnvironment, admit_environment
from envmill.tasks.sandbox import Sandbox


@dataclass
class CorpusItem:
    env: AdmittedEnvironment
    scenario: ScenarioSpec


def default_corpus(sandbox: Sandbox, envs: int, scenarios_per_env: int) -> list[CorpusItem]:
    settings = EnvmillSettings(envs=envs, scenarios_per_env=scenarios_per_env)
    backend, items = ProceduralBackend(), []
    for item in backend.plan_items(settings):
        draft = backend.make_environment(item, sandbox)
        env = admit_environment(draft.source, sandbox)
        made = backend.make_scenarios(draft, env, item, scenarios_per_env, sandbox)
        items += [CorpusItem(env, scenario) for scenario in made.scenarios]
    return items
