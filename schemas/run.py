"""Records of a synthesis run: the plan (batches of environment items) and what each batch made."""

from __future__ import annotations

from pydantic import BaseModel, Field

from envmill.schemas.environment import EnvironmentRecord
from envmill.schemas.scenario import ScenarioRecord
from envmill.schemas.trajectory import TrajectoryRecord


class EnvItemSpec(BaseModel):
    """One environment to synthesize: a domain and the seed of its variation."""

    index: int
    domain: str
    seed: int


class BatchSpec(BaseModel):
    """Items synthesized together by one worker task; ``key`` names its warehouse parts."""

    key: str
    items: list[EnvItemSpec]


class FailureRecord(BaseModel):
    """One item that did not make it, with the stage and error that stopped it."""

    stage: str
    item: str
    error_class: str
    message: str
    attempts: int = 1


class BatchOutput(BaseModel):
    """Everything one batch produced; written to the warehouse as one part per table."""

    key: str
    environments: list[EnvironmentRecord] = Field(default_factory=list)
    scenarios: list[ScenarioRecord] = Field(default_factory=list)
    trajectories: list[TrajectoryRecord] = Field(default_factory=list)
    failures: list[FailureRecord] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=dict, description="work time per stage")

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
