"""The LLM client: one chat completion per call, cached, structured, retried, limited, recorded.

``LlmClient(settings, cache_dir=...)`` is the only way into the LLM path, and it refuses to start
without an explicit base URL (settings or ``OPENAI_BASE_URL``): an exported API key alone never
makes a run spend money. Per call: the cache answers first (no HTTP at all on a hit); otherwise
the request goes through the global limits and :mod:`transport` (retries, deadline); a schema'd
reply is parsed strictly, gets ``repair_turns`` chances to fix itself, and only a valid reply is
cached — under the original request's key. Every call, hit or failure, leaves an
``LlmCallRecord`` in the collector. Failures raise :class:`LlmCallError` carrying that record.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from envmill.schemas.llm import LlmCallRecord, LlmSettings, StageModel
from envmill.tasks.llm.accounting import CallCollector, estimate_cost
from envmill.tasks.llm.cache import ResponseCache, request_key
from envmill.tasks.llm.limits import CallLimits, choose_limits
from envmill.tasks.llm.reply import (
    LlmCallError,
    LlmConfigError,
    LlmReply,
    LlmUnreachableError,
    ToolCall,
    reply_of,
)
from envmill.tasks.llm.structured import (
    ReplyError,
    json_schema_of,
    parse_reply,
    repair_messages,
    response_format_for,
    with_schema_instruction,
)
from envmill.tasks.llm.transport import (
    Deadline,
    EmptyReplyError,
    Failure,
    Tally,
    send,
    shared_openai,
)

NO_KEY = "no-key"  # local servers take any key; the openai client insists on one
_REFUSES_SCHEMA: set[tuple[str, str]] = set()  # (base_url, model) that answered 400 to it
_LOCK = threading.Lock()


@dataclass
class _Call:
    """One call in progress: what identifies it, and what it has spent so far."""

    stage: str
    item: str
    sample: int
    prompt_hash: str
    model: StageModel
    key: str
    tally: Tally = field(default_factory=Tally)
    began: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.deadline = Deadline(self.model.deadline_seconds)


class LlmClient:
    """Calls of one run to one OpenAI-compatible endpoint; thread-safe, one per process is plenty.

    Args:
        settings: models per stage, limits, prices (``EnvmillSettings.llm``).
        cache_dir: the response cache folder (e.g. ``<data folder>/_llm_cache``); None: no cache.
        gate_dir: the local concurrency gate's folder; default ``_llm_gate`` beside the cache.
        run_id: names the Dask semaphore and goes into every record.
        collector: receives every call's record (default: a new one, ``client.collector``).
        limits: override the automatically chosen global limits (tests).
    """

    def __init__(
        self,
        settings: LlmSettings,
        *,
        cache_dir: Path | str | None = None,
        gate_dir: Path | str | None = None,
        run_id: str = "",
        collector: CallCollector | None = None,
        limits: CallLimits | None = None,
    ) -> None:
        base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise LlmConfigError(
                "no LLM endpoint configured: set llm.base_url (ENVMILL_LLM__BASE_URL) "
                "or OPENAI_BASE_URL"
            )
        self.settings, self.base_url, self.run_id = settings, base_url.rstrip("/"), run_id
        secret = settings.api_key.get_secret_value() if settings.api_key else None
        self._api_key = secret or os.environ.get("OPENAI_API_KEY") or NO_KEY
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.cache = ResponseCache(self.cache_dir if settings.cache else None)
        self.gate_dir = Path(gate_dir) if gate_dir else _default_gate_dir(self.cache_dir)
        self.collector = collector or CallCollector()
        self._limits = limits

    def __repr__(self) -> str:
        return f"LlmClient(base_url={self.base_url!r}, run_id={self.run_id!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Ship settings and folders (to a Dask worker); connections and records stay here."""
        keys = ("settings", "cache_dir", "gate_dir", "run_id")
        return {key: getattr(self, key) for key in keys}

    def __setstate__(self, state: dict[str, Any]) -> None:
        settings = state.pop("settings")
        self.__init__(settings, **state)  # type: ignore[misc]

    @property
    def limits(self) -> CallLimits:
        """This process's global limits (chosen at first use: Dask in a worker, else local)."""
        if self._limits is None:
            cap, rpm = self.settings.max_concurrency, self.settings.requests_per_minute
            self._limits = choose_limits(cap, rpm, self.gate_dir, self.run_id)
        return self._limits

    def complete(
        self,
        stage: str,
        messages: list[dict[str, Any]],
        *,
        item: str = "",
        sample: int = 0,
        schema: type[BaseModel] | None = None,
        tools: list[dict[str, Any]] | None = None,
        prompt_hash: str = "",
    ) -> LlmReply:
        """One chat completion for ``stage``; with ``schema``, ``reply.value`` is validated.

        Raises:
            LlmCallError: the call failed for good (its record says why); LlmUnreachableError
                when the endpoint cannot be reached at all.
        """
        model = self.settings.for_stage(stage)
        request = {
            "kind": "chat",
            "model": model.model,
            "messages": messages,
            "tools": tools or [],
            "schema": json_schema_of(schema) if schema else None,
            "temperature": model.temperature,
            "max_tokens": model.max_tokens,
            "sample": sample,
        }
        call = _Call(stage, item, sample, prompt_hash, model, request_key(request))
        hit = self._cached_reply(call, schema)
        if hit is not None:
            return replace(hit, record=self._record(call, hit=True))
        try:
            reply = self._answer(call, messages, tools, schema)
        except Failure as failure:
            raise self._failed(call, failure) from None
        tally = call.tally
        usage = {"prompt_tokens": tally.prompt_tokens, "completion_tokens": tally.completion_tokens}
        self.cache.put(call.key, {**reply.cached(), "usage": usage})
        return replace(reply, record=self._record(call))

    def embed(self, stage: str, texts: list[str], *, item: str = "") -> list[list[float]]:
        """Embedding vectors of ``texts`` with the stage's model (cached like completions)."""
        if not texts:
            return []
        model = self.settings.for_stage(stage)
        key = request_key({"kind": "embeddings", "model": model.model, "input": texts})
        call = _Call(stage, item, 0, "", model, key)
        cached = self.cache.get(key)
        if cached is not None and len(cached.get("vectors", [])) == len(texts):
            call.tally.prompt_tokens = int(cached.get("prompt_tokens", 0))
            self._record(call, hit=True)
            return cached["vectors"]

        def request(timeout: Any) -> list[list[float]]:
            response = self._openai.embeddings.create(
                model=model.model, input=texts, encoding_format="float", timeout=timeout
            )
            call.tally.prompt_tokens += response.usage.prompt_tokens if response.usage else 0
            if len(response.data) != len(texts):
                raise EmptyReplyError("fewer vectors than texts")
            return [item.embedding for item in sorted(response.data, key=lambda d: d.index)]

        try:
            vectors = self._send(call, request)
        except Failure as failure:
            raise self._failed(call, failure) from None
        self.cache.put(key, {"vectors": vectors, "prompt_tokens": call.tally.prompt_tokens})
        self._record(call)
        return vectors

    @property
    def _openai(self) -> Any:
        return shared_openai(self.base_url, self._api_key)

    def _cached_reply(self, call: _Call, schema: type[BaseModel] | None) -> LlmReply | None:
        """The cached reply (its original token counts into the call's tally), or None."""
        entry = self.cache.get(call.key)
        if entry is None:
            return None
        try:
            text, calls = entry["text"], [ToolCall(**c) for c in entry["tool_calls"]]
            value = parse_reply(text, schema) if schema and not calls else None
            usage = entry.get("usage") or {}
            call.tally.prompt_tokens = int(usage.get("prompt_tokens", 0))
            call.tally.completion_tokens = int(usage.get("completion_tokens", 0))
        except (ReplyError, KeyError, TypeError, ValueError):
            return None  # an entry this code cannot use is a miss; the new reply replaces it
        return LlmReply(text, value, calls, entry.get("finish_reason", ""))

    def _answer(
        self,
        call: _Call,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        schema: type[BaseModel] | None,
    ) -> LlmReply:
        """Ask (in the structured mode the endpoint takes) and repair until valid."""
        mode = self._structured_mode(call.model.model, schema)
        try:
            return self._converse(call, messages, tools, schema, mode)
        except Failure as failure:
            auto = self.settings.structured_output == "auto"
            if not (auto and mode == "json_schema" and failure.status == 400):
                raise
        # A 400 to response_format: ask in text mode. Only when that gets past the 400 was
        # response_format the problem, and this process stops sending it to this model.
        reply = self._converse(call, messages, tools, schema, "text")
        with _LOCK:
            _REFUSES_SCHEMA.add((self.base_url, call.model.model))
        return reply

    def _structured_mode(self, model: str, schema: type[BaseModel] | None) -> str | None:
        if schema is None:
            return None
        setting = self.settings.structured_output
        with _LOCK:
            refused = (self.base_url, model) in _REFUSES_SCHEMA
        return "text" if setting == "text" or (setting == "auto" and refused) else "json_schema"

    def _converse(
        self,
        call: _Call,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        schema: type[BaseModel] | None,
        mode: str | None,
    ) -> LlmReply:
        """The conversation of one call: the request, then up to ``repair_turns`` repairs."""
        conversation = with_schema_instruction(messages, schema) if mode == "text" else messages
        extra: dict[str, Any] = {"tools": tools} if tools else {}
        if mode == "json_schema" and schema is not None:
            extra["response_format"] = response_format_for(schema)
        error = ""
        for _turn in range(self.settings.repair_turns + 1):
            reply = self._chat(call, conversation, extra)
            if schema is None or reply.tool_calls:
                return reply
            try:
                return replace(reply, value=parse_reply(reply.text, schema))
            except ReplyError as exc:
                error = str(exc)
                conversation = repair_messages(conversation, reply.text, error)
        turns = self.settings.repair_turns
        plural = "s" * (turns != 1)
        raise Failure("ReplyError", f"unusable reply after {turns} repair turn{plural}: {error}")

    def _chat(
        self, call: _Call, conversation: list[dict[str, Any]], extra: dict[str, Any]
    ) -> LlmReply:
        model = call.model

        def request(timeout: Any) -> LlmReply:
            completion = self._openai.chat.completions.create(
                model=model.model,
                messages=conversation,
                temperature=model.temperature,
                max_tokens=model.max_tokens,
                timeout=timeout,
                **extra,
            )
            usage = getattr(completion, "usage", None)
            if usage is not None:
                call.tally.prompt_tokens += usage.prompt_tokens
                call.tally.completion_tokens += usage.completion_tokens
            return reply_of(completion)

        return self._send(call, request)

    def _send(self, call: _Call, request: Any) -> Any:
        return send(
            request,
            base_url=self.base_url,
            limits=self.limits,
            deadline=call.deadline,
            tally=call.tally,
            timeout=call.model.timeout_seconds,
            max_attempts=self.settings.max_attempts,
            backoff=self.settings.retry_backoff_seconds,
        )

    def _record(
        self, call: _Call, *, hit: bool = False, failure: Failure | None = None
    ) -> LlmCallRecord:
        """The call's row, added to the collector. A hit's latency is its cache read."""
        tally, model = call.tally, call.model.model
        cost = estimate_cost(
            self.settings.prices, model, tally.prompt_tokens, tally.completion_tokens
        )
        latency = time.monotonic() - call.began if hit else call.deadline.elapsed()
        record = LlmCallRecord(
            run_id=self.run_id,
            stage=call.stage,
            item=call.item,
            model=model,
            prompt_hash=call.prompt_hash,
            request_hash=call.key,
            sample=call.sample,
            prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens,
            latency_seconds=latency,
            queue_seconds=tally.queue_seconds,
            cache_hit=hit,
            attempts=tally.attempts,
            outcome="failed" if failure else "ok",
            error_class=failure.error_class if failure else "",
            error=self._scrub(failure.message) if failure else "",
            cost_usd=0.0 if hit else cost,
        )
        self.collector.add(record)
        return record

    def _failed(self, call: _Call, failure: Failure) -> LlmCallError:
        record = self._record(call, failure=failure)
        where = call.stage + (f" {call.item}" if call.item else "")
        message = f"LLM call failed ({where}): {record.error_class}: {record.error}"
        error_type = LlmUnreachableError if failure.unreachable else LlmCallError
        return error_type(message, record)

    def _scrub(self, text: str) -> str:
        """One line, at most 300 characters, with the API key blotted out wherever it appears."""
        line = " ".join(str(text).split())
        if self._api_key != NO_KEY and len(self._api_key) >= 4:
            line = line.replace(self._api_key, "***")
        return line[:300]


def _default_gate_dir(cache_dir: Path | None) -> Path:
    if cache_dir is not None:
        return cache_dir.parent / "_llm_gate"
    return Path(tempfile.gettempdir()) / f"envmill-llm-gate-{os.getuid()}"
