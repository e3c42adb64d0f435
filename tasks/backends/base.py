"""The seam between the shared pipeline and the backends that make environments and scenarios.

A backend plans a run's items, makes an environment module for an item and scenarios for an
admitted environment; the pipeline does everything else (admission, certification, reference
trajectories, rows) the same way for every backend (DESIGN §2, §4).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from envmill.schemas.ids import canonical_json, sha256_hex
from envmill.schemas.llm import LlmCallRecord
from envmill.schemas.run import EnvItemSpec, SkippedScenario
from envmill.schemas.scenario import CertificationReport, ScenarioSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.schemas.skeleton import ProbeRecord

if TYPE_CHECKING:
    from envmill.tasks.envs import AdmittedEnvironment
    from envmill.tasks.sandbox import Sandbox


class BatchAborted(Exception):
    """Raised by a backend when the factory itself cannot go on (its LLM gate or cluster went
    away, as when the run is interrupted): the batch ends with no rows and no completion marker,
    so a rerun makes its items, rather than each being recorded as failed."""


class PlanError(ValueError):
    """Settings a backend cannot plan (an unknown domain, say); one line for the user."""


class EnvironmentDraft(Protocol):
    """What a backend makes for an item: a module's source and the prose that goes with it.

    A backend may hand the pipeline a richer object (the procedural backend's compiled environment
    carries its tool manifest); the pipeline reads only these attributes and gives the same object
    back to :meth:`Backend.make_scenarios`. A draft whose backend already admitted its module may
    carry the result as ``admitted``, so the pipeline does not admit it twice.
    """

    source: str
    topic: str
    introduction: str
    business_rules: list[str]
    domain: str


@dataclass
class ScenarioDrafts:
    """The scenarios a backend made for one environment, and why the others were skipped.

    A backend that certified its scenarios already (to repair the refused ones) hands over the
    reports by scenario id, so the pipeline does not certify them again, and the repairs each
    took."""

    scenarios: list[ScenarioSpec] = field(default_factory=list)
    skipped: list[SkippedScenario] = field(default_factory=list)
    reports: dict[str, CertificationReport] = field(default_factory=dict)
    repairs: dict[str, int] = field(default_factory=dict)


class Backend(Protocol):
    """One way of making environments and scenarios."""

    name: str
    version: str  # enters every batch key: bump it when the output changes, so reruns redo work
    item_threads: int  # items of a batch made at once: 1 for CPU work, more when waiting on an LLM

    def provenance(self) -> dict[str, Any]:
        """What stands behind every artifact it makes: ``generator`` (its version), the model
        of each LLM stage (``models``) and the hash of each prompt (``prompts``)."""
        ...

    def plan_items(self, settings: EnvmillSettings) -> Iterable[EnvItemSpec]:
        """The run's environment items, possibly lazily; raises :class:`PlanError` for settings
        it cannot plan when called, not when the first item is taken."""
        ...

    def make_environment(self, item: EnvItemSpec, sandbox: Sandbox) -> EnvironmentDraft:
        """An environment module for ``item``; any exception fails this item only."""
        ...

    def make_scenarios(
        self,
        draft: EnvironmentDraft,
        env: AdmittedEnvironment,
        item: EnvItemSpec,
        count: int,
        sandbox: Sandbox,
    ) -> ScenarioDrafts:
        """Up to ``count`` scenarios for an admitted environment, with a reason for each skip."""
        ...

    def drain_llm_calls(self, items: Collection[str]) -> list[LlmCallRecord]:
        """The LLM calls made for ``items`` (labels) since the last drain; none for a backend
        without an LLM. By item, so batches sharing a process never take each other's."""
        ...

    def drain_probes(self, items: Collection[str]) -> list[ProbeRecord]:
        """The environment-check probes made for ``items`` since the last drain (none without
        a judge)."""
        ...


def item_seed(run_seed: int, key: int | str) -> int:
    """The seed of a run's item ``key`` (its index, or its topic, so a retried topic keeps its
    seed): a hash, so neighbouring items share nothing."""
    return int(sha256_hex(canonical_json(["env", run_seed, key]))[:12], 16)
