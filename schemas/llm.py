"""LLM settings and records: which model each stage uses, and one row per LLM call.

A stage override (``stages``) changes only the fields it sets; the rest come from ``default``,
so ``[llm.stages.topics] model = "small"`` keeps the default timeouts. ``base_url`` and
``api_key`` fall back to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` when unset (DESIGN §7), but
nothing here starts a call: the LLM layer runs only when a caller builds it (``--backend llm``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


def check_base_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host, else ValueError saying what is expected.

    Caught here, a typo is one settings error instead of four retried "connection lost" attempts.
    """
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError as exc:  # a port that is not a number, a malformed IPv6 host
        raise ValueError(f"not a URL ({exc}): {url!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ValueError(f"must be an http(s) URL such as http://127.0.0.1:8000/v1, not {url!r}")
    return url


class Price(BaseModel):
    """USD per million tokens of one model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="USD per 1M prompt tokens"
    )
    output: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="USD per million completion tokens"
    )


class StageModel(BaseModel):
    """The model and limits of one stage's calls."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(default="gpt-4o-mini", min_length=1)
    temperature: float = Field(default=0.7, ge=0, le=2, allow_inf_nan=False)
    max_tokens: int = Field(default=4096, gt=0)
    max_completion_tokens: int | None = Field(
        default=None,
        gt=0,
        description="sent instead of max_tokens when set: reasoning models refuse max_tokens "
        "(their limit counts the hidden reasoning too)",
    )
    timeout_seconds: float = Field(
        default=120.0,
        gt=0,
        allow_inf_nan=False,
        description="one socket operation of an HTTP attempt (the openai default, 600 s, is long)",
    )
    deadline_seconds: float = Field(
        default=600.0,
        gt=0,
        allow_inf_nan=False,
        description="one call, every retry and repair turn included (waiting for a slot has "
        "a budget of its own, as long)",
    )

    def length_limit(self) -> dict[str, int]:
        """The reply's length limit as the request carries it: one field, never both, since an
        endpoint that knows ``max_completion_tokens`` may refuse a request that has the two."""
        if self.max_completion_tokens is not None:
            return {"max_completion_tokens": self.max_completion_tokens}
        return {"max_tokens": self.max_tokens}


class LlmSettings(BaseModel):
    """Endpoint, per-stage models, global limits, prices and the response cache switch."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = Field(default=None, description="else OPENAI_BASE_URL")
    api_key: SecretStr | None = Field(default=None, description="else OPENAI_API_KEY")
    default: StageModel = Field(default_factory=StageModel)
    stages: dict[str, StageModel] = Field(
        default_factory=dict, description="per stage name: the fields that differ from default"
    )
    max_concurrency: int = Field(
        default=8, gt=0, description="in-flight requests, all processes of a run"
    )
    requests_per_minute: int = Field(default=0, ge=0, description="0: no pacing")
    max_attempts: int = Field(
        default=4, ge=1, description="HTTP attempts per request, first included"
    )
    retry_backoff_seconds: float = Field(
        default=0.5,
        ge=0,
        allow_inf_nan=False,
        description="first wait between attempts; doubles, at most 8 s, jittered",
    )
    repair_turns: int = Field(
        default=1, ge=0, description="turns that show the model its parse error"
    )
    structured_output: Literal["auto", "json_schema", "text"] = "auto"
    prices: dict[str, Price] = Field(default_factory=dict, description="model -> Price")
    cache: bool = True
    cache_namespace: str = Field(
        default="",
        pattern=r"^[A-Za-z0-9_.-]*$",
        description="a subfolder of the cache, e.g. to keep a test endpoint's answers apart",
    )

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        return None if url is None else check_base_url(url)

    def for_stage(self, stage: str) -> StageModel:
        """``default`` with the fields the stage's override sets."""
        override = self.stages.get(stage)
        if override is None:
            return self.default
        return self.default.model_copy(
            update=override.model_dump(include=override.model_fields_set)
        )


class LlmCallRecord(BaseModel):
    """One LLM call (a cache hit too): a row of the ``llm_calls`` table.

    ``cost_usd`` is what this call cost: a cache hit keeps the token counts of the call that
    made the cached reply but costs 0. An unpriced model costs 0 as well.
    """

    run_id: str = ""
    stage: str
    item: str = ""
    model: str
    prompt_hash: str = Field(default="", description="the template that made the messages")
    request_hash: str = Field(description="the cache key")
    sample: int = 0
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    latency_seconds: float = Field(
        default=0.0, ge=0, description="first request sent to reply ready"
    )
    queue_seconds: float = Field(
        default=0.0, ge=0, description="waiting for a slot or the RPM pace"
    )
    cache_hit: bool = False
    attempts: int = Field(default=0, ge=0, description="HTTP requests made, repair turns included")
    outcome: Literal["ok", "failed", "refused"] = Field(
        default="ok", description="refused: the answer came but a check refused it (error says why)"
    )
    error_class: str = ""
    error: str = Field(default="", description="one line, never the API key")
    cost_usd: float = Field(default=0.0, ge=0)
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
