"""``--local-llm`` starts its endpoint and waits for its first answer before any deadline
applies: under load, a run's own preflight gave up on the endpoint it had just started (issue
24: ``ConnectTimeout: the call's deadline passed``, exit 2)."""

from __future__ import annotations

import socket

import pytest

from envmill.tasks.offline_llm import serve_endpoint
from envmill.tasks.offline_llm.control import Endpoint


def test_the_endpoint_has_answered_once_it_is_handed_out(monkeypatch):
    waited: list[float] = []
    ready = Endpoint.wait_ready

    def recorded(self: Endpoint, timeout: float = 60.0) -> None:
        ready(self, timeout)
        waited.append(timeout)

    monkeypatch.setattr(Endpoint, "wait_ready", recorded)
    with serve_endpoint() as endpoint:
        assert waited, "handed out before its first answer"
        assert isinstance(endpoint.requests(), list)  # and it answers


def test_an_endpoint_that_never_answers_is_an_error_after_the_wait():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(OSError):
        Endpoint(f"http://127.0.0.1:{port}/v1").wait_ready(timeout=0.3)
