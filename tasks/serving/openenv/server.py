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

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.types import ConcurrencyConfig
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from envmill.tasks.serving.openenv.environment import ScenarioEnvironment, ScenarioPool
from envmill.tasks.serving.openenv.models import ScenarioAction, ScenarioObservation

LOOPBACK = "127.0.0.1"
# How long a stop (Ctrl-C, SIGTERM) waits for open sessions before it ends them regardless:
# uvicorn's default waits for every connection, so one stuck client kept a stopped server alive.
SHUTDOWN_SECONDS = 5
# The largest message a client may send (an assistant turn: tool calls and text); uvicorn's
# default of 16 MiB let one session grow the server by gigabytes in a few steps.
MAX_MESSAGE_BYTES = 1 << 20


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
    for error, status in CLIENT_ERRORS.items():
        app.add_exception_handler(error, functools.partial(_refused, status))
    app.add_middleware(QuietDisconnects)
    return app


# What an environment raises for a request it cannot take (the scenario is not served here, an
# option is out of range, no episode is open or no room for one), answered as one-line 4xx
# responses: uvicorn logged each as a 5-KB traceback and a 500, so a client polling ``/state``
# at a full server filled its supervisor's log.
CLIENT_ERRORS = {KeyError: 404, ValueError: 422, RuntimeError: 409}


async def _refused(status: int, request: Request, exc: Exception) -> JSONResponse:
    detail = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    return JSONResponse({"detail": str(detail)}, status_code=status)


class QuietDisconnects:
    """A client that leaves is not a server error. OpenEnv 0.3.0's ``/ws`` endpoint still
    sends to a session whose client has gone (its reply, then an error saying the reply
    failed, then the close); each send raised, and uvicorn logged a 3- to 5-KB traceback per
    session, enough to fill an unread stderr pipe within a dozen sessions and stall the
    server's event loop. Here a send after the client left does nothing: the endpoint's next
    ``receive`` sees the disconnect and ends the session as OpenEnv intends. Every other
    exception still propagates and is logged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        gone = False

        async def send_while_connected(message: Message) -> None:
            nonlocal gone
            if gone:
                return
            try:
                await send(message)
            except OSError:  # uvicorn's ClientDisconnected
                gone = True

        await self.app(scope, receive, send_while_connected)


def serve(app: FastAPI, port: int, host: str = LOOPBACK) -> None:
    """Serve ``app`` until interrupted (uvicorn; Ctrl-C or SIGTERM ends it, and its sessions,
    within ``SHUTDOWN_SECONDS``). SIGUSR1 prints every thread's stack to stderr: what an operator
    needs to see where a server that stopped answering is waiting."""
    import faulthandler
    import signal

    import uvicorn

    faulthandler.register(signal.SIGUSR1, all_threads=True)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        ws="websockets-sansio",
        ws_max_size=MAX_MESSAGE_BYTES,
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
    )
