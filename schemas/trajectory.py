"""Records for trajectories (DESIGN §3.4)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Termination = Literal["finished", "max_steps", "tool_error", "model_error", "user_stop"]


class TrajectoryRecord(BaseModel):
    """One agent/user/tool conversation in Chat Completions form, with its reward.

    ``reward`` and ``success`` come from one function (``tasks.certify.reward.score_checks``), so a
    reference trajectory, a rollout and certification never disagree on what counts as solved.
    """

    trajectory_id: str
    scenario_id: str
    env_id: str
    policy: str
    messages: list[dict[str, Any]]
    check_results: list[bool]
    reward: float = Field(ge=0.0, le=1.0)
    success: bool
    steps: int = Field(ge=0)
    termination: Termination
    usage: dict[str, Any] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    details: dict[str, Any] = Field(
        default_factory=dict, description="a rollout's sample, why it ended, check errors"
    )
