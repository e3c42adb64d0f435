"""The optional LLM judge (``[reward] judge = "llm"``): the ``reward_judge`` stage's model
decides whether a reply says what the scenario expects.

It is called exactly as :func:`envmill.tasks.judge.judge_reply` is, so the reward path takes
either. Its calls go through the LLM layer (cached, costed, recorded under the episode's item).
A reply the model cannot make valid JSON of, even after the layer's repair turns, is a failed
verdict that says so: a judge that cannot answer never grants a reward. An endpoint that cannot
be reached raises the layer's own errors, which the rollout treats as the factory's failure.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envmill.schemas.ids import canonical_json
from envmill.schemas.llm import LlmCallRecord
from envmill.schemas.reward import JUDGE_STAGE
from envmill.schemas.scenario import ScenarioContent
from envmill.tasks.judge import JudgeCase, Verdict, judges_reply
from envmill.tasks.llm import LlmCallError, LlmClient, RenderedPrompt, render

MALFORMED_CLASSES = frozenset({"ReplyError", "EmptyReply", "UnusableReply"})


class JudgeReply(BaseModel):
    """What the stage answers: the verdict and its reason in one line."""

    model_config = ConfigDict(extra="forbid")

    passed: bool
    reason: str = Field(min_length=1, max_length=2000)


def judge_prompt(case: JudgeCase) -> RenderedPrompt:
    """The stage's messages for one case (its JSON compact and in a stable key order, so the
    same case is the same request: a rerun is served from the cache)."""
    data = case.model_dump(mode="json", exclude_none=True)
    return render(
        JUDGE_STAGE, expected_answer=data.get("expected_answer"), case_json=canonical_json(data)
    )


class LlmJudge:
    """A :class:`~envmill.tasks.judge.ReplyJudge` asking ``client``'s ``reward_judge`` model;
    ``item`` and ``sample`` name its calls (the episode's key, so they land with its others)."""

    def __init__(self, client: LlmClient, *, item: str = "", sample: int = 0) -> None:
        self.client, self.item, self.sample = client, item, sample

    def __call__(
        self, scenario: ScenarioContent, final_state: dict[str, Any], reply: str
    ) -> Verdict | None:
        if not judges_reply(scenario):
            return None
        prompt = judge_prompt(JudgeCase.of(scenario, final_state, reply))
        try:
            answer = self.client.complete(
                JUDGE_STAGE,
                prompt.messages,
                item=self.item,
                sample=self.sample,
                schema=JudgeReply,
                prompt_hash=prompt.prompt_hash,
            )
        except LlmCallError as exc:
            if exc.record.error_class not in MALFORMED_CLASSES:
                raise
            return Verdict(False, f"the LLM judge's reply was malformed: {exc.record.error}")
        value = answer.value
        assert isinstance(value, JudgeReply)  # the layer validated it against the schema
        return Verdict(value.passed, " ".join(value.reason.split()))


class ItemJudges:
    """The run's LLM judge in certification: one :class:`LlmJudge` per item over one client,
    whose calls leave with that item's rows (``calls``)."""

    def __init__(self, client: LlmClient) -> None:
        self.client = client

    def judge(self, item: str) -> LlmJudge:
        return LlmJudge(self.client, item=item)

    def calls(self, item: str) -> list[LlmCallRecord]:
        return self.client.collector.drain({item})
