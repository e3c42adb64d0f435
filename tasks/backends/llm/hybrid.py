"""Another backend's environments with ScenGenerator's scenarios (``--scenarios-from llm``).

The environments come from any backend that can brief a scenario writer on its drafts
(:class:`~envmill.tasks.backends.base.BriefingBackend`): the procedural backend's cost no LLM
call and come with what a model-written one lacks, a domain spec whose invariants every state
must keep and a state filler for the example the prompts show. The scenarios are the model's,
certified and repaired like those of an LLM environment, so the two backends' scenarios can be
compared on one set of environments. The registry puts the two together; neither backend
imports the other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Generic

from envmill.schemas.run import EnvItemSpec
from envmill.schemas.scengen import ScenGenSettings
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.base import BriefingBackend, DraftT, ScenarioDrafts
from envmill.tasks.backends.llm.backend import (
    SCENARIO_PROMPTS,
    stage_provenance,
    stages_fingerprint,
    written_scenarios,
)
from envmill.tasks.backends.llm.skelbuilder.asking import Asker
from envmill.tasks.envs import AdmittedEnvironment
from envmill.tasks.llm import LlmClient
from envmill.tasks.sandbox import Sandbox


class LlmScenarios(Generic[DraftT]):
    """``environments``' items and environments; scenarios from the model through ``client``.

    Args:
        environments: the backend that plans the items and makes (and briefs) the environments.
        client: the run's LLM client.
        scengen: bounds of the scenario stages.
        item_threads: environments one batch makes at once (they wait on the model).
    """

    def __init__(
        self,
        environments: BriefingBackend[DraftT],
        client: LlmClient,
        scengen: ScenGenSettings,
        item_threads: int,
    ) -> None:
        self.environments, self.client = environments, client
        self.scengen, self.item_threads = scengen, item_threads
        self.name = environments.name
        fingerprint = stages_fingerprint(
            client, SCENARIO_PROMPTS, scengen=scengen.model_dump(exclude={"scenario_threads"})
        )
        self.version = f"{environments.version}+scengen-{fingerprint}"

    def provenance(self) -> dict[str, Any]:
        return {"generator": self.version, **stage_provenance(self.client, SCENARIO_PROMPTS)}

    def plan_items(self, settings: EnvmillSettings) -> Iterable[EnvItemSpec]:
        return self.environments.plan_items(settings)

    def make_environment(self, item: EnvItemSpec, sandbox: Sandbox) -> DraftT:
        return self.environments.make_environment(item, sandbox)

    def make_scenarios(
        self,
        draft: DraftT,
        env: AdmittedEnvironment,
        item: EnvItemSpec,
        count: int,
        sandbox: Sandbox,
    ) -> ScenarioDrafts:
        brief = self.environments.brief(draft, item)
        asker = Asker(self.client, item=item.label)
        return written_scenarios(env, brief, count, asker, sandbox, self.scengen, item.seed)
