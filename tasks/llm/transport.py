"""One request to the endpoint, retried with backoff under a total deadline: the only retry layer.

The ``openai`` client is built with ``max_retries=0`` and an explicit timeout (its defaults, 2
retries and a 600 s read timeout, can block one call for half an hour; STACK §5), so every retry
happens here, where the deadline and the global limits are known. Retryable: timeouts, dropped
connections, 408/409/429/5xx and empty replies; a 429's ``Retry-After`` is honoured unless it
outlasts the deadline. Not retryable: other 4xx, a reply of the wrong shape, and the deadline
cutting off a reply. An endpoint this process never reached that refuses connections fails at
once: that is a wrong URL or a server that is down, not a hiccup.

The deadline bounds each attempt's sockets (:mod:`connection`); waiting for a slot or the RPM
pace has a budget of its own, as long as the deadline, so a saturated or stuck gate ends too.
Every message made here (Failures, log lines) is scrubbed of the API keys this process holds:
a server may echo the ``Authorization`` header in its error body.
"""

from __future__ import annotations

import email.utils
import hashlib
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import httpx2

if TYPE_CHECKING:
    import openai

from envmill.tasks.llm.connection import (
    DeadlineExceeded,
    deadline_scope,
    http_client,
    load_openai,
    proxy_for,
    shown_proxy,
)
from envmill.tasks.llm.limits import CallLimits, GateTimeout

T = TypeVar("T")
CONNECT_TIMEOUT = 5.0
MAX_BACKOFF = 8.0
NO_KEY = "no-key"  # local servers take any key; the openai client insists on one
# Every request names its stage here, beside the prompt and never in it: a real model ignores
# the header, the offline model (``envmill.tasks.offline_llm``) answers by it.
STAGE_HEADER = "X-Envmill-Stage"

LOG = logging.getLogger(__name__)
_CLIENTS: dict[tuple[Any, ...], openai.OpenAI] = {}
_REACHED: set[str] = set()
_SECRETS: set[str] = set()
_BEARER = re.compile(r"(bearer\s+)[^\s\"',;]+", re.IGNORECASE)
_LOCK = threading.Lock()


GATE_ERROR = "GateError"  # the error class of a failure of the gate, not of the request


class EmptyReplyError(Exception):
    """A 200 reply with no content and no tool calls."""


class UnusableReplyError(Exception):
    """A 200 reply of a shape no caller can use (non-text content parts, a broken tool call)."""


def scrub(text: object) -> str:
    """``text`` on one line, with every API key this process uses and any bearer token blotted."""
    line = " ".join(str(text).split())
    with _LOCK:
        secrets = sorted(_SECRETS, key=len, reverse=True)
    for secret in secrets:
        line = line.replace(secret, "***")
    return _BEARER.sub(r"\1***", line)


def register_secret(secret: str) -> None:
    """Blot ``secret`` out of every message :func:`scrub` cleans from now on."""
    if secret != NO_KEY and len(secret) >= 4:
        with _LOCK:
            _SECRETS.add(secret)


