"""What a judge is given: one typed record, the same for envmill's rules and for a model.

The LLM judge's prompt carries it as JSON and the offline model reads it back from there, so
both judges see exactly one case: the question, the typed expected answer or the refusal's
rules, the records the agent could see, and the reply.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envmill.schemas.answers import ExpectedAnswer, Refusal
from envmill.schemas.scenario import ScenarioContent


class JudgeCase(BaseModel):
    """``records``: the initial state the agent could read; ``records_after``: the final state,
    only where the episode changed it (new record ids are context, not answers)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str
    user_facts: dict[str, Any] = Field(default_factory=dict)
    expected_answer: ExpectedAnswer | None = None
    refusal: Refusal | None = None
    records: dict[str, Any] = Field(default_factory=dict)
    records_after: dict[str, Any] | None = None
    reply: str = ""

    @classmethod
    def of(cls, scenario: ScenarioContent, final_state: dict[str, Any], reply: str) -> JudgeCase:
        changed = final_state != scenario.initial_state
        return cls(
            question=scenario.task,
            user_facts=scenario.user_facts,
            expected_answer=scenario.expected_answer,
            refusal=scenario.refusal,
            records=scenario.initial_state,
            records_after=final_state if changed else None,
            reply=reply if isinstance(reply, str) else "",  # no text is no answer, never a raise
        )

    @property
    def final_state(self) -> dict[str, Any]:
        return self.records if self.records_after is None else self.records_after
