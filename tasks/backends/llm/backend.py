"""The LLM backend (DESIGN §4): one item per topic, its environment made by SkelBuilder's stages
and its scenarios by ScenGenerator's, through the LLM layer.

The backend keeps what the pipeline's rows do not carry yet, for the caller to write: the probe
records (:meth:`LlmBackend.drain_probes`) and each topic's outcome
(:meth:`LlmBackend.drain_outcomes`).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Collection, Iterable
from typing import Any

from envmill.schemas.ids import content_id
from envmill.schemas.llm import LlmCallRecord
from envmill.schemas.run import EnvItemSpec
from envmill.schemas.scengen import ScenGenSettings
from envmill.schemas.settings import EnvmillSettings
from envmill.schemas.skeleton import ProbeRecord, SkeletonDraft, SkeletonSettings
from envmill.tasks.backends.base import PlanError, ScenarioDrafts, item_seed
from envmill.tasks.backends.llm.scengen.build import EnvironmentBrief, make_llm_scenarios
from envmill.tasks.backends.llm.skelbuilder.asking import Asker
from envmill.tasks.backends.llm.skelbuilder.build import TopicOutcome, build_environment
from envmill.tasks.backends.llm.stages import SCENARIO_STAGES, SKELETON_STAGES
from envmill.tasks.envs import AdmittedEnvironment
from envmill.tasks.llm import LlmClient
from envmill.tasks.llm.prompts import PROMPTS_DIR
from envmill.tasks.sandbox import Sandbox

VERSION = 1  # bump when the stages change what they make
PROMPTS = (*SKELETON_STAGES, *SCENARIO_STAGES)
SCENARIO_PROMPTS = SCENARIO_STAGES
_OUTPUT_MODEL = {"model", "temperature", "max_tokens"}  # what a stage's model changes
_OUTPUT_SETTINGS = {
    "repair_rounds",
    "min_tools",
    "pass_threshold",
    "probe_rounds",
    "tools_per_probe_call",
    "probes_per_judge_call",
    "preview_records",
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
        name: client.settings.for_stage(name).model_dump(include=_OUTPUT_MODEL) for name in stages
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
        client: the run's LLM client (its collector is what :meth:`drain_llm_calls` drains).
        topics: the environment topics; one item each, in order, repeats dropped.
        settings: bounds and thresholds of the stages.
        introductions: an introduction per topic (from topic mining), shown to the planner.
        scengen: bounds of the scenario stages.
    """

    name = "llm"

    def __init__(
        self,
        client: LlmClient,
        topics: list[str],
        settings: SkeletonSettings | None = None,
        introductions: dict[str, str] | None = None,
        scengen: ScenGenSettings | None = None,
    ) -> None:
        self.client = client
        self.topics = list(dict.fromkeys(topic.strip() for topic in topics if topic.strip()))
        self.settings = settings or SkeletonSettings()
        self.introductions = introductions or {}
        self.scengen = scengen or ScenGenSettings()
        self.item_threads = self.settings.item_threads
        self.version = f"llm-{VERSION}-{self._fingerprint()}"
        self._lock = threading.Lock()
        self._probes: list[ProbeRecord] = []
        self._outcomes: list[TopicOutcome] = []

    def __getstate__(self) -> dict[str, Any]:
        """What a Dask worker gets: the client, topics and settings, not what was collected."""
        return {
            "client": self.client,
            "topics": self.topics,
            "settings": self.settings,
            "introductions": self.introductions,
            "scengen": self.scengen,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

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
        """The topic's checked environment; raises SkeletonFailed naming the stage and reason."""
        outcome = build_environment(
            item.subject,
            self.client,
            sandbox,
            self.settings,
            item=item.label,
            introduction=self.introductions.get(item.subject, ""),
        )
        with self._lock:
            self._probes += outcome.probes
            self._outcomes.append(outcome)
        if outcome.failure is not None:
            raise outcome.failure
        assert outcome.draft is not None
        return outcome.draft

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
        return make_llm_scenarios(
            env,
            brief,
            count,
            asker=asker,
            sandbox=sandbox,
            settings=self.scengen,
            seed=item.seed,
        )

    def drain_llm_calls(self, items: Collection[str]) -> list[LlmCallRecord]:
        return self.client.collector.drain(items)

    def drain_probes(self, items: Collection[str]) -> list[ProbeRecord]:
        """The probe records of ``items`` made since the last drain (accepted and rejected
        environments)."""
        with self._lock:
            probes = [p for p in self._probes if p.item in items]
            self._probes = [p for p in self._probes if p.item not in items]
        return probes

    def drain_outcomes(self) -> list[TopicOutcome]:
        """Each topic's outcome since the last drain: draft or failure, probes, call count."""
        with self._lock:
            outcomes, self._outcomes = self._outcomes, []
        return outcomes
