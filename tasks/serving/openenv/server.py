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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.types import ConcurrencyConfig

from envmill.tasks.serving.openenv.environment import ScenarioEnvironment, ScenarioPool
from envmill.tasks.serving.openenv.models import ScenarioAction, ScenarioObservation

LOOPBACK = "127.0.0.1"


def build_app(pool: ScenarioPool, max_sessions: int = 8, idle_seconds: float = 300.0) -> FastAPI:
    """The FastAPI app of OpenEnv's HTTP API serving ``pool``'s scenarios.

    Built as OpenEnv's ``create_fastapi_app`` builds it, except that OpenEnv's idle-session
    reaper runs in the app's lifespan: OpenEnv 0.3.0 hooks it to ``router.on_startup``, which
    Starlette 1.x no longer runs, so idle sessions (and their sandbox hosts) would never end.
    """
    concurrency = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_seconds)
    server = HTTPEnvServer(
        functools.partial(ScenarioEnvironment, pool),
        ScenarioAction,
        ScenarioObservation,
        concurrency_config=concurrency,
    )

    @asynccontextmanager
    async def reaping(app: FastAPI) -> AsyncIterator[None]:
        server._start_reaper()
        try:
            yield
        finally:
            server._stop_reaper()

    app = FastAPI(title="envmill: certified scenarios (OpenEnv API)", lifespan=reaping)
    server.register_routes(app)
    return app


def serve(app: FastAPI, port: int, host: str = LOOPBACK) -> None:
    """Serve ``app`` until interrupted (uvicorn; Ctrl-C or SIGTERM ends it, and its sessions)."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning", ws="websockets-sansio")
