"""A local OpenAI-compatible HTTP endpoint: the LLM of tests and benchmarks (DESIGN §8).

Real HTTP on 127.0.0.1, so the real ``openai`` client is exercised. Answers come from the
responder registry (per stage), after an optional latency, unless a queued fault says otherwise.
The admin routes (``/_stats``, ``/_faults``, ``/_requests``, ``/_config``, ``/_reset``) steer it
from tests, also when it runs in another process. STACK §5's settings are not optional: without
``disable_nagle_algorithm`` every request costs ~44 ms, without a deep listen queue concurrent
clients wait on SYN retries, and without daemon threads a hung request blocks exit.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from envmill.tasks.llm.endpoint.faults import Fault, FaultQueue, spoil_content
from envmill.tasks.llm.endpoint.responders import (
    ChatReply,
    ChatRequest,
    embed_text,
    encode_vector,
    respond,
)
from envmill.tasks.llm.endpoint.stats import EndpointStats

CHAT, EMBEDDINGS = "/v1/chat/completions", "/v1/embeddings"


@dataclass
class EndpointConfig:
    """How the endpoint behaves; ``latency`` is seconds, fixed or (low, high) sampled."""

    latency: float | tuple[float, float] = 0.0
    seed: int = 0
    refuse_response_format: bool = False
    embedding_dimensions: int = 64


class EndpointServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    def __init__(self, host: str, port: int, config: EndpointConfig) -> None:
        super().__init__((host, port), _Handler)
        self.config = config
        self.stats = EndpointStats()
        self.faults = FaultQueue()
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

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Quiet: tests read /_stats, not logs."""

    def do_GET(self) -> None:
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
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        except ValueError:
            self.send_json(400, _error("the body is not JSON", "invalid_request_error"))
            return
        route = urlsplit(self.path).path
        handler = _POST_ROUTES.get(route)
        if handler is None:
            self.send_json(404, _error(f"no route POST {route}", "not_found"))
            return
        handler(self, body)

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def drop(self) -> None:
        """Close the connection without a reply."""
        self.close_connection = True


def _chat(handler: _Handler, body: dict[str, Any]) -> None:
    server, request = handler.server, ChatRequest(body)
    stage = request.stage
    server.stats.begin(CHAT, stage, body)
    try:
        fault = server.faults.take(stage)
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
        if fault is not None:
            reply = _spoil(reply, fault.kind)
        handler.send_json(200, _completion(body, reply))
    finally:
        server.stats.end()


def _transport_fault(handler: _Handler, fault: Fault) -> bool:
    """Apply an HTTP-level fault; True when the request goes on to a (maybe spoiled) answer."""
    if fault.kind == "status":
        headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
        token = handler.headers.get("Authorization", "").removeprefix("Bearer ")
        text = (fault.message or f"injected HTTP {fault.status}").replace("{api_key}", token)
        error = _error(text, "server_error", code=str(fault.status))
        handler.send_json(fault.status, error, headers)
        return False
    if fault.kind == "hang":
        handler.server.pause(fault.seconds)
        handler.drop()
        return False
    if fault.kind == "drop":
        handler.drop()
        return False
    return True


def _spoil(reply: ChatReply, kind: str) -> ChatReply:
    if kind == "empty":
        return ChatReply(content="")
    if reply.tool_calls:
        if kind == "truncated":
            call = reply.tool_calls[0]
            text = json.dumps(call["arguments"])
            return ChatReply(tool_calls=[{**call, "arguments": text[: len(text) // 2]}])
        return reply
    return ChatReply(content=spoil_content(kind, reply.content or ""))


def _tokens(text: str) -> int:
    return math.ceil(len(text.split()) * 1.3)


def _completion(body: dict[str, Any], reply: ChatReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{index}_{hashlib.sha256(str(call).encode()).hexdigest()[:8]}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call["arguments"], str)
                    else json.dumps(call["arguments"]),
                },
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    prompt = " ".join(str(m.get("content") or "") for m in body.get("messages") or [])
    completion = reply.content or json.dumps(reply.tool_calls)
    usage = {"prompt_tokens": _tokens(prompt), "completion_tokens": _tokens(completion)}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {
        "id": f"chatcmpl-{time.time_ns():x}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": usage,
    }


def _embeddings(handler: _Handler, body: dict[str, Any]) -> None:
    server = handler.server
    server.stats.begin(EMBEDDINGS, "embeddings", body)
    try:
        fault = server.faults.take("embeddings")
        if fault is not None:
            server.stats.fault(fault.kind)
        server.pause(server.latency())
        if fault is not None and not _transport_fault(handler, fault):
            return
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        size = int(body.get("dimensions") or server.config.embedding_dimensions)
        as_base64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": encode_vector(embed_text(t, size), as_base64),
            }
            for i, t in enumerate(texts)
        ]
        tokens = sum(_tokens(str(t)) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        model = body.get("model", "")
        handler.send_json(200, {"object": "list", "data": data, "model": model, "usage": usage})
    finally:
        server.stats.end()


def _admin_faults(handler: _Handler, body: Any) -> None:
    try:
        faults = [Fault.from_dict(item) for item in body]
    except (TypeError, ValueError) as exc:
        handler.send_json(400, _error(f"bad fault: {exc}", "invalid_request_error"))
        return
    handler.server.faults.add(faults)
    handler.send_json(200, {"pending": handler.server.faults.pending()})


def _admin_config(handler: _Handler, body: dict[str, Any]) -> None:
    config = handler.server.config
    for key, value in body.items():
        if not hasattr(config, key):
            handler.send_json(400, _error(f"unknown setting '{key}'", "invalid_request_error"))
            return
        setattr(config, key, tuple(value) if isinstance(value, list) else value)
    handler.send_json(200, {"ok": True})


def _admin_reset(handler: _Handler, body: Any) -> None:
    handler.server.stats.reset()
    handler.server.faults.clear()
    handler.send_json(200, {"ok": True})


def _error(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


_POST_ROUTES = {
    CHAT: _chat,
    EMBEDDINGS: _embeddings,
    "/_faults": _admin_faults,
    "/_config": _admin_config,
    "/_reset": _admin_reset,
}