@dataclass(eq=False)
class Failure(Exception):
    """Why a request failed, as one scrubbed line; ``status`` is the HTTP status if there was one.

    ``param`` is the request field an HTTP error names (OpenAI errors carry one).
    """

    error_class: str
    message: str
    retryable: bool = False
    retry_after: float | None = None
    status: int | None = None
    unreachable: bool = False
    param: str = ""

    def __post_init__(self) -> None:
        self.message = scrub(self.message)

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
    """One ``openai.OpenAI`` per process, endpoint and proxy, so connections are reused."""
    openai = load_openai()
    register_secret(api_key)
    digest = hashlib.sha256(api_key.encode()).hexdigest()
    key = (os.getpid(), base_url, digest, proxy_for(base_url))
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            timeout = httpx2.Timeout(120.0, connect=CONNECT_TIMEOUT)
            client = openai.OpenAI(
                base_url=base_url,
                api_key=api_key,
                max_retries=0,
                timeout=timeout,
                http_client=http_client(base_url, timeout),
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
    earlier: Failure | None = None
    for attempt in range(1, max_attempts + 1):
        failure = _attempt(request, base_url, limits, deadline, tally, timeout)
        if not isinstance(failure, Failure):
            return failure
        failure, earlier = _cause(failure, earlier, deadline, attempt), failure
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


def _cause(failure: Failure, earlier: Failure | None, deadline: Deadline, attempt: int) -> Failure:
    """What a call that ran out of time failed of: a retry the deadline cut short (it timed
    out with the budget the deadline left) says nothing the attempt before it did not; a
    persistent 429 stays a RateLimitError, not a timeout."""
    cut_short = failure.error_class in ("APITimeoutError", "DeadlineExceeded")
    if earlier is None or not cut_short or deadline.remaining() > 0:
        return failure
    earlier.retryable = False
    earlier.message += f" (attempt {attempt}, a retry, was cut short by the deadline)"
    return earlier


def _attempt(
    request: Callable[[httpx2.Timeout], T],
    base_url: str,
    limits: CallLimits,
    deadline: Deadline,
    tally: Tally,
    timeout: float,
) -> T | Failure:
    asked = time.monotonic()
    try:
        with limits.slot(_queue_budget(deadline, tally)) as waited:
            tally.queue_seconds += waited
            deadline.start()
            budget = min(timeout, deadline.remaining())
            if budget <= 0:
                return Failure("DeadlineExceeded", f"{deadline.seconds:g}s deadline passed")
            tally.attempts += 1
            try:
                with deadline_scope(deadline.remaining()):
                    result = request(httpx2.Timeout(budget, connect=min(CONNECT_TIMEOUT, budget)))
            except Exception as exc:  # every failure of a request becomes a Failure
                return classify(exc, base_url, budget, deadline.seconds)
            _mark_reached(base_url)
            return result
    except GateTimeout as exc:
        tally.queue_seconds += time.monotonic() - asked
        return Failure("DeadlineExceeded", f"waiting for an LLM slot: {exc}")
    except Exception as exc:  # the gate itself broke: no file handles left, Dask gone
        return Failure(GATE_ERROR, f"the LLM gate failed: {type(exc).__name__}: {exc}")


def _queue_budget(deadline: Deadline, tally: Tally) -> float:
    """Seconds this attempt may wait for a slot: what is left of a budget as long as the
    deadline (queueing is not request time, but it must end), and once the call has started,
    no more than its deadline leaves."""
    budget = deadline.seconds - tally.queue_seconds
    if deadline.started is not None:
        budget = min(budget, deadline.remaining())
    return max(0.0, budget)


def classify(
    exc: Exception, base_url: str, budget: float, deadline_seconds: float | None = None
) -> Failure:
    """The Failure an exception from the openai client (or from reading its reply) stands for."""
    openai = load_openai()
    if isinstance(exc, EmptyReplyError):
        _mark_reached(base_url)
        reason = str(exc) or "the reply had no content and no tool calls"
        return Failure("EmptyReply", reason, retryable=True)
    if isinstance(exc, UnusableReplyError):
        _mark_reached(base_url)
        return Failure("UnusableReply", str(exc))
    if isinstance(exc, openai.APITimeoutError):
        if _caused_by(exc, DeadlineExceeded):
            limit = "the call's" if deadline_seconds is None else f"the {deadline_seconds:g}s"
            return Failure("DeadlineExceeded", f"{limit} deadline passed mid-reply")
        return Failure("APITimeoutError", f"no reply within {budget:.1f}s", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return _connection_failure(exc, base_url)
    if isinstance(exc, openai.APIStatusError):
        return _status_failure(exc, base_url)
    first_line = (str(exc).splitlines() or [""])[0][:200]
    return Failure(type(exc).__name__, first_line or "no message")


def _status_failure(exc: openai.APIStatusError, base_url: str) -> Failure:
    _mark_reached(base_url)
    status = exc.status_code
    retryable = status in (408, 409, 429) or status >= 500
    message = f"HTTP {status}: {_body_message(exc)}"
    retry_after = retry_after_seconds(exc.response.headers) if status == 429 else None
    body = exc.body if isinstance(exc.body, dict) else {}
    param = body.get("param") if isinstance(body.get("param"), str) else ""
    return Failure(type(exc).__name__, message, retryable, retry_after, status, param=param)


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):  # openai -> httpx2 -> httpcore2: a short chain
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _connection_failure(exc: openai.APIConnectionError, base_url: str) -> Failure:
    cause = exc.__cause__
    reason = str(cause).splitlines()[0][:160] if cause and str(cause) else str(exc)
    proxy = proxy_for(base_url)
    via = f" through the proxy {shown_proxy(proxy)} (from *_PROXY)" if proxy else ""
    with _LOCK:
        reached = base_url in _REACHED
    if isinstance(cause, httpx2.ConnectError) and not reached:
        message = f"cannot reach the LLM endpoint {base_url}{via}: {reason}"
        return Failure("EndpointUnreachable", message, unreachable=True)
    return Failure("APIConnectionError", f"connection lost{via}: {reason}", retryable=True)


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
