"""The HTTP server: OpenEnv's own app factory over a :class:`ScenarioPool`, on loopback.

Sessions are OpenEnv's WebSocket sessions (``/ws``; ``EnvClient`` speaks it): each gets its
own :class:`ScenarioEnvironment`, at most ``max_sessions`` at once (one more is refused with
OpenEnv's ``CAPACITY_REACHED`` error). A session ends when its client closes or disconnects,
or after ``idle_seconds`` without a message; either way OpenEnv closes its environment, which
ends the open episode and its sandbox host. OpenEnv's stateless ``POST /reset`` and ``/step``
open an environment per request and close it at once: an episode needs a session.
"""

from __future__ import annotations

import functools

from fastapi import FastAPI
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.types import ConcurrencyConfig

from envmill.tasks.openenv_server.environment import ScenarioEnvironment, ScenarioPool
from envmill.tasks.openenv_server.models import ScenarioAction, ScenarioObservation

LOOPBACK = "127.0.0.1"


def build_app(pool: ScenarioPool, max_sessions: int = 8, idle_seconds: float = 300.0) -> FastAPI:
    """The FastAPI app of OpenEnv's HTTP API serving ``pool``'s scenarios."""
    concurrency = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_seconds)
    return create_fastapi_app(
        functools.partial(ScenarioEnvironment, pool),
        ScenarioAction,
        ScenarioObservation,
        concurrency_config=concurrency,
    )


def serve(app: FastAPI, port: int, host: str = LOOPBACK) -> None:
    """Serve ``app`` until interrupted (uvicorn; Ctrl-C or SIGTERM ends it, and its sessions)."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning", ws="websockets-sansio")
