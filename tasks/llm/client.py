"""The LLM client: one chat completion per call, cached, structured, retried, limited, recorded.

``LlmClient(settings, cache_dir=...)`` is the only way into the LLM path, and it refuses to start
without an explicit base URL (settings or ``OPENAI_BASE_URL``): an exported API key alone never
makes a run spend money. Per call: the cache answers first (no HTTP at all on a hit); otherwise
the request goes through the global limits and :mod:`transport` (retries, deadline); a schema'd
reply is parsed strictly, gets ``repair_turns`` chances to fix itself, and only a valid reply is
cached — under the original request's key, after its record is built. A request names its
stage in the ``X-Envmill-Stage`` header, never in its messages. Every call, hit or
failure, leaves an ``LlmCallRecord`` in the collector. Every failure raises
:class:`LlmCallError` carrying that record; the other errors are :class:`LlmConfigError` and,
for a route the endpoint lacks and the caller can do without, :class:`LlmFallbackError`.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from envmill.schemas.llm import LlmCallRecord, LlmSettings, StageModel, check_base_url
from envmill.tasks.llm.accounting import CallCollector, estimate_cost
from envmill.tasks.llm.cache import CachedChat, CachedVectors, ResponseCache, request_key
from envmill.tasks.llm.connection import deadline_scope, load_openai
from envmill.tasks.llm.conversation import Question, answer
from envmill.tasks.llm.limits import (
    CallLimits,
    Gate,
    GateFolderError,
    local_gate,
    private_gate_dir,
)
from envmill.tasks.llm.reply import (
    LlmCallError,
    LlmConfigError,
    LlmFallbackError,
    LlmGateError,
    LlmReply,
    LlmUnreachableError,
    ToolCall,
    reply_of,
    tokens_of,
    vectors_of,
)
from envmill.tasks.llm.structured import ReplyError, json_schema_of, parse_reply
from envmill.tasks.llm.transport import (
    GATE_ERROR,
    NO_KEY,
    STAGE_HEADER,
    Deadline,
    Failure,
    Tally,
    register_secret,
    scrub,
    send,
    shared_openai,
)

# The error_class of an ok row: the endpoint lacks a route, and the caller does without it.
FELL_BACK = "fallback"


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
        gate_dir: the local concurrency gate's folder; default ``_llm_gate`` beside the cache,
            else a private folder of this process (the cap then holds per process family).
        run_id: names a run-wide gate and goes into every record.
        collector: receives every call's record (default: a new one, ``client.collector``).
        gate: makes the global limits at first use (default :func:`local_gate`; the flows that
            fan out on Dask hand in ``flows.runtime.llm_gate.dask_gate``); copies keep it.
        limits: override the global limits outright (tests).

    Raises:
        LlmConfigError: no endpoint configured, or not an http(s) URL.
    """

    def __init__(
        self,
        settings: LlmSettings,
        *,
        cache_dir: Path | str | None = None,
        gate_dir: Path | str | None = None,
        run_id: str = "",
        collector: CallCollector | None = None,
        gate: Gate = local_gate,
        limits: CallLimits | None = None,
    ) -> None:
        self.settings, self.base_url, self.run_id = settings, _endpoint(settings), run_id
        secret = settings.api_key.get_secret_value() if settings.api_key else None
        self._api_key = secret or os.environ.get("OPENAI_API_KEY") or NO_KEY
        register_secret(self._api_key)
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.cache = ResponseCache(self.cache_dir if settings.cache else None)
        self.gate_dir = Path(gate_dir) if gate_dir else _default_gate_dir(self.cache_dir)
        # A run-wide gate's name: the run, else this client (its pickled copies keep the name).
        self.gate_name = run_id or f"client-{uuid.uuid4().hex[:12]}"
        self.collector = collector or CallCollector()
        self.gate, self._limits = gate, limits
        load_openai()  # now, not inside an LLM slot: a worker unpickling this client imports it

    def __repr__(self) -> str:
        return f"LlmClient(base_url={self.base_url!r}, run_id={self.run_id!r})"

    def __getstate__(self) -> dict[str, Any]:
        """What a Dask worker gets: settings, folders, the gate and its name; not connections,
        records.

        The endpoint travels resolved (a worker calls this endpoint whatever its environment
        says). The API key travels only inside the settings: one from ``llm.api_key`` goes
        along, one taken from ``OPENAI_API_KEY`` does not and is read from the worker's own
        environment.
        """
        settings = self.settings.model_copy(update={"base_url": self.base_url})
        keys = ("cache_dir", "gate_dir", "run_id", "gate", "gate_name")
        return {"settings": settings} | {key: getattr(self, key) for key in keys}

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        settings, gate_name = state.pop("settings"), state.pop("gate_name", None)
        self.__init__(settings, **state)  # type: ignore[misc]
        self.gate_name = gate_name or self.gate_name

    @property
    def limits(self) -> CallLimits:
        """This process's global limits (made by the gate at first use)."""
        if self._limits is None:
            cap, rpm = self.settings.max_concurrency, self.settings.requests_per_minute
            try:
                self._limits = self.gate(cap, rpm, self.gate_dir, self.gate_name)
            except GateFolderError as exc:
                raise LlmConfigError(str(exc)) from None
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
                when the endpoint cannot be reached at all; LlmGateError when the gate broke.
            LlmConfigError: the gate folder cannot be used.
        """
        model = self.settings.for_stage(stage)
        request = {
            "kind": "chat",
            "stage": stage,  # two stages asking the same never share an answer
            "model": model.model,
            "messages": messages,
            "tools": tools or [],
            "schema": json_schema_of(schema) if schema else None,
            "temperature": model.temperature,
            **model.length_limit(),  # unset max_completion_tokens keeps the keys of old entries
            "sample": sample,
        }
        call = _Call(stage, item, sample, prompt_hash, model, request_key(request))
        hit = self._cached_reply(call, schema)
        if hit is not None:
            return replace(hit, record=self._record(call, hit=True))
        question = Question(
            messages, tools, schema, self.settings.structured_output, self.settings.repair_turns
        )
        try:
            reply = answer(partial(self._chat, call), question, self.base_url, model.model)
        except Failure as failure:
            raise self._failed(call, failure) from None
        record = self._record(call)  # first the row of what was paid, then the cache
        tally = call.tally
        usage = {"prompt_tokens": tally.prompt_tokens, "completion_tokens": tally.completion_tokens}
        self.cache.put(call.key, {**reply.cached(), "usage": usage})
        return replace(reply, record=record)

    def embed(
        self, stage: str, texts: list[str], *, item: str = "", fallback: str = ""
    ) -> list[list[float]]:
        """Embedding vectors of ``texts`` with the stage's model (cached like completions).

        Args:
            fallback: what the caller does instead when the endpoint has no embeddings (answers
                404), e.g. "character 3-gram similarity". Named, that 404 is an expected answer,
                not a failed call: see :meth:`_fell_back`.

        Raises:
            LlmFallbackError: a 404 when ``fallback`` is named. Otherwise as :meth:`complete`.
        """
        if not texts:
            return []
        model = self.settings.for_stage(stage)
        key = request_key({"kind": "embeddings", "model": model.model, "input": texts})
        call = _Call(stage, item, 0, "", model, key)
        cached = self.cache.load(key, CachedVectors)
        if cached is not None and len(cached.vectors) == len(texts):
            call.tally.prompt_tokens = cached.prompt_tokens
            self._record(call, hit=True)
            return cached.vectors

        def request(timeout: Any) -> list[list[float]]:
            response = self._openai.embeddings.create(
                model=model.model,
                input=texts,
                encoding_format="float",
                timeout=timeout,
                extra_headers={STAGE_HEADER: stage},
            )
            call.tally.prompt_tokens += tokens_of(response)[0]
            return vectors_of(response, len(texts))

        try:
            vectors = self._send(call, request)
        except Failure as failure:
            if fallback and failure.status == 404:
                raise self._fell_back(call, failure, fallback) from None
            raise self._failed(call, failure) from None
        self._record(call)
        self.cache.put(key, {"vectors": vectors, "prompt_tokens": call.tally.prompt_tokens})
        return vectors

    def unreachable(self, seconds: float = 5.0) -> str | None:
        """Why the endpoint cannot be used (refused, no such host, no answer in ``seconds``, the
        key refused), or None when it answers anything else: asked once before a run, so a
        wrong URL or key is one line instead of a failure row per item."""
        import openai

        try:
            with deadline_scope(seconds):  # a reply that trickles in ends too
                self._openai.with_options(timeout=seconds, max_retries=0).models.list()
        except openai.APIConnectionError as exc:  # a timeout is one
            cause = exc.__cause__ or exc
            return f"cannot reach the LLM endpoint {self.base_url}: {type(cause).__name__}: {cause}"
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            return f"the LLM endpoint {self.base_url} refused the API key (HTTP {exc.status_code})"
        except openai.APIError:
            return None  # it answered, if only to say it has no model list
        return None

    @property
    def _openai(self) -> Any:
        return shared_openai(self.base_url, self._api_key)

    def _cached_reply(self, call: _Call, schema: type[BaseModel] | None) -> LlmReply | None:
        """The cached reply (its original token counts into the call's tally), or None.

        An entry this code cannot use (wrong shape, empty, failing the schema) is a miss; the
        new reply replaces it.
        """
        entry = self.cache.load(call.key, CachedChat)
        if entry is None:
            return None
        calls = [ToolCall(c.id, c.name, c.arguments) for c in entry.tool_calls]
        if not entry.text.strip() and not calls:
            return None
        try:
            value = parse_reply(entry.text, schema) if schema and not calls else None
        except ReplyError:
            return None
        call.tally.prompt_tokens = entry.usage.prompt_tokens
        call.tally.completion_tokens = entry.usage.completion_tokens
        return LlmReply(entry.text, value, calls, entry.finish_reason)

    def _chat(
        self, call: _Call, conversation: list[dict[str, Any]], extra: dict[str, Any]
    ) -> LlmReply:
        model = call.model

        def request(timeout: Any) -> LlmReply:
            completion = self._openai.chat.completions.create(
                model=model.model,
                messages=conversation,
                temperature=model.temperature,
                timeout=timeout,
                extra_headers={STAGE_HEADER: call.stage},
                **model.length_limit(),
                **extra,
            )
            prompt_tokens, completion_tokens = tokens_of(completion)
            call.tally.prompt_tokens += prompt_tokens
            call.tally.completion_tokens += completion_tokens
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
        """The call's row, added to the collector. A hit's latency is its cache read.

        Every value is already sane (token counts clamped by :func:`tokens_of`, settings
        validated), so building the row cannot fail after a reply was paid for.
        """
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
            latency_seconds=max(0.0, latency),
            queue_seconds=max(0.0, tally.queue_seconds),
            cache_hit=hit,
            attempts=tally.attempts,
            outcome="failed" if failure and failure.error_class != FELL_BACK else "ok",
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
        if failure.error_class == GATE_ERROR:
            return LlmGateError(message, record)
        error_type = LlmUnreachableError if failure.unreachable else LlmCallError
        return error_type(message, record)

    def _fell_back(self, call: _Call, failure: Failure, fallback: str) -> LlmFallbackError:
        """An ``ok`` row whose error says the endpoint lacked the route and what the caller did.

        A server without embeddings is a normal endpoint (most local ones), and the caller's
        fallback is a designed path: a ``failed`` row would count against the run in ``envmill
        stats`` and the report although nothing went wrong, while a row with no note would hide
        that the endpoint's similarity was not used.
        """
        note = Failure(FELL_BACK, f"{failure.message}; fell back to {fallback}")
        record = self._record(call, failure=note)
        where = call.stage + (f" {call.item}" if call.item else "")
        return LlmFallbackError(f"no embeddings ({where}): {record.error}", record)

    def _scrub(self, text: str) -> str:
        """One line, at most 300 characters, with the API key blotted out wherever it appears."""
        return scrub(text)[:300]


def _endpoint(settings: LlmSettings) -> str:
    """The base URL (settings, else ``OPENAI_BASE_URL``), checked: an http(s) URL."""
    base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        raise LlmConfigError(
            "no LLM endpoint configured: set llm.base_url (ENVMILL_LLM__BASE_URL) "
            "or OPENAI_BASE_URL"
        )
    try:
        return check_base_url(base_url).rstrip("/")
    except ValueError as exc:
        where = "llm.base_url" if settings.base_url else "OPENAI_BASE_URL"
        raise LlmConfigError(f"{where} {exc}") from None


def _default_gate_dir(cache_dir: Path | None) -> Path:
    """``_llm_gate`` in the data folder (beside the cache), else a private folder."""
    return cache_dir.parent / "_llm_gate" if cache_dir is not None else private_gate_dir()
