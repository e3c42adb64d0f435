"""Topic candidates: one request from a task corpus (or one line of a topic list), as topic mining
reads it, before any LLM verdict (EnvScaler's SkelBuilder, first step)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from envmill.schemas.ids import content_id

SourceFormat = Literal["api-bank", "toolace", "topics"]


class TopicCandidate(BaseModel):
    """A request (or a named topic) and where it came from; its id is a hash of its text."""

    model_config = ConfigDict(frozen=True)

    source: str = Field(description="the file it was read from (its name, not a path)")
    format: SourceFormat
    text: str = Field(min_length=1, description="the user's request, or the topic itself")
    tools: tuple[str, ...] = Field((), description="tool names the corpus offered for it")

    @property
    def candidate_id(self) -> str:
        return content_id({"text": " ".join(self.text.split()).lower()})
