"""How requests reach the endpoint: an httpx2 client whose sockets obey the call's deadline.

httpx timeouts bound one socket operation, not a request: a reply that trickles in a byte at a
time never trips a 3 s read timeout and can hold a call for minutes (STACK §5). So every
connect, read and write of a request made inside :func:`deadline_scope` gets the smaller of its
own timeout and the time the call has left, and once that is gone the next one fails. When the
deadline cuts off a reply that had started to arrive, the error is :class:`DeadlineExceeded`
(a read timeout, so openai reports it as ``APITimeoutError`` and :mod:`transport` can name it);
a server that sent nothing at all stays an ordinary timeout.

Proxies: a loopback endpoint never goes through one (an exported ``HTTP_PROXY`` would otherwise
break ``envmill llm check --local``); any other follows ``*_PROXY`` / ``NO_PROXY`` like httpx.
"""

from __future__ import annotations

import ipaddress
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore2
import httpx2


class DeadlineExceeded(httpcore2.ReadTimeout):
    """The call's deadline passed while its reply was still arriving."""


@dataclass
class _Clock:
    """One attempt's view of the call deadline; ``received``: some reply bytes have arrived."""

    end: float
    received: bool = False

    def left(self) -> float:
        return self.end - time.monotonic()


_CLOCK: ContextVar[_Clock | None] = ContextVar("envmill_llm_deadline", default=None)


@contextmanager
def deadline_scope(seconds: float) -> Iterator[None]:
    """Socket operations in this block (this thread or task) end within ``seconds``."""
    token = _CLOCK.set(_Clock(time.monotonic() + seconds))
    try:
        yield
    finally:
        _CLOCK.reset(token)


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to the time left; raises ``error`` (or DeadlineExceeded) when none is."""
    clock = _CLOCK.get()
    if clock is None:
        return timeout
    left = clock.left()
    if left <= 0:
        raise (DeadlineExceeded if clock.received else error)("the call's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        clock = _CLOCK.get()
        limit = _bounded(timeout, httpcore2.ReadTimeout)
        try:
            data = self._inner.read(max_bytes, limit)
        except httpcore2.ReadTimeout as exc:
            if clock is not None and clock.received and clock.left() <= 0:
                raise DeadlineExceeded("the call's deadline passed") from exc
            raise
        if data and clock is not None:
            clock.received = True
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        limit = _bounded(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, limit))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore2.NetworkBackend):
    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        limit = _bounded(timeout, httpcore2.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, limit, local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        limit = _bounded(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, limit, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineTransport(httpx2.HTTPTransport):
    """httpx2's transport with every socket of its pool wrapped by the deadline."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # httpx2 has no option for httpcore2's network backend; its pool takes one before it
        # opens a connection. Fail loudly if a new version moves it rather than lose the bound.
        pool = self._pool
        if not isinstance(getattr(pool, "_network_backend", None), httpcore2.NetworkBackend):
            raise RuntimeError("httpx2's connection pool changed: no network backend to wrap")
        pool._network_backend = _DeadlineBackend(pool._network_backend)


def load_openai():  # unannotated: inferred as the openai module, so isinstance narrows
    """The ``openai`` package, imported when a client is first made, not with this module: a run
    that asks no model never pays its import (about a second). One thread imports it at a time
    (threads importing one package at once can meet the import-lock deadlock detection, as
    Prefect's did), and before any LLM slot is taken (``LlmClient`` loads it as it is made or
    unpickled on a worker): an import inside a slot held it for seconds on a loaded machine."""
    with _OPENAI_IMPORT:
        import openai
    return openai


_OPENAI_IMPORT = threading.Lock()


def http_client(base_url: str, timeout: httpx2.Timeout) -> httpx2.Client:
    """The httpx2 client for one endpoint: deadline-bound sockets, the proxy it should use."""
    openai = load_openai()
    transport = DeadlineTransport(
        proxy=proxy_for(base_url), limits=openai.DEFAULT_CONNECTION_LIMITS, trust_env=True
    )
    # trust_env=False: the proxy is chosen above, per endpoint (the transport still reads
    # SSL_CERT_FILE and friends); the other settings are openai's defaults.
    return httpx2.Client(
        transport=transport, timeout=timeout, follow_redirects=True, trust_env=False
    )


def proxy_for(base_url: str) -> str | None:
    """The proxy the environment names for ``base_url``; None for loopback or NO_PROXY hosts."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if is_loopback(host):
        return None
    proxies = urllib.request.getproxies()
    if proxies.get("no") and urllib.request.proxy_bypass_environment(host, proxies):
        return None
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy:
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def shown_proxy(proxy: str) -> str:
    """A proxy URL without its user and password, for an error message."""
    parts = urlsplit(proxy)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def is_loopback(host: str) -> bool:
    """``localhost``, ``*.localhost``, 127.0.0.0/8 or ::1."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
