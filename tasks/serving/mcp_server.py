"""The MCP adapter: a ``ToolSession`` per MCP connection, served by the official ``mcp`` SDK.

The environment's tool schemas become MCP tools (name, description, ``inputSchema``), less those
the scenario withholds; each call answers with the tool's result object as JSON text and as
structured content (``isError`` when it reports ``success: false``). envmill's own tools,
``reset_scenario``, ``reward`` and (multi-turn) ``next_message``, are the trainer's, not the
agent's: they are not listed and answer only a call that carries the server's control token.
An agent that could call ``reward`` would read the expected answer from its reasons and score
1.0 without doing the task; one that could call ``next_message`` would hear turns early.

Over stdio there is one connection. Over streamable HTTP each MCP session (its
``mcp-session-id``) gets a state of its own, started from the chosen scenario, so parallel
rollouts do not share an environment; the least recently used of more than ``limit`` is
closed, and a later call of a closed session is refused, never answered from a fresh state
(the trainer would score the wrong scenario). Every tool call runs in a worker thread, so a
slow environment never blocks the loop; the environment itself runs in envmill's sandbox,
never in this process.
"""

from __future__ import annotations

import hmac
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from envmill.schemas.ids import canonical_json
from envmill.tasks.serving.session import ToolSession

RESET, REWARD, NEXT = "reset_scenario", "reward", "next_message"
OWN_TOOLS = (RESET, REWARD, NEXT)
TOKEN_ARGUMENT = "control_token"  # what a call of envmill's own tools carries
MAX_SESSIONS = 32  # HTTP sessions kept, each with one sandbox host
SESSION_HEADER = "mcp-session-id"


class SessionClosed(Exception):
    """A call of a session the pool closed to make room."""


class SessionPool:
    """The ``ToolSession`` of each connection, made on first use; the oldest beyond
    ``limit`` is closed (its sandbox host stops)."""

    def __init__(self, open_session: Callable[[], ToolSession], limit: int = MAX_SESSIONS):
        self.open_session, self.limit = open_session, limit
        self._sessions: OrderedDict[str | None, ToolSession] = OrderedDict()
        self._closed: set[str | None] = set()
        self._lock = threading.Lock()

    def get(self, key: str | None) -> ToolSession:
        """The connection's session; raises SessionClosed for one closed to make room."""
        with self._lock:
            if key in self._closed:
                raise SessionClosed(f"this session was closed: more than {self.limit} at once")
            session = self._sessions.pop(key, None) or self.open_session()
            self._sessions[key] = session
            evicted = [
                self._sessions.popitem(last=False) for _ in range(len(self._sessions) - self.limit)
            ]
            self._closed.update(old_key for old_key, _ in evicted)
        for _, old in evicted:
            old.close()
        return session

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), OrderedDict()
        for session in sessions:
            session.close()


def mcp_tools(session: ToolSession) -> list[types.Tool]:
    """The tools offered now: the environment's, as its schemas say (never envmill's own)."""
    return [
        types.Tool(
            name=schema["function"]["name"],
            description=schema["function"].get("description") or None,
            input_schema=_object_schema(schema["function"].get("parameters")),
        )
        for schema in session.tools()
    ]


def _object_schema(parameters: Any) -> dict[str, Any]:
    """An MCP input schema is a JSON Schema object at its root; a tool without parameters
    takes an empty object."""
    if isinstance(parameters, dict) and parameters.get("type") == "object":
        return parameters
    return {"type": "object", "properties": {}}


def answer(
    session: ToolSession, name: str, arguments: dict[str, Any], token: str
) -> dict[str, Any]:
    """What a call of ``name`` returns: a tool's result object, or, for a call that carries the
    control ``token``, one of envmill's own."""
    if name not in OWN_TOOLS:
        return session.call(name, arguments)
    given = arguments.pop(TOKEN_ARGUMENT, None)
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), token.encode()):
        return {"success": False, "error": f"{name} is the trainer's: it needs the control token"}
    if name == RESET:
        scenario = arguments.get("scenario_id")
        if scenario is not None and not isinstance(scenario, str):
            return {"success": False, "error": "scenario_id must be a string"}
        return session.reset(scenario or None)
    if name == REWARD:
        reply = arguments.get("final_reply")
        if reply is not None and not isinstance(reply, str):
            return {"success": False, "error": "final_reply must be a string"}
        return session.reward(reply or "").as_json()
    if session.spec.scenario.turns:
        return session.next_message()
    return {"success": False, "error": "this scenario has no later user message"}


def as_call_result(result: dict[str, Any]) -> types.CallToolResult:
    text = canonical_json(result)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=json.loads(text),
        is_error=result.get("success") is False,
    )


def build_server(pool: SessionPool, name: str, token: str, instructions: str = "") -> Server:
    """A low-level MCP server whose tools are the pool's sessions' tools; envmill's own answer
    calls that carry ``token``."""

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            session = pool.get(_connection_key(ctx))
        except SessionClosed:
            return types.ListToolsResult(tools=[])
        return types.ListToolsResult(tools=mcp_tools(session))

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            session = pool.get(_connection_key(ctx))
        except SessionClosed as exc:
            return as_call_result({"success": False, "error": f"{exc}; start a new session"})
        arguments = dict(params.arguments or {})
        result = await anyio.to_thread.run_sync(answer, session, params.name, arguments, token)
        return as_call_result(result)

    return Server(
        name, instructions=instructions or None, on_list_tools=list_tools, on_call_tool=call_tool
    )


def _connection_key(ctx: ServerRequestContext) -> str | None:
    """The HTTP session's id (None over stdio, where there is one connection)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    return headers.get(SESSION_HEADER) if headers is not None else None


async def serve_stdio(server: Server) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_http(server: Server, port: int, ready: Callable[[int], None] | None = None) -> None:
    """Streamable HTTP on 127.0.0.1 only, path ``/mcp``; ``port`` 0 takes a free one, which
    ``ready`` is told once the socket listens."""
    import socket

    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    listener = socket.create_server(("127.0.0.1", port))
    if ready is not None:
        ready(listener.getsockname()[1])
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[listener])
