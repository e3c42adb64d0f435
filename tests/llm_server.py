"""Helpers for the LLM tests: the local endpoint (in this process or its own), clients of it, and
a proxy that records what a client sends."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest

from envmill.schemas.llm import LlmSettings, Price, StageModel
from envmill.tasks.llm import LlmClient
from envmill.tasks.offline_llm import Endpoint

T = TypeVar("T")
TEST_MODEL = "fake-model"
# Tight timings keep the fault tests fast: a hang is noticed after 0.5 s, a call gives up at 3 s.
TEST_STAGE = StageModel(
    model=TEST_MODEL, temperature=0.0, max_tokens=512, timeout_seconds=0.5, deadline_seconds=3.0
)


def llm_settings(url: str, **overrides: Any) -> LlmSettings:
    """Settings for the local endpoint with test timings; ``overrides`` replace any field."""
    values: dict[str, Any] = {
        "base_url": url,
        "api_key": "sk-test-not-a-real-key",
        "default": TEST_STAGE,
        "retry_backoff_seconds": 0.05,
        "prices": {TEST_MODEL: Price(input=1.0, output=2.0)},
    }
    values.update(overrides)
    return LlmSettings(**values)


def make_client(url: str, folder: Path, **overrides: Any) -> LlmClient:
    """A client with its cache and gate under ``folder`` (each test its own)."""
    settings = llm_settings(url, **overrides)
    return LlmClient(settings, cache_dir=folder / "_llm_cache", gate_dir=folder / "_llm_gate")


def fire_calls(url: str, folder: str, cap: int, calls: int, tag: str) -> int:
    """In a worker process: ``calls`` concurrent uncached calls under a global cap of ``cap``."""
    client = make_client(url, Path(folder), max_concurrency=cap, cache=False)
    messages = [[{"role": "user", "content": f"{tag} call {i}"}] for i in range(calls)]
    with ThreadPoolExecutor(calls) as pool:
        replies = list(pool.map(lambda m: client.complete("cap", m), messages))
    return sum(bool(reply.text) for reply in replies)


@contextmanager
def spawn_endpoint(*args: str) -> Iterator[Endpoint]:
    """The endpoint in its own process (``python -m envmill.tasks.offline_llm``)."""
    command = [sys.executable, "-m", "envmill.tasks.offline_llm", "--port", "0", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url

        def close() -> None:
            process.terminate()
            process.wait(timeout=10)

        yield Endpoint(url, close)
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)
        process.stdout.close()


def elapsed_since(start: float) -> float:
    return time.monotonic() - start


def within(seconds: float, function: Callable[[], T]) -> T:
    """``function()`` on a thread; the test fails at once if it is still running after
    ``seconds`` (a hang must not cost the suite minutes). Its exception is re-raised here."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:  # handed to the test thread below
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds:g}s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def free_port() -> int:
    """A port nothing listens on (bound and released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def completion_json(message: dict[str, Any], usage: Any = None) -> dict[str, Any]:
    """A chat.completion body with ``message``; ``usage`` verbatim, or none when None."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": TEST_MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


@dataclass(frozen=True)
class Recorded:
    """One request a :func:`recording_proxy` saw: method, path, headers and the raw body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@contextmanager
def recording_proxy(upstream: str) -> Iterator[tuple[str, list[Recorded]]]:
    """An HTTP server on 127.0.0.1 that records every request (headers and body, as sent) and
    passes it on to ``upstream`` (a ``…/v1`` URL); yields its own ``…/v1`` URL and the list."""
    seen: list[Recorded] = []
    lock = threading.Lock()
    root = upstream.removesuffix("/v1")
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
            """Quiet."""

        def do_GET(self) -> None:
            self.relay(b"")

        def do_POST(self) -> None:
            self.relay(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        def relay(self, body: bytes) -> None:
            headers = dict(self.headers.items())
            with lock:
                seen.append(Recorded(self.command, self.path, headers, body))
            passed = {k: v for k, v in headers.items() if k.lower() not in _HOP_HEADERS}
            request = urllib.request.Request(
                root + self.path, data=body or None, headers=passed, method=self.command
            )
            try:
                with direct.open(request, timeout=60) as response:
                    status, answer = response.status, response.read()
            except urllib.error.HTTPError as error:
                status, answer = error.code, error.read()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


_HOP_HEADERS = {"host", "content-length", "connection", "accept-encoding", "transfer-encoding"}
