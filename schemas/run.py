"""Records of a synthesis run: the plan (batches of environment items) and what each batch made."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from envmill.schemas.environment import EnvironmentRecord
from envmill.schemas.llm import LlmCallRecord
from envmill.schemas.rollout import VerdictRecord
from envmill.schemas.scenario import ScenarioRecord
from envmill.schemas.skeleton import ProbeRecord
from envmill.schemas.trajectory import TrajectoryRecord


class EnvItemSpec(BaseModel):
    """One environment to synthesize: what it is about, for its backend, and a seed.

    ``subject`` is whatever the backend plans by: a catalog domain for the procedural backend, a
    mined topic for the LLM backend.
    """

    index: int
    subject: str
    seed: int
    key: str = Field(default="", description="what the item makes, hashed: not its position")

    @property
    def label(self) -> str:
        """How failure rows name the item before it has an environment id."""
        return f"{self.subject}#{self.seed}"


class BatchSpec(BaseModel):
    """Items synthesized together by one worker task; ``key`` (a hash of the items' keys) names
    its warehouse parts."""

    key: str
    items: list[EnvItemSpec]


class FailureRecord(BaseModel):
    """One item that did not make it, with the stage and error that stopped it.

    ``error_class`` names the kind of failure (an exception class, ``Skipped``, ``Rejected``);
    ``code`` is the category a query groups by (a skip reason, the policy rule that refused a
    module); ``details`` keeps every reason when there were several (all policy violations).
    """

    stage: str
    item: str
    error_class: str
    code: str = ""
    message: str
    details: list[str] = Field(default_factory=list)
    attempts: int = 1


class SkippedScenario(BaseModel):
    """A scenario a backend could not make: its index, a category code and the reason."""

    index: int
    code: str
    message: str


class BatchOutput(BaseModel):
    """Everything one batch produced; written to the warehouse as one part per table."""

    key: str
    items: list[str] = Field(default_factory=list, description="the keys of the batch's items")
    environments: list[EnvironmentRecord] = Field(default_factory=list)
    scenarios: list[ScenarioRecord] = Field(default_factory=list)
    trajectories: list[TrajectoryRecord] = Field(default_factory=list)
    failures: list[FailureRecord] = Field(default_factory=list)
    llm_calls: list[LlmCallRecord] = Field(default_factory=list)
    env_probes: list[ProbeRecord] = Field(default_factory=list)
    verdicts: list[VerdictRecord] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=dict, description="work time per stage")
    provenance: dict[str, Any] = Field(
        default_factory=dict, description="the generator, models and prompt hashes behind it"
    )

    def counts(self) -> dict[str, int]:
        certified = sum(s.status == "certified" for s in self.scenarios)
        return {
            "environments": len(self.environments),
            "tools": sum(len(e.tools) for e in self.environments),
            "scenarios": len(self.scenarios),
            "certified": certified,
            "rejected": len(self.scenarios) - certified,
            "trajectories": len(self.trajectories),
            "failures": len(self.failures),
        }
