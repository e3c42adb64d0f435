"""One request to the endpoint, retried with backoff under a total deadline: the only retry layer.

The ``openai`` client is built with ``max_retries=0`` and an explicit timeout (its defaults, 2
retries and a 600 s read timeout, can block one call for half an hour; STACK §5), so every retry
happens here, where the deadline and the global limits are known. Retryable: timeouts, dropped
connections, 408/409/429/5xx and empty replies; a 429's ``Retry-After`` is honoured unless it
outlasts the deadline. Not retryable: other 4xx. An endpoint this process never reached that
refuses connections fails at once: that is a wrong URL or a server that is down, not a hiccup.
"""

from __future__ import annotations

import email.utils
import hashlib
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2
import openai

from envmill.tasks.llm.limits import CallLimits, GateTimeout

T = TypeVar("T")
CONNECT_TIMEOUT = 5.0
MAX_BACKOFF = 8.0

LOG = logging.getLogger(__name__)
_CLIENTS: dict[tuple[int, str, str], openai.OpenAI] = {}
_REACHED: set[str] = set()
_LOCK = threading.Lock()


class EmptyReplyError(Exception):
    """A 200 reply with no content and no tool calls."""


@dataclass(eq=False)
class Failure(Exception):
    """Why a request failed, as one line; ``status`` is the HTTP status when there was one."""

    error_class: str
    message: str
    retryable: bool = False
    retry_after: float | None = None
    status: int | None = None
    unreachable: bool = False

    def __str__(self) -> str:
        return f"{self.error_class}: {self.message}"


@dataclass
class Deadline:
    """A call's time budget; the clock starts with its first request, not while it queues."""

    seconds: float
    started: float | None = None

    def start(self) -> None:
        if self.started is None:
            self.started = time.monotonic()

    def remaining(self) -> float:
        if self.started is None:
            return self.seconds
        return self.seconds - (time.monotonic() - self.started)

    def elapsed(self) -> float:
        return 0.0 if self.started is None else time.monotonic() - self.started


@dataclass
class Tally:
    """What one call spent: HTTP requests, seconds queued, tokens."""

    attempts: int = 0
    queue_seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def shared_openai(base_url: str, api_key: str) -> openai.OpenAI:
    """One ``openai.OpenAI`` per process and endpoint, so connections are reused."""
    digest = hashlib.sha256(api_key.encode()).hexdigest()
    key = (os.getpid(), base_url, digest)
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            timeout = httpx2.Timeout(120.0, connect=CONNECT_TIMEOUT)
            client = openai.OpenAI(
                base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout
            )
            _CLIENTS[key] = client
        return client


def send(
    request: Callable[[httpx2.Timeout], T],
    *,
    base_url: str,
    limits: CallLimits,
    deadline: Deadline,
    tally: Tally,
    timeout: float,
    max_attempts: int,
    backoff: float,
) -> T:
    """``request(timeout)`` until it succeeds, fails for good, or the deadline leaves no room."""
    for attempt in range(1, max_attempts + 1):
        failure = _attempt(request, base_url, limits, deadline, tally, timeout)
        if not isinstance(failure, Failure):
            return failure
        if not failure.retryable or attempt == max_attempts:
            raise failure
        wait = (
            failure.retry_after if failure.retry_after is not None else _backoff(backoff, attempt)
        )
        if wait >= deadline.remaining():
            failure.message += f" (no retry: {wait:.1f}s wait exceeds the deadline)"
            raise failure
        LOG.debug("LLM attempt %d failed (%s); retrying in %.2fs", attempt, failure, wait)
        time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _attempt(
    request: Callable[[httpx2.Timeout], T],
    base_url: str,
    limits: CallLimits,
    deadline: Deadline,
    tally: Tally,
    timeout: float,
) -> T | Failure:
    queue_timeout = None if deadline.started is None else max(0.0, deadline.remaining())
    try:
        with limits.slot(queue_timeout) as waited:
            tally.queue_seconds += waited
            deadline.start()
            budget = min(timeout, deadline.remaining())
            if budget <= 0:
                return Failure("DeadlineExceeded", f"{deadline.seconds:g}s deadline passed")
            tally.attempts += 1
            try:
                result = request(httpx2.Timeout(budget, connect=min(CONNECT_TIMEOUT, budget)))
            except Exception as exc:  # classified below; anything unknown is re-raised there
                return classify(exc, base_url, budget)
            with _LOCK:
                _REACHED.add(base_url)
            return result
    except GateTimeout as exc:
        return Failure("DeadlineExceeded", f"waiting for an LLM slot: {exc}")


def classify(exc: Exception, base_url: str, budget: float) -> Failure:
    """The Failure an exception from the openai client stands for."""
    if isinstance(exc, EmptyReplyError):
        _mark_reached(base_url)
        reason = str(exc) or "the reply had no content and no tool calls"
        return Failure("EmptyReply", reason, retryable=True)
    if isinstance(exc, openai.APITimeoutError):
        return Failure("APITimeoutError", f"no reply within {budget:.1f}s", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return _connection_failure(exc, base_url)
    if isinstance(exc, openai.APIStatusError):
        _mark_reached(base_url)
        status = exc.status_code
        retryable = status in (408, 409, 429) or status >= 500
        message = f"HTTP {status}: {_body_message(exc)}"
        retry_after = retry_after_seconds(exc.response.headers) if status == 429 else None
        return Failure(type(exc).__name__, message, retryable, retry_after, status)
    if isinstance(exc, openai.OpenAIError):
        return Failure(type(exc).__name__, str(exc).splitlines()[0][:200])
    raise exc


def _connection_failure(exc: openai.APIConnectionError, base_url: str) -> Failure:
    cause = exc.__cause__
    reason = str(cause).splitlines()[0][:160] if cause else str(exc)
    with _LOCK:
        reached = base_url in _REACHED
    if isinstance(cause, httpx2.ConnectError) and not reached:
        message = f"cannot reach the LLM endpoint {base_url}: {reason}"
        return Failure("EndpointUnreachable", message, unreachable=True)
    return Failure("APIConnectionError", f"connection lost: {reason}", retryable=True)


def _mark_reached(base_url: str) -> None:
    with _LOCK:
        _REACHED.add(base_url)


def _body_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        text = body["message"]
    else:
        text = str(exc.message)
    return " ".join(text.split())[:200]


def retry_after_seconds(headers: Any) -> float | None:
    """``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), if present and sane."""
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _backoff(base: float, attempt: int) -> float:
    """Exponential with jitter: base × 2^(attempt-1), capped, times 0.5–1."""
    return min(MAX_BACKOFF, base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
