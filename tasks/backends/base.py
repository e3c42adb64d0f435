"""The seam between the shared pipeline and the backends that make environments and scenarios.

A backend plans a run's items, makes an environment module for an item and scenarios for an
admitted environment; the pipeline does everything else (admission, certification, reference
trajectories, rows) the same way for every backend (DESIGN §2, §4). What a backend makes comes
back with the records of the work it took (LLM calls, probes), so nothing is left behind in a
backend object for someone to collect later.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

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
    """What a backend makes for an item: a module's source, the prose that goes with it, and the
    records of the work it took (the LLM calls made for it, the probes that checked it).

    A backend may hand the pipeline a richer object (the procedural backend's compiled environment
    carries its tool manifest); the pipeline reads only these attributes and gives the same object
    back to :meth:`Backend.make_scenarios`. A draft whose backend already admitted its module may
    carry the result as ``admitted``, so the pipeline does not admit it twice; one whose check
    found something questionable may carry it as ``warnings`` (``EnvWarning`` records), which
    the environment's row keeps, and one made from an imported corpus its name as ``origin``
    (``"bfcl"``; "envmill" when it has none).
    """

    @property
    def source(self) -> str: ...
    @property
    def topic(self) -> str: ...
    @property
    def introduction(self) -> str: ...
    @property
    def business_rules(self) -> list[str]: ...
    @property
    def domain(self) -> str: ...
    @property
    def call_records(self) -> Sequence[LlmCallRecord]: ...
    @property
    def probes(self) -> Sequence[ProbeRecord]: ...


DraftT = TypeVar("DraftT", bound=EnvironmentDraft)


@dataclass
class ScenarioDrafts:
    """The scenarios a backend made for one environment, why the others were skipped, and the
    LLM calls they took.

    A backend that certified its scenarios already (to repair the refused ones) hands over the
    reports by scenario id, so the pipeline does not certify them again, and the repairs each
    took."""

    scenarios: list[ScenarioSpec] = field(default_factory=list)
    skipped: list[SkippedScenario] = field(default_factory=list)
    reports: dict[str, CertificationReport] = field(default_factory=dict)
    repairs: dict[str, int] = field(default_factory=dict)
    call_records: list[LlmCallRecord] = field(default_factory=list)


class RecordedFailure(Exception):
    """An item's environment or scenarios that could not be made, with the records of the work
    done on the way (LLM calls are paid for, probes say why): the pipeline writes them beside
    the failure row of ``cause``, as it writes a draft's."""

    def __init__(
        self,
        cause: Exception,
        call_records: Sequence[LlmCallRecord] = (),
        probes: Sequence[ProbeRecord] = (),
    ) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.call_records, self.probes = list(call_records), list(probes)


class Backend(Protocol[DraftT]):
    """One way of making environments and scenarios; ``DraftT`` is what it makes for an item
    and takes back for that item's scenarios."""

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

    def make_environment(self, item: EnvItemSpec, sandbox: Sandbox) -> DraftT:
        """An environment module for ``item``; any exception fails this item only (a
        :class:`RecordedFailure` keeps the records of the work it took)."""
        ...

    def make_scenarios(
        self,
        draft: DraftT,
        env: AdmittedEnvironment,
        item: EnvItemSpec,
        count: int,
        sandbox: Sandbox,
    ) -> ScenarioDrafts:
        """Up to ``count`` scenarios for an admitted environment, with a reason for each skip."""
        ...


@dataclass
class EnvironmentBrief:
    """What a scenario writer is told about an environment besides its code, and the invariants
    its backend knows (the procedural backend's domain spec has them written down)."""

    topic: str
    introduction: str
    business_rules: list[str]
    example_state: dict[str, Any]
    invariants: Callable[[dict[str, Any]], list[str]] | None = None


class BriefingBackend(Backend[DraftT], Protocol[DraftT]):
    """A backend that can brief a scenario writer on its drafts: what a backend must offer for
    another's scenarios (``--scenarios-from llm``) to be written for its environments."""

    def brief(self, draft: DraftT, item: EnvItemSpec) -> EnvironmentBrief:
        """The prose, an example state (seeded by the item) and the invariants of ``draft``."""
        ...


def item_seed(run_seed: int, key: int | str) -> int:
    """The seed of a run's item ``key`` (its index, or its topic, so a retried topic keeps its
    seed): a hash, so neighbouring items share nothing."""
    return int(sha256_hex(canonical_json(["env", run_seed, key]))[:12], 16)
