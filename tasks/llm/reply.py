"""What a call returns or raises: the reply, its tool calls, and the layer's errors.

The openai client does not validate replies, so a server can hand back anything: content as a
list of parts, a number, tool calls without a function. :func:`reply_of` and :func:`vectors_of`
read what a caller can use and turn the rest into :class:`UnusableReplyError` (a recorded
failure), never an AttributeError in the caller.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from envmill.schemas.llm import LlmCallRecord
from envmill.tasks.llm.transport import EmptyReplyError, UnusableReplyError

MAX_TOKENS_COUNTED = 10**12  # a count past this is nonsense from the server, not usage


class LlmError(Exception):
    """An LLM-layer error; the message is one line and never contains the API key."""


class LlmConfigError(LlmError):
    """The layer cannot start: no or a malformed endpoint, an unusable gate folder."""


class LlmCallError(LlmError):
    """A call that failed for good; ``record`` is its failed LlmCallRecord."""

    def __init__(self, message: str, record: LlmCallRecord) -> None:
        super().__init__(message)
        self.record = record


class LlmFallbackError(LlmError):
    """The endpoint has no such route (HTTP 404) and the caller named what it does instead;
    ``record`` is the call's ``ok`` row, whose ``error_class`` (``fallback``) and ``error`` say so.
    """

    def __init__(self, message: str, record: LlmCallRecord) -> None:
        super().__init__(message)
        self.record = record


class LlmGateError(LlmCallError):
    """The factory's own gate broke (its Dask scheduler or lock folder went away, as when the
    run is interrupted): no fault of the model or of the item being made."""


class LlmUnreachableError(LlmCallError):
    """The endpoint refused the connection and was never reached by this process."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply; ``arguments`` is the JSON text exactly as the model wrote it."""

    id: str
    name: str
    arguments: str

    def arguments_json(self) -> dict[str, Any]:
        """The arguments as an object (empty text is ``{}``); ValueError names what is wrong.

        Strict JSON: ``NaN`` and ``Infinity`` (which Python's parser takes) and text that is not
        valid Unicode (an escaped lone surrogate) are refused, since no JSON channel carries
        them on."""
        try:
            value = json.loads(self.arguments or "{}", parse_constant=_not_json)
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except json.JSONDecodeError as exc:
            raise ValueError(f"arguments are not valid JSON ({exc.msg} at {exc.pos})") from None
        except UnicodeEncodeError:
            raise ValueError("arguments hold text that is not valid Unicode") from None
        except RecursionError:  # "[[[[…" 50,000 deep: a model's output, not the factory's bug
            raise ValueError("arguments are nested too deep") from None
        if not isinstance(value, dict):
            raise ValueError(f"arguments are a JSON {type(value).__name__}, not an object")
        return value

    def message_part(self) -> dict[str, Any]:
        """The call as an assistant message's ``tool_calls`` item (Chat Completions)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


def _not_json(constant: str) -> Any:
    raise ValueError(f"arguments are not valid JSON ({constant} is not a JSON number)")


@dataclass(frozen=True)
class LlmReply:
    """A reply: its text, the validated ``value`` (with a schema), tool calls, and its record."""

    text: str
    value: BaseModel | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = ""
    record: LlmCallRecord | None = None

    def cached(self) -> dict[str, Any]:
        calls = [vars(call) for call in self.tool_calls]
        return {"text": self.text, "tool_calls": calls, "finish_reason": self.finish_reason}


def reply_of(completion: Any) -> LlmReply:
    """The reply in a completion; an empty one raises EmptyReplyError (it is retried)."""
    if not getattr(completion, "choices", None):  # no choices, or not a completion at all
        raise EmptyReplyError("the reply holds no chat completion choice")
    choice = completion.choices[0]
    message = _field(choice, "message")
    if message is None:
        raise UnusableReplyError("the reply's choice has no message")
    calls = [_tool_call(call) for call in _field(message, "tool_calls") or []]
    text = text_of(_field(message, "content"))
    if not text.strip() and not calls:
        raise EmptyReplyError
    finish_reason = _field(choice, "finish_reason")
    finish_reason = finish_reason if isinstance(finish_reason, str) else ""
    return LlmReply(text=text, tool_calls=calls, finish_reason=finish_reason)


def text_of(content: Any) -> str:
    """A message's text: a string, or a list of text parts joined; anything else is unusable."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise UnusableReplyError(f"the message content is a {type(content).__name__}, not text")
    texts = []
    for part in content:
        kind, text = _field(part, "type"), _field(part, "text")
        if kind != "text" or not isinstance(text, str):
            raise UnusableReplyError(f"the message has a content part of type {kind!r}, not text")
        texts.append(text)
    return "".join(texts)


def _tool_call(call: Any) -> ToolCall:
    function = _field(call, "function")
    name, arguments = _field(function, "name"), _field(function, "arguments")
    call_id = _field(call, "id")
    if not isinstance(name, str) or not isinstance(arguments, str | None):
        raise UnusableReplyError("the reply has a tool call without a function name")
    return ToolCall(call_id if isinstance(call_id, str) else "", name, arguments or "")


def vectors_of(response: Any, count: int) -> list[list[float]]:
    """The ``count`` embedding vectors of a response, in input order, all of one finite size."""
    data = _field(response, "data")
    if not isinstance(data, list) or len(data) != count:
        raise EmptyReplyError(f"{count} texts but not {count} vectors in the reply")
    try:
        ordered = sorted(data, key=lambda item: _field(item, "index"))
    except TypeError:
        raise UnusableReplyError("the embedding items carry no usable index") from None
    vectors = [_field(item, "embedding") for item in ordered]
    if not all(_is_vector(vector) for vector in vectors) or len({len(v) for v in vectors}) > 1:
        raise UnusableReplyError("an embedding is not a list of finite numbers of one size")
    return [[float(x) for x in vector] for vector in vectors]


def _is_vector(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
            for x in value
        )
    )


def tokens_of(response: Any) -> tuple[int, int]:
    """(prompt, completion) tokens of a reply's ``usage``; missing, null, negative or odd: 0."""
    usage = _field(response, "usage")
    return _count(_field(usage, "prompt_tokens")), _count(_field(usage, "completion_tokens"))


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0
    return min(max(0, int(value)), MAX_TOKENS_COUNTED)


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)
