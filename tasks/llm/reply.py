"""What a call returns or raises: the reply, its tool calls, and the layer's errors."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from envmill.schemas.llm import LlmCallRecord
from envmill.tasks.llm.transport import EmptyReplyError


class LlmError(Exception):
    """An LLM-layer error; the message is one line and never contains the API key."""


class LlmConfigError(LlmError):
    """The layer cannot start: no endpoint configured."""


class LlmCallError(LlmError):
    """A call that failed for good; ``record`` is its failed LlmCallRecord."""

    def __init__(self, message: str, record: LlmCallRecord) -> None:
        super().__init__(message)
        self.record = record


class LlmUnreachableError(LlmCallError):
    """The endpoint refused the connection and was never reached by this process."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply; ``arguments`` is the JSON text exactly as the model wrote it."""

    id: str
    name: str
    arguments: str

    def arguments_json(self) -> dict[str, Any]:
        """The arguments as an object; ValueError when the model wrote anything else."""
        value = json.loads(self.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError(f"tool call {self.name}: arguments are not a JSON object")
        return value


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
    """The reply in a completion; an empty one raises (it is retried)."""
    if not getattr(completion, "choices", None):  # no choices, or not a completion at all
        raise EmptyReplyError("the reply holds no chat completion choice")
    choice = completion.choices[0]
    message = choice.message
    calls = [
        ToolCall(call.id, call.function.name, call.function.arguments or "")
        for call in message.tool_calls or []
        if getattr(call, "function", None) is not None
    ]
    text = message.content or ""
    if not text.strip() and not calls:
        raise EmptyReplyError
    return LlmReply(text=text, tool_calls=calls, finish_reason=choice.finish_reason or "")
