"""What the test endpoint accepts: request bodies and admin input, checked before use.

A body of the wrong structure gets a 400 that says what is wrong, as a real endpoint answers;
without these checks a responder would crash on it and the client would see a dropped
connection, which is what the ``drop`` fault is for. Admin input is checked the same way, so a
bad setting is refused at once instead of breaking every later request.
"""

from __future__ import annotations

import math
from typing import Any

from envmill.tasks.offline_llm.slips import slips_problem

MAX_BODY_BYTES = 32 * 2**20
MAX_SECONDS = 3600.0  # longer waits are mistakes (and overflow the stdlib's timeouts)
MAX_DIMENSIONS = 4096
STYLES = ("procedural", "model")  # who writes the answers (EndpointConfig.style)


def integer_in(value: Any, low: int | None, high: int | None = None) -> bool:
    """An int (not a bool) from ``low`` to ``high`` (None: no bound)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return (low is None or value >= low) and (high is None or value <= high)


def number_in(value: Any, low: float, high: float) -> bool:
    """A finite int or float (not a bool) from ``low`` to ``high``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and low <= value <= high


def content_length(header: str | None) -> int | None:
    """The body's length from its header (none: 0), or None when the header is not sane."""
    if header is None:
        return 0
    try:
        length = int(header)
    except ValueError:
        return None
    return length if 0 <= length <= MAX_BODY_BYTES else None


def chat_problem(body: Any) -> str | None:
    """What makes ``body`` no chat completion request, or None."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    if "model" in body and not isinstance(body["model"], str):
        return "model must be a string"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty array"
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return f"messages[{index}] must be an object with a role"
        content = message.get("content")
        if not (content is None or isinstance(content, str) or _dicts(content)):
            return f"messages[{index}].content must be a string or an array of parts"
    return _tools_problem(body.get("tools")) or _format_problem(body.get("response_format"))


def _tools_problem(tools: Any) -> str | None:
    if tools is None:
        return None
    if not _dicts(tools):
        return "tools must be an array of objects"
    for index, tool in enumerate(tools):
        function = tool.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return f"tools[{index}].function must be an object with a name"
        if not isinstance(function.get("parameters", {}), dict | None):
            return f"tools[{index}].function.parameters must be an object"
    return None


def _format_problem(response_format: Any) -> str | None:
    if response_format is None:
        return None
    if not isinstance(response_format, dict):
        return "response_format must be an object"
    if response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("schema", {}), dict):
        return "response_format.json_schema must be an object with a schema object"
    return None


def embeddings_problem(body: Any) -> str | None:
    """What makes ``body`` no embeddings request, or None."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    texts = body.get("input")
    if not (isinstance(texts, str) or (isinstance(texts, list) and texts and _strings(texts))):
        return "input must be a string or a non-empty array of strings"
    dimensions = body.get("dimensions")
    if dimensions is not None and not integer_in(dimensions, 1, MAX_DIMENSIONS):
        return f"dimensions must be an integer from 1 to {MAX_DIMENSIONS}"
    if body.get("encoding_format") not in (None, "float", "base64"):
        return "encoding_format must be 'float' or 'base64'"
    return None


def config_problem(name: str, value: Any) -> str | None:
    """What is wrong with one EndpointConfig value, or None."""
    if name == "latency":
        low_high = isinstance(value, list | tuple) and len(value) == 2
        if number_in(value, 0, MAX_SECONDS) or (
            low_high and all(number_in(v, 0, MAX_SECONDS) for v in value) and value[0] <= value[1]
        ):
            return None
        return f"latency: seconds from 0 to {MAX_SECONDS:g}, or [low, high]"
    if name == "seed":
        return None if integer_in(value, None) else "seed: an integer"
    if name == "refuse_response_format":
        return None if isinstance(value, bool) else "refuse_response_format: true or false"
    if name == "slips":
        return slips_problem(value)
    if name == "style":
        return None if value in STYLES else f"style: one of {', '.join(STYLES)}"
    if name == "embedding_dimensions":
        ok = integer_in(value, 1, MAX_DIMENSIONS)
        return None if ok else f"embedding_dimensions: an integer from 1 to {MAX_DIMENSIONS}"
    return f"unknown setting '{name}'"


def _dicts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _strings(value: list[Any]) -> bool:
    return all(isinstance(item, str) for item in value)
