"""Records of the export stage: which trajectories to hand to a trainer, and each one as the
warehouse gives it (a trajectory joined with its scenario and environment). The formats are
``tasks/export``'s: each format's module declares its own name."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ExportSelection(BaseModel):
    """Which trajectories an export takes; None leaves a filter out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_reward: float | None = Field(None, ge=0.0, le=1.0, description="reward at least this")
    backend: str | None = Field(None, description="the environment's backend")
    domain: str | None = Field(None, description="the environment's domain")
    run_id: str | None = Field(None, description="the run that made the trajectory")
    policy: str | None = Field(None, description="`reference`, or a model name")
    include_dropped: bool = Field(False, description="keep trajectories a verdict dropped")
    include_sources: tuple[str, ...] = Field(
        (), description="benchmark sources whose held-out scenarios to export too, e.g. bfcl"
    )


class ExportRecord(BaseModel):
    """One trajectory with what every format needs: its messages (Chat Completions), its
    environment's tool schemas, and the metadata a trainer may filter on."""

    model_config = ConfigDict(frozen=True)

    trajectory_id: str
    scenario_id: str
    env_id: str
    run_id: str
    policy: str
    reward: float
    success: bool | None = Field(None, description="NULL in parts written before the column")
    termination: str
    steps: int
    domain: str
    backend: str
    mode: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    dropped_by: list[str] = Field(
        default_factory=list, description="the filters whose verdict dropped it, sorted"
    )
