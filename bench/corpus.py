"""Shared by the certification benchmarks: a default-run corpus built in this process.

Compiles, checks and generates scenarios the way ``envmill run`` does, without certifying, so a
benchmark can time certification (or audit it) on exactly the scenarios a run would make.
"""

from __future__ import annotations

from dataclasses import dataclass

from envmill.schemas.scenario import ScenarioSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.environment import AdmittedEnvironment, admit_environment
from envmill.tasks.pipeline import plan_batches
from envmill.tasks.procedural.catalog import load_domain
from envmill.tasks.procedural.compiler import compile_environment
from envmill.tasks.procedural.scenarios import generate_scenario_batch
from envmill.tasks.sandbox import Sandbox


@dataclass
class CorpusItem:
    env: AdmittedEnvironment
    scenario: ScenarioSpec


def default_corpus(sandbox: Sandbox, envs: int, scenarios_per_env: int) -> list[CorpusItem]:
    settings = EnvmillSettings(envs=envs, scenarios_per_env=scenarios_per_env)
    items = []
    for batch in plan_batches(settings):
        for spec in batch.items:
            compiled = compile_environment(load_domain(spec.domain), spec.seed)
            env = admit_environment(compiled.source, sandbox)
            made = generate_scenario_batch(
                compiled, env.env_id, scenarios_per_env, spec.seed, sandbox
            )
            items += [CorpusItem(env, scenario) for scenario in made.scenarios]
    return items
