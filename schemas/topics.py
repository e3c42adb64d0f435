"""Topic mining's records (EnvScaler's SkelBuilder, first step): a candidate read from a task
corpus, the LLM's verdict on it, what mining was asked for, and the row every candidate ends as.

Every candidate ends with exactly one status: ``screened_out`` (dropped before any LLM call),
``failed`` (the LLM call failed for good), ``rejected`` (the verdict or a score threshold said
no), ``duplicate`` (of a better accepted topic), ``accepted`` or ``selected`` (in the diverse
subset). All but ``accepted`` and ``selected`` carry a reason code.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from envmill.schemas.ids import content_id

SourceFormat = Literal["api-bank", "toolace", "topics"]
TopicStatus = Literal["screened_out", "failed", "rejected", "duplicate", "accepted", "selected"]
SOURCE_FORMATS: tuple[str, ...] = get_args(SourceFormat)
TOPIC_STATUSES: tuple[str, ...] = get_args(TopicStatus)
INTRODUCTION_SENTENCES = 3

# A sentence ends at . ! or ? (closing quotes or brackets may follow) before a space and a
# capital or digit; common abbreviations ("e.g.", "Dr.") do not end one.
_ABBREVIATIONS = re.compile(
    r"\b(?:e\.g|i\.e|etc|vs|Dr|Mr|Mrs|Ms|St|No|Inc|Ltd|Co|approx|U\.S)\.", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?:\s+(?=[\"'(\[]?[A-Z0-9])|\s*$)")


class TopicSource(BaseModel):
    """What topic mining knew of a selected topic, for the planner: its introduction and the
    request it was mined from (a topic name alone loses both)."""

    model_config = ConfigDict(frozen=True)

    introduction: str = ""
    request: str = ""


class TopicCandidate(BaseModel):
    """A request (or a named topic) and where it came from; its id is a hash of its text."""

    model_config = ConfigDict(frozen=True)

    source: str = Field(description="the file it was read from (its name, not a path)")
    format: SourceFormat
    text: str = Field(min_length=1, description="the user's request, or the topic itself")
    tools: tuple[str, ...] = Field(default=(), description="tool names the corpus offered for it")

    @property
    def candidate_id(self) -> str:
        return content_id({"text": " ".join(self.text.split()).lower()})


def count_sentences(text: str) -> int:
    """Sentences of ``text`` (text after the last full stop counts as one more)."""
    body = _ABBREVIATIONS.sub(lambda found: found.group(0).replace(".", "\u2024"), text.strip())
    ends = list(_SENTENCE_END.finditer(body))
    tail = body[ends[-1].end() :].strip() if ends else body
    return len(ends) + bool(tail)


class TopicVerdict(BaseModel):
    """The LLM's answer for one corpus task: does it need a stateful, domain-specific environment,
    and which one (name, a three-sentence introduction, usefulness and modelability scores)."""

    model_config = ConfigDict(extra="forbid")

    stateful: bool = Field(description="the task reads or changes state a system keeps")
    domain_specific: bool = Field(description="the task belongs to one business domain")
    reason: str = Field(min_length=1, description="one sentence that justifies the verdict")
    topic: str = Field(
        min_length=1,
        max_length=200,
        description="the environment's name, e.g. 'clinic appointment booking'",
    )
    introduction: str = Field(
        min_length=1, description="exactly three sentences introducing the environment"
    )
    usefulness: int = Field(ge=1, le=5)
    modelability: int = Field(ge=1, le=5, description="how well a Python class can model it")

    @field_validator("introduction")
    @classmethod
    def _three_sentences(cls, value: str) -> str:
        found = count_sentences(value)
        if found != INTRODUCTION_SENTENCES:
            raise ValueError(f"must be exactly {INTRODUCTION_SENTENCES} sentences, got {found}")
        return " ".join(value.split())

    @property
    def score(self) -> int:
        return self.usefulness + self.modelability


class TopicMiningConfig(BaseModel):
    """What a mining run is asked for; it enters the run's key, so changing it is a new run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    select: int | None = Field(
        default=None,
        ge=1,
        description="topics in the diverse subset; None: every distinct accepted one",
    )
    min_usefulness: int = Field(default=3, ge=1, le=5)
    min_modelability: int = Field(default=3, ge=1, le=5)
    embedding_similarity: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description="cosine over endpoint embeddings that makes a duplicate",
    )
    lexical_similarity: float = Field(
        default=0.8, gt=0, le=1, description="cosine over character 3-grams (the fallback) likewise"
    )
    workers: int | None = Field(
        default=None,
        ge=1,
        description="threads making LLM calls; None: the client's concurrency cap",
    )


class TopicRecord(BaseModel):
    """One candidate as mining left it: a row of the ``topics`` table."""

    candidate_id: str
    run_id: str
    source: str
    format: SourceFormat
    text: str
    tools: tuple[str, ...] = ()
    status: TopicStatus
    reason_code: str | None = Field(default=None, description="why it stopped, e.g. 'url_bound'")
    message: str = Field(default="", description="one line for people")
    stateful: bool | None = None
    domain_specific: bool | None = None
    verdict_reason: str | None = None
    topic: str | None = None
    introduction: str | None = None
    usefulness: int | None = None
    modelability: int | None = None
    duplicate_of: str | None = Field(
        default=None, description="candidate_id of the topic kept instead"
    )
    selection_rank: int | None = Field(
        default=None, description="place in the max-min walk over distinct topics (0: the best)"
    )
    prompt_hash: str = ""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @classmethod
    def of(cls, candidate: TopicCandidate, run_id: str, **fields: Any) -> TopicRecord:
        """The record of ``candidate`` with the given status, verdict and reason fields."""
        base = candidate.model_dump(include={"source", "format", "text", "tools"})
        return cls(candidate_id=candidate.candidate_id, run_id=run_id, **base, **fields)

    def with_verdict(self, verdict: TopicVerdict) -> TopicRecord:
        values = verdict.model_dump()
        values["verdict_reason"] = values.pop("reason")
        return self.model_copy(update=values)

    @property
    def score(self) -> int:
        return (self.usefulness or 0) + (self.modelability or 0)
