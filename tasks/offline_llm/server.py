"""A local OpenAI-compatible HTTP endpoint: the LLM of tests and benchmarks (DESIGN §8).

Real HTTP on 127.0.0.1, so the real ``openai`` client is exercised. Answers come from the
responder registry (per stage), after an optional latency, unless a queued fault says otherwise.
The admin routes (``/_stats``, ``/_faults``, ``/_requests``, ``/_config``, ``/_scripts``,
``/_reset``) steer it from tests, also when it runs in another process; ``/_scripts`` holds the
replies of a rollout's two roles (``scripts.py``, ``rollout.py``). STACK §5's settings are not
optional: without ``disable_nagle_algorithm`` every request costs ~44 ms, without a deep listen
queue concurrent clients wait on SYN retries, and without daemon threads a hung request blocks
exit.

A request is answered by the responder of the stage its ``X-Envmill-Stage`` header names (the
header envmill's client sends); a chat request without it gets a 400 saying so, never a guess.
A bad request body gets a 400 and a crash of the endpoint's own code a 500 naming it: the
connection drops only when a ``drop`` (or ``hang``) fault asks for it.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from envmill.tasks.llm.transport import STAGE_HEADER
from envmill.tasks.offline_llm.checks import (
    chat_problem,
    config_problem,
    content_length,
    embeddings_problem,
)
from envmill.tasks.offline_llm.faults import Fault, FaultQueue
from envmill.tasks.offline_llm.responders import (
    ChatRequest,
    completion_body,
    count_tokens,
    embed_text,
    encode_vector,
    respond,
    spoil,
)
from envmill.tasks.offline_llm.scripts import ScriptBook, parse_scripts
from envmill.tasks.offline_llm.stats import EndpointStats

CHAT, EMBEDDINGS = "/v1/chat/completions", "/v1/embeddings"


@dataclass
class EndpointConfig:
    """How the endpoint behaves; ``latency`` is seconds, fixed or (low, high) sampled;
    ``slips``: mistakes the fake model makes in SkelBuilder's stages (see ``slips.Slip``);
    ``style``: who writes the environments and scenarios, ``procedural`` (cut from envmill's own
    procedural backend) or ``model`` (the designs and voice of ``model_style``)."""

    latency: float | tuple[float, float] = 0.0
    seed: int = 0
    refuse_response_format: bool = False
    embedding_dimensions: int = 64
    slips: list[dict[str, Any]] = field(default_factory=list)
    style: str = "procedural"

    def __post_init__(self) -> None:
        if isinstance(self.latency, list):
            self.latency = (self.latency[0], self.latency[1]) if len(self.latency) == 2 else ()
        for item in fields(self):
            problem = config_problem(item.name, getattr(self, item.name))
            if problem:
                raise ValueError(problem)

    def updated(self, changes: Any) -> EndpointConfig:
        """A copy with ``changes`` (a JSON object of settings); ValueError for a bad one."""
        if not isinstance(changes, dict):
            raise ValueError("the body must be a JSON object of settings")
        for name in changes:
            if name not in {item.name for item in fields(self)}:
                raise ValueError(f"unknown setting '{name}'")
        return replace(self, **changes)


class EndpointServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    def __init__(self, host: str, port: int, config: EndpointConfig) -> None:
        super().__init__((host, port), _Handler)
        self.config = config
        self.stats = EndpointStats()
        self.faults = FaultQueue()
        self.scripts = ScriptBook()
        self.closing = threading.Event()
        self._rng = random.Random(config.seed)
        self._rng_lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def latency(self) -> float:
        latency = self.config.latency
        if isinstance(latency, int | float):
            return float(latency)
        with self._rng_lock:
            return self._rng.uniform(*latency)

    def pause(self, seconds: float) -> None:
        """Sleep, but wake when the server closes (a hang must not outlive its server)."""
        if seconds > 0:
            self.closing.wait(seconds)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout, closed socket) is normal here, not an error."""

    def server_close(self) -> None:
        self.closing.set()
        super().server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: EndpointServer
    timeout = 60  # a client that stops sending mid-request frees its thread after this
    replied = False  # this request's answer has started (so a 500 can no longer be sent)
    _settle: Callable[[], None] | None = None  # ends the in-flight count of this request

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Quiet: tests read /_stats, not logs."""

    def do_GET(self) -> None:
        self.replied = False
        path = urlsplit(self.path)
        if path.path == "/v1/models":
            model = {"id": "envmill-fake", "object": "model", "created": 0, "owned_by": "envmill"}
            self.send_json(200, {"object": "list", "data": [model]})
        elif path.path == "/_stats":
            self.send_json(200, self.server.stats.snapshot())
        elif path.path == "/_requests":
            stage = parse_qs(path.query).get("stage", [None])[0]
            self.send_json(200, self.server.stats.requests(stage))
        else:
            self.send_json(404, _error(f"no route GET {path.path}", "not_found"))

    def do_POST(self) -> None:
        self.replied = False
        length = content_length(self.headers.get("Content-Length"))
        if length is None or self.headers.get("Transfer-Encoding"):
            # Where this body ends is unknown (chunked bodies are not read): answer, then close.
            self.close_connection = True
            self.send_json(
                400, _error("a bad Content-Length or a chunked body", "invalid_request_error")
            )
            return
        try:
            body = json.loads(self.rfile.read(length))
        except ValueError:
            self.send_json(400, _error("the body is not JSON", "invalid_request_error"))
            return
        route = urlsplit(self.path).path
        handler = _POST_ROUTES.get(route)
        if handler is None:
            self.send_json(404, _error(f"no route POST {route}", "not_found"))
            return
        try:
            handler(self, body)
        except Exception as exc:  # the endpoint's own bug: say so rather than drop the client
            if self.replied:
                self.close_connection = True
                raise
            message = f"endpoint error: {type(exc).__name__}: {exc}"
            self.send_json(500, _error(message, "server_error"))

    def send_json(
        self,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
        trickle: float = 0.0,
    ) -> None:
        """Answer with JSON; ``trickle``: the whole answer a byte every that many seconds."""
        self.replied = True
        data = json.dumps(payload).encode()
        if trickle:
            self.send_slowly(status, data, trickle)
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.settle()
        self.wfile.write(data)

    def send_slowly(self, status: int, data: bytes, interval: float) -> None:
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        whole = head.encode() + data
        for index in range(len(whole)):
            if self.server.closing.is_set():
                self.close_connection = True
                return
            if index == len(whole) - 1:
                self.settle()
            self.wfile.write(whole[index : index + 1])
            self.server.pause(interval)

    @contextmanager
    def counted(self, route: str, stage: str, body: Any) -> Iterator[None]:
        """Count the request in flight until its reply's last bytes go out, not after: by then
        the client may hold the reply and have sent its next request."""
        self.server.stats.begin(route, stage, body)
        self._settle = self.server.stats.end
        try:
            yield
        finally:
            self.settle()

    def settle(self) -> None:
        """End the count of a request in flight (once)."""
        settle, self._settle = self._settle, None
        if settle is not None:
            settle()

    def refuse(self, problem: str) -> None:
        """A 400 for a request body of the wrong structure."""
        self.send_json(400, _error(problem, "invalid_request_error"))

    def drop(self) -> None:
        """Close the connection without a reply."""
        self.close_connection = True


def _chat(handler: _Handler, body: Any) -> None:
    problem = chat_problem(body)
    if problem:
        handler.refuse(problem)
        return
    stage = (handler.headers.get(STAGE_HEADER) or "").strip()
    if not stage:
        handler.refuse(
            f"no {STAGE_HEADER} header: this offline model answers by stage, which envmill's "
            "LLM client names in that header"
        )
        return
    server = handler.server
    config = server.config
    request = ChatRequest(body, stage, config.slips, server.scripts, config.style)
    with handler.counted(CHAT, request.stage, body):
        fault = server.faults.take(request.stage)
        if fault is not None:
            server.stats.fault(fault.kind)
        server.pause(server.latency())
        if fault is not None and not _transport_fault(handler, fault):
            return
        format_type = (body.get("response_format") or {}).get("type")
        if server.config.refuse_response_format and format_type == "json_schema":
            message = "response_format of type json_schema is not supported by this model"
            handler.send_json(400, _error(message, "invalid_request_error", "response_format"))
            return
        reply = respond(request)
        if fault is not None and fault.kind != "trickle":
            reply = spoil(reply, fault.kind)
        handler.send_json(200, completion_body(body, reply), trickle=_trickle(fault))


def _trickle(fault: Fault | None) -> float:
    return fault.seconds if fault is not None and fault.kind == "trickle" else 0.0


def _transport_fault(handler: _Handler, fault: Fault) -> bool:
    """Apply an HTTP-level fault; True when the request goes on to a (maybe spoiled) answer."""
    if fault.kind == "status":
        headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
        token = handler.headers.get("Authorization", "").removeprefix("Bearer ")
        text = (fault.message or f"injected HTTP {fault.status}").replace("{api_key}", token)
        error = _error(text, "server_error", code=str(fault.status))
        handler.send_json(fault.status, error, headers)
        return False
    if fault.kind == "raw":
        handler.send_json(fault.status, fault.body)
        return False
    if fault.kind == "hang":
        handler.server.pause(fault.seconds)
        handler.drop()
        return False
    if fault.kind == "drop":
        handler.drop()
        return False
    return True


def _embeddings(handler: _Handler, body: Any) -> None:
    problem = embeddings_problem(body)
    if problem:
        handler.refuse(problem)
        return
    server = handler.server
    with handler.counted(EMBEDDINGS, "embeddings", body):
        fault = server.faults.take("embeddings")
        if fault is not None:
            server.stats.fault(fault.kind)
        server.pause(server.latency())
        if fault is not None and not _transport_fault(handler, fault):
            return
        texts = body["input"]
        texts = [texts] if isinstance(texts, str) else texts
        size = body.get("dimensions") or server.config.embedding_dimensions
        as_base64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": encode_vector(embed_text(t, size), as_base64),
            }
            for i, t in enumerate(texts)
        ]
        tokens = sum(count_tokens(t) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        reply = {"object": "list", "data": data, "model": body.get("model", ""), "usage": usage}
        handler.send_json(200, reply, trickle=_trickle(fault))


def _admin_faults(handler: _Handler, body: Any) -> None:
    try:
        if not isinstance(body, list):
            raise ValueError("the body must be a JSON array of faults")
        faults = [Fault.from_dict(item) for item in body]
    except (TypeError, ValueError) as exc:
        handler.send_json(400, _error(f"bad fault: {exc}", "invalid_request_error"))
        return
    handler.server.faults.add(faults)
    handler.send_json(200, {"pending": handler.server.faults.pending()})


def _admin_config(handler: _Handler, body: Any) -> None:
    try:
        handler.server.config = handler.server.config.updated(body)
    except (TypeError, ValueError) as exc:
        handler.send_json(400, _error(str(exc), "invalid_request_error"))
        return
    handler.send_json(200, {"ok": True})


def _admin_scripts(handler: _Handler, body: Any) -> None:
    try:
        scripts = parse_scripts(body)
    except ValueError as exc:
        handler.send_json(400, _error(f"bad script: {exc}", "invalid_request_error"))
        return
    handler.send_json(200, {"scripts": handler.server.scripts.add(scripts)})


def _admin_reset(handler: _Handler, body: Any) -> None:
    handler.server.stats.reset()
    handler.server.faults.clear()
    handler.server.scripts.clear()
    handler.send_json(200, {"ok": True})


def _error(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


_POST_ROUTES = {
    CHAT: _chat,
    EMBEDDINGS: _embeddings,
    "/_faults": _admin_faults,
    "/_config": _admin_config,
    "/_scripts": _admin_scripts,
    "/_reset": _admin_reset,
}
