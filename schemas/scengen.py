"""Records of ScenGenerator (issue 12): its settings and the structured answers of its stages."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from envmill.schemas.answers import Refusal

ScenarioKind = Literal[
    "change",  # records named as a user knows them, changed
    "filtered_lookup",  # one record picked by what a filtered list shows, then changed
    "created_chain",  # a record created, then acted on
    "conditional",  # a condition read from the state decides what is done
    "disambiguation",  # two records share the name the task uses; a detail tells them apart
    "answer",  # a question: nothing changes, the reply states a typed value
    "refusal",  # a request a business rule forbids: nothing changes, the reply declines
]
KIND_MIX: dict[ScenarioKind, float] = {
    "change": 0.3,
    "filtered_lookup": 0.1,
    "created_chain": 0.1,
    "conditional": 0.05,
    "disambiguation": 0.1,
    "answer": 0.2,
    "refusal": 0.15,
}


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
    kinds: dict[ScenarioKind, float] = Field(
        default_factory=lambda: dict(KIND_MIX),
        description="weights of the scenario kinds asked for (the procedural backend's mix)",
    )
    scenario_threads: int = Field(
        default=4, ge=1, description="scenarios of one environment at once"
    )
    preview_records: int = Field(
        default=12,
        ge=1,
        description="records per collection shown in a prompt (a state holds at most 12)",
    )

    @field_validator("kinds")
    @classmethod
    def _some_kind(cls, kinds: dict[str, float]) -> dict[str, float]:
        weights = list(kinds.values())
        finite = all(math.isfinite(weight) for weight in weights) and math.isfinite(sum(weights))
        if not finite or any(weight < 0 for weight in weights) or not sum(weights) > 0:
            raise ValueError(
                "give each kind a finite weight of 0 or more, and one of them more than 0"
            )
        return kinds


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
    refusal: Refusal | None = Field(
        default=None, description="a refusal's rule and the state values that trigger it"
    )


class CheckItem(BaseModel):
    """One fact of the checklist and the check that tests it."""

    fact: str = Field(min_length=1)
    code: str = Field(min_length=1, description="defines check(initial_state, final_state)")


MAX_CHECKS = 16  # one fact each; more is a model padding, and each may use its time budget


class ChecksAnswer(BaseModel):
    """Stages ``scenario_checks`` and ``scenario_repair``: the checklist as checks."""

    checks: list[CheckItem] = Field(max_length=MAX_CHECKS)  # a question's may be empty
