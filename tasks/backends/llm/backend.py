"""The LLM backend (DESIGN §4): one item per topic, its environment made by SkelBuilder's stages
and its scenarios by ScenGenerator's, through the LLM layer.

What it makes carries the records of the work it took: a draft its calls and probes, the
scenarios their calls, and a topic that failed both, in a :class:`RecordedFailure`. The backend
keeps nothing between items.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from envmill.schemas.backends import LLM
from envmill.schemas.ids import content_id
from envmill.schemas.run import EnvItemSpec
from envmill.schemas.scengen import ScenGenSettings
from envmill.schemas.settings import EnvmillSettings
from envmill.schemas.skeleton import SkeletonDraft, SkeletonSettings
from envmill.schemas.topics import TopicSource
from envmill.tasks.backends.base import (
    BatchAborted,
    EnvironmentBrief,
    PlanError,
    RecordedFailure,
    ScenarioDrafts,
    item_seed,
)
from envmill.tasks.backends.llm.scengen.build import make_llm_scenarios
from envmill.tasks.backends.llm.skelbuilder.asking import Asker
from envmill.tasks.backends.llm.skelbuilder.build import build_environment
from envmill.tasks.backends.llm.stages import SCENARIO_STAGES, SKELETON_STAGES
from envmill.tasks.envs import AdmittedEnvironment
from envmill.tasks.llm import LlmClient
from envmill.tasks.llm.prompts import PROMPTS_DIR
from envmill.tasks.sandbox import Sandbox

VERSION = 2  # bump when the stages change what they make (2: chained probes, success-path gate,
# methods several per call, scenario kinds)
PROMPTS = (*SKELETON_STAGES, *SCENARIO_STAGES)
SCENARIO_PROMPTS = SCENARIO_STAGES
# What a stage's model changes; an unset max_completion_tokens is left out of the fingerprint, so
# the versions of runs made before it existed stay the same.
_OUTPUT_MODEL = {"model", "temperature", "max_tokens", "max_completion_tokens"}
_OUTPUT_SETTINGS = {
    "repair_rounds",
    "min_tools",
    "pass_threshold",
    "probe_rounds",
    "tools_per_probe_call",
    "probes_per_judge_call",
    "methods_per_call",
    "preview_records",
    "untested_success_share",
    "warnings_fail",
    "attempt",  # a retry is new work, whatever finished before
}


def prompt_hashes() -> dict[str, str]:
    """The hash of every prompt template of the LLM path (the same hash ``render`` reports)."""
    return {
        name: hashlib.sha256((PROMPTS_DIR / f"{name}.md").read_bytes()).hexdigest()[:16]
        for name in PROMPTS
    }


def stages_fingerprint(client: LlmClient, stages: Iterable[str], **parts: Any) -> str:
    """The prompts and models of ``stages``, with the settings ``parts`` that shape their output:
    a backend's version, so a change to any of them reruns its batches."""
    hashes, stages = prompt_hashes(), list(stages)
    models = {
        name: client.settings.for_stage(name).model_dump(include=_OUTPUT_MODEL, exclude_none=True)
        for name in stages
    }
    return content_id(
        {"prompts": {name: hashes[name] for name in stages}, "models": models, **parts}
    )


def stage_provenance(client: LlmClient, stages: Iterable[str]) -> dict[str, dict[str, str]]:
    """The model and the prompt hash of each of ``stages``, as artifacts record them."""
    hashes, stages = prompt_hashes(), list(stages)
    return {
        "models": {name: client.settings.for_stage(name).model for name in stages},
        "prompts": {name: hashes[name] for name in stages},
    }


class LlmBackend:
    """SkelBuilder behind the backend seam.

    Args:
        client: the run's LLM client.
        topics: the environment topics; one item each, in order, repeats dropped.
        settings: bounds and thresholds of the stages.
        sources: what topic mining knew of a topic (introduction, source request), shown to the
            planner.
        scengen: bounds of the scenario stages.
    """

    name: str = LLM

    def __init__(
        self,
        client: LlmClient,
        topics: list[str],
        settings: SkeletonSettings | None = None,
        sources: dict[str, TopicSource] | None = None,
        scengen: ScenGenSettings | None = None,
    ) -> None:
        self.client = client
        self.topics = list(dict.fromkeys(topic.strip() for topic in topics if topic.strip()))
        self.settings = settings or SkeletonSettings()
        self.sources = sources or {}
        self.scengen = scengen or ScenGenSettings()
        self.item_threads = self.settings.item_threads
        self.version = f"llm-{VERSION}-{self._fingerprint()}"

    def _fingerprint(self) -> str:
        return stages_fingerprint(
            self.client,
            PROMPTS,
            settings=self.settings.model_dump(include=_OUTPUT_SETTINGS),
            scengen=self.scengen.model_dump(exclude={"scenario_threads"}),
        )

    def provenance(self) -> dict[str, Any]:
        return {"generator": self.version, **stage_provenance(self.client, PROMPTS)}

    def plan_items(self, settings: EnvmillSettings) -> list[EnvItemSpec]:
        if not self.topics:
            raise PlanError("the llm backend needs topics: give it a topic list (one per line)")
        return [
            EnvItemSpec(index=i, subject=topic, seed=item_seed(settings.seed, topic))
            for i, topic in enumerate(self.topics)
        ]

    def make_environment(self, item: EnvItemSpec, sandbox: Sandbox) -> SkeletonDraft:
        """The topic's checked environment, with its calls and probes; a topic that fails is a
        RecordedFailure whose cause (SkeletonFailed) names the stage and reason."""
        asker = Asker(self.client, item.label, attempt=self.settings.attempt)
        try:
            outcome = build_environment(
                item.subject,
                self.client,
                sandbox,
                self.settings,
                item=item.label,
                source=self.sources.get(item.subject),
                asker=asker,
            )
        except BatchAborted:
            raise
        except Exception as exc:  # the sandbox failing, say: the calls made are paid for
            raise RecordedFailure(exc, asker.records) from exc
        if outcome.failure is not None:
            raise RecordedFailure(outcome.failure, asker.records, outcome.probes)
        assert outcome.draft is not None
        return outcome.draft.model_copy(
            update={"call_records": asker.records, "probes": outcome.probes}
        )

    def make_scenarios(
        self,
        draft: SkeletonDraft,
        env: AdmittedEnvironment,
        item: EnvItemSpec,
        count: int,
        sandbox: Sandbox,
    ) -> ScenarioDrafts:
        """ScenGenerator's scenarios, certified (and repaired) already."""
        brief = EnvironmentBrief(
            draft.topic, draft.introduction, draft.business_rules, draft.initial_state
        )
        asker = Asker(self.client, item=item.label, attempt=self.settings.attempt)
        return written_scenarios(env, brief, count, asker, sandbox, self.scengen, item.seed)


def written_scenarios(
    env: AdmittedEnvironment,
    brief: EnvironmentBrief,
    count: int,
    asker: Asker,
    sandbox: Sandbox,
    settings: ScenGenSettings,
    seed: int,
) -> ScenarioDrafts:
    """ScenGenerator's scenarios for ``env`` with the records of the calls they took through
    ``asker`` (kept in a RecordedFailure when something other than a scenario fails)."""
    try:
        made = make_llm_scenarios(
            env, brief, count, asker=asker, sandbox=sandbox, settings=settings, seed=seed
        )
    except BatchAborted:
        raise
    except Exception as exc:
        raise RecordedFailure(exc, asker.records) from exc
    made.call_records = asker.records
    return made
