"""Records of ScenGenerator (issue 12): its settings and the structured answers of its stages."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ScenGenSettings(BaseModel):
    """Bounds of the LLM scenario stages."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answer_rounds: int = Field(
        default=2, ge=0, description="rounds that show the model why its answer cannot be used"
    )
    repair_rounds: int = Field(
        default=2,
        ge=0,
        description="certification repairs: the failed gate and why, back to the model",
    )
    conversational_share: float = Field(default=0.3, ge=0, le=1)
    scenario_threads: int = Field(
        default=4, ge=1, description="scenarios of one environment at once"
    )
    preview_records: int = Field(
        default=12,
        ge=1,
        description="records per collection shown in a prompt (a state holds at most 12)",
    )


class StateAnswer(BaseModel):
    """Stage ``scenario_state``: one initial state."""

    state: dict[str, Any]


class PlannedStep(BaseModel):
    """One tool call of the model's solution. A string argument ``"$2.data.order_id"`` stands
    for what step 2's result holds at that path, once step 2 has run."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class TaskAnswer(BaseModel):
    """Stage ``scenario_task``: the request, the facts a simulated user may reveal, and the
    tool calls that fulfil it."""

    task: str = Field(min_length=1)
    user_facts: dict[str, Any] = Field(default_factory=dict)
    steps: list[PlannedStep] = Field(min_length=1)
    expected_answer: dict[str, Any] | None = Field(
        default=None, description="what the final reply must state (checked by envmill)"
    )
    reply: str | None = Field(default=None, description="the reference's final words")


class CheckItem(BaseModel):
    """One fact of the checklist and the check that tests it."""

    fact: str = Field(min_length=1)
    code: str = Field(min_length=1, description="defines check(initial_state, final_state)")


MAX_CHECKS = 16  # one fact each; more is a model padding, and each may use its time budget


class ChecksAnswer(BaseModel):
    """Stages ``scenario_checks`` and ``scenario_repair``: the checklist as checks."""

    checks: list[CheckItem] = Field(min_length=1, max_length=MAX_CHECKS)
