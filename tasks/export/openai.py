"""OpenAI chat fine-tuning JSONL with tools: one line per conversation,
``{"messages": [...], "tools": [...], "parallel_tool_calls": bool}``.

Messages keep the Chat Completions roles; an assistant message with ``tool_calls`` (each
``{id, type: "function", function: {name, arguments}}``, arguments as JSON text) omits
``content`` when it has none; a tool message carries ``tool_call_id`` and ``content``.
``parallel_tool_calls`` is true only when some assistant message makes more than one call.
Keys come in a fixed order and nothing depends on time, so equal input gives equal bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from envmill.tasks.export.conversation import Conversation, Message


def openai_example(conversation: Conversation) -> dict[str, Any]:
    """One training example (one JSONL line) as a dict, in output key order."""
    return {
        "messages": [_message(m) for m in conversation.messages],
        "tools": [tool.chat_schema() for tool in conversation.tools],
        "parallel_tool_calls": conversation.parallel_calls,
    }


def render_openai(examples: Iterable[dict[str, Any]]) -> bytes:
    """The JSONL file: one line per example, UTF-8, each line ending in a newline."""
    return "".join(dump_line(example) + "\n" for example in examples).encode("utf-8")


def dump_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role}
    if message.content is not None or not message.tool_calls:
        out["content"] = message.content
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out
