"""What the test endpoint answers, by stage: a registry of small functions.

A request's stage is the one envmill's client names in the ``X-Envmill-Stage`` header (the
server refuses a request without it); each stage has its responder (:func:`register`). A stage
without one gets :func:`generic`, which calls the first offered tool, or fills the requested
JSON Schema with example values.
Embeddings are a hashed bag of words: deterministic, and close for texts that share words.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envmill.tasks.llm.structured import SCHEMA_LINE
from envmill.tasks.offline_llm.faults import spoil_content

if TYPE_CHECKING:
    from envmill.tasks.offline_llm.scripts import ScriptBook

_WORD = re.compile(r"\w+")
_SCHEMA_IN_TEXT = re.compile(re.escape(SCHEMA_LINE) + r"(\{.*\})\s*$", re.MULTILINE)


@dataclass
class ChatRequest:
    """The parts of a ``/v1/chat/completions`` body a responder looks at, the stage its header
    names, the slips the endpoint is configured to make (``EndpointConfig.slips``), the scripts
    it holds and the writer it answers as (``EndpointConfig.style``)."""

    body: dict[str, Any]
    stage: str
    slips: list[dict[str, Any]] = field(default_factory=list)
    scripts: ScriptBook | None = None
    style: str = "procedural"

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages") or []

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.body.get("tools") or []

    def schema(self) -> dict[str, Any] | None:
        """The JSON Schema asked for: ``response_format``, else the one stated in the prompt."""
        response_format = self.body.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            return response_format.get("json_schema", {}).get("schema")
        for message in self.messages:
            found = _SCHEMA_IN_TEXT.search(str(message.get("content") or ""))
            if found:
                return json.loads(found.group(1))
        return None

    def texts(self, role: str = "user") -> list[str]:
        """The text of every message of ``role``, in order (a repair turn adds one at the end)."""
        return [
            m["content"]
            for m in self.messages
            if m.get("role") == role and isinstance(m.get("content"), str)
        ]

    def last_text(self, role: str = "user") -> str:
        return (self.texts(role) or [""])[-1]


@dataclass
class ChatReply:
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"name", "arguments"}]


Responder = Callable[[ChatRequest], ChatReply]
_RESPONDERS: dict[str, Responder] = {}
_WARMERS: list[Callable[[], object]] = []


def register(stage: str, responder: Responder, warm: Callable[[], object] | None = None) -> None:
    """Answer requests of ``stage`` with ``responder`` (replacing any earlier one).

    ``warm`` runs when a server starts, so slow set-up (loading a catalog) never eats into the
    first request's latency and trips a tight client timeout.
    """
    _RESPONDERS[stage] = responder
    if warm is not None:
        _WARMERS.append(warm)


@contextmanager
def answering(stage: str, responder: Responder) -> Iterator[None]:
    """``stage`` answered by ``responder`` for a while, then by whatever answered it before (a
    stage's own responder may be a wrapper, such as the one that picks the writer's style)."""
    before = _RESPONDERS.get(stage)
    _RESPONDERS[stage] = responder
    try:
        yield
    finally:
        if before is None:
            _RESPONDERS.pop(stage, None)
        else:
            _RESPONDERS[stage] = before


def warm_up() -> None:
    for warm in _WARMERS:
        warm()


def respond(request: ChatRequest) -> ChatReply:
    return _RESPONDERS.get(request.stage, generic)(request)


def by_style(**writers: Responder) -> Responder:
    """A responder that answers as the request's writer (``ChatRequest.style``) does; the
    procedural writer where the style has no answer of its own for the stage."""

    def respond_as(request: ChatRequest) -> ChatReply:
        return writers.get(request.style, writers["procedural"])(request)

    return respond_as


def generic(request: ChatRequest) -> ChatReply:
    """Call the first tool (until a tool has answered), else fill the schema, else say 'ok'."""
    if request.tools and request.messages and request.messages[-1].get("role") != "tool":
        function = request.tools[0].get("function", {})
        arguments = example_value(function.get("parameters") or {"type": "object"})
        return ChatReply(tool_calls=[{"name": function.get("name", ""), "arguments": arguments}])
    schema = request.schema()
    if schema is not None:
        return ChatReply(content=json.dumps(example_value(schema, schema.get("$defs", {}))))
    return ChatReply(content=f"ok: {' '.join(request.last_text().split()[:12])}")


def example_value(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """A value that satisfies a (pydantic-style) JSON Schema: every property, bounds kept."""
    defs = defs or schema.get("$defs", {})
    if "$ref" in schema:
        return example_value(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        options = [s for s in schema.get(key, []) if s.get("type") != "null"]
        if options:
            return example_value(options[0], defs)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = _kind(schema)
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: example_value(sub, defs) for name, sub in properties.items()}
    if kind == "array":
        return [example_value(schema.get("items", {}), defs)] * max(1, schema.get("minItems", 1))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = max(low, 1) if schema.get("maximum", 1) >= 1 else low
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    return {"date": "2026-01-01", "date-time": "2026-01-01T09:00:00"}.get(
        schema.get("format", ""), "example"
    )


def _kind(schema: dict[str, Any]) -> Any:
    """The schema's type; of a type list (``["string", "null"]``, an optional tool parameter)
    the first that is not null, since the example should show a value."""
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        return next((k for k in kind if k != "null"), "null")
    return kind


def embed_text(text: str, size: int) -> list[float]:
    """Hashed bag of words, L2-normalised: texts sharing words get similar vectors."""
    vector = [0.0] * size
    for word in _WORD.findall(str(text).lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest[:4], "big") % size] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def encode_vector(vector: list[float], as_base64: bool) -> list[float] | str:
    if not as_base64:
        return vector
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


def spoil(reply: ChatReply, kind: str) -> ChatReply:
    """The reply as a content fault (``truncated``, ``prose``, ...) turns it."""
    if kind == "empty":
        return ChatReply(content="")
    if reply.tool_calls:
        if kind == "truncated":
            call = reply.tool_calls[0]
            text = json.dumps(call["arguments"])
            return ChatReply(tool_calls=[{**call, "arguments": text[: len(text) // 2]}])
        return reply
    return ChatReply(content=spoil_content(kind, reply.content or ""))


def count_tokens(text: str) -> int:
    return math.ceil(len(text.split()) * 1.3)


def completion_body(body: dict[str, Any], reply: ChatReply) -> dict[str, Any]:
    """The ``chat.completion`` JSON of ``reply`` to the request ``body``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        turn = len(body.get("messages") or [])  # ids differ between turns, as a real model's do
        message["tool_calls"] = [
            {
                "id": f"call_{index}_{hashlib.sha256(f'{turn} {call}'.encode()).hexdigest()[:8]}",
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
    usage = {"prompt_tokens": count_tokens(prompt), "completion_tokens": count_tokens(completion)}
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
