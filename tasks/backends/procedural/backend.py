"""The procedural backend (DESIGN §4): catalog domains compiled with a seed, scenarios sampled
from the compiled tool manifest. No LLM anywhere.

It can also brief another backend's scenario writer on its environments (``--scenarios-from
llm``): the prose, an example state from its state filler, and the invariants its domain spec
writes down, which a model-written environment lacks.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from envmill.schemas.backends import PROCEDURAL
from envmill.schemas.run import EnvItemSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.base import EnvironmentBrief, PlanError, ScenarioDrafts, item_seed
from envmill.tasks.backends.procedural.catalog import list_domains, load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment
from envmill.tasks.backends.procedural.scenarios.generate import generate_scenario_batch
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.backends.procedural.state.invariants import check_invariants
from envmill.tasks.envs import AdmittedEnvironment
from envmill.tasks.sandbox import Sandbox


class ProceduralBackend:
    """Items cycle through the chosen domains; each item's seed varies its environment."""

    name: str = PROCEDURAL
    version = "procedural-3"
    item_threads = 1  # compiling and sampling are CPU work: processes scale it, threads would not

    def provenance(self) -> dict[str, Any]:
        return {"generator": self.version, "models": {}, "prompts": {}}

    def plan_items(self, settings: EnvmillSettings) -> Iterator[EnvItemSpec]:
        known = list_domains()
        domains = settings.domains or known
        unknown = [d for d in domains if d not in known]
        if unknown:
            raise PlanError(f"unknown domain {unknown[0]!r}; known domains: {', '.join(known)}")
        return (  # lazily: a million items are planned as they are taken
            EnvItemSpec(
                index=i, subject=domains[i % len(domains)], seed=item_seed(settings.seed, i)
            )
            for i in range(settings.envs)
        )

    def make_environment(self, item: EnvItemSpec, sandbox: Sandbox) -> CompiledEnvironment:
        return compile_environment(load_domain(item.subject), item.seed)

    def make_scenarios(
        self,
        draft: CompiledEnvironment,
        env: AdmittedEnvironment,
        item: EnvItemSpec,
        count: int,
        sandbox: Sandbox,
    ) -> ScenarioDrafts:
        return generate_scenario_batch(draft, env.env_id, count, item.seed, sandbox)

    def brief(self, draft: CompiledEnvironment, item: EnvItemSpec) -> EnvironmentBrief:
        return EnvironmentBrief(
            topic=variant_topic(draft),
            introduction=draft.introduction,
            business_rules=draft.business_rules,
            example_state=build_initial_state(draft, item.seed),
            invariants=functools.partial(check_invariants, draft.spec),
        )


def variant_topic(draft: CompiledEnvironment) -> str:
    """The topic a scenario writer is told: the domain's, with the variant (a seed changes which
    entities, tools and rules the environment has)."""
    return f"{draft.topic} ({draft.domain} variant {draft.seed})"
