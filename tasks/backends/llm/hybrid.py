"""The procedural backend's environments with ScenGenerator's scenarios (``--scenarios-from llm``).

The environments cost no LLM call and come with what a model-written one lacks: a domain spec
whose invariants every state must keep, and a state filler for the example the prompts show.
The scenarios are the model's, certified and repaired like those of an LLM environment, so the
two backends' scenarios can be compared on one set of environments.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Any

from envmill.schemas.llm import LlmCallRecord
from envmill.schemas.run import EnvItemSpec
from envmill.schemas.scengen import ScenGenSettings
from envmill.tasks.backends.base import ScenarioDrafts
from envmill.tasks.backends.llm.backend import (
    SCENARIO_PROMPTS,
    stage_provenance,
    stages_fingerprint,
)
from envmill.tasks.backends.llm.scengen.build import EnvironmentBrief, make_llm_scenarios
from envmill.tasks.backends.llm.skelbuilder.asking import Asker
from envmill.tasks.backends.procedural.backend import ProceduralBackend
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.backends.procedural.state.invariants import check_invariants
from envmill.tasks.envs import AdmittedEnvironment
from envmill.tasks.llm import LlmClient
from envmill.tasks.sandbox import Sandbox


class ProceduralWithLlmScenarios(ProceduralBackend):
    """Compiled catalog environments; scenarios from the model through ``client``.

    Args:
        client: the run's LLM client (its collector is what :meth:`drain_llm_calls` drains).
        scengen: bounds of the scenario stages.
        item_threads: environments one batch makes at once (they wait on the model).
    """

    def __init__(self, client: LlmClient, scengen: ScenGenSettings, item_threads: int) -> None:
        self.client, self.scengen, self.item_threads = client, scengen, item_threads
        fingerprint = stages_fingerprint(
            client, SCENARIO_PROMPTS, scengen=scengen.model_dump(exclude={"scenario_threads"})
        )
        self.version = f"{ProceduralBackend.version}+scengen-{fingerprint}"

    def provenance(self) -> dict[str, Any]:
        return {"generator": self.version, **stage_provenance(self.client, SCENARIO_PROMPTS)}

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.client, self.scengen, self.item_threads))

    def make_scenarios(
        self,
        draft: CompiledEnvironment,
        env: AdmittedEnvironment,
        item: EnvItemSpec,
        count: int,
        sandbox: Sandbox,
    ) -> ScenarioDrafts:
        brief = EnvironmentBrief(
            topic=variant_topic(draft),
            introduction=draft.introduction,
            business_rules=draft.business_rules,
            example_state=build_initial_state(draft, item.seed),
            invariants=functools.partial(check_invariants, draft.spec),
        )
        return make_llm_scenarios(
            env,
            brief,
            count,
            asker=Asker(self.client, item=item.label),
            sandbox=sandbox,
            settings=self.scengen,
            seed=item.seed,
        )

    def drain_llm_calls(self, items: Collection[str]) -> list[LlmCallRecord]:
        return self.client.collector.drain(items)


def variant_topic(draft: CompiledEnvironment) -> str:
    """The topic the prompts name: the domain's, with the variant (a seed changes which
    entities, tools and rules the environment has)."""
    return f"{draft.topic} ({draft.domain} variant {draft.seed})"
