"""Helpers for the LLM tests: the local endpoint (in this process or its own) and clients of it."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from envmill.schemas.llm import LlmSettings, Price, StageModel
from envmill.tasks.llm import LlmClient
from envmill.tasks.llm.endpoint import Endpoint

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
    """The endpoint in its own process (``python -m envmill.tasks.llm.endpoint``)."""
    command = [sys.executable, "-m", "envmill.tasks.llm.endpoint", "--port", "0", *args]
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
