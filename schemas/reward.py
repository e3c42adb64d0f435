"""Settings of the reward (``[reward]`` in envmill.toml, ``ENVMILL_REWARD__*``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

JudgeKind = Literal["rules", "llm"]
JUDGE_STAGE = "reward_judge"  # the LLM stage of the optional judge (llm.stages.reward_judge)


class RewardSettings(BaseModel):
    """Who judges a reply: envmill's rules (the default: the offline run needs no model) or the
    ``reward_judge`` stage's model, cached, costed and recorded as every LLM call is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge: JudgeKind = Field(
        default="rules", description="rules: envmill's judge; llm: the reward_judge stage's model"
    )
