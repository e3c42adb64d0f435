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

from envmill.tasks.export.conversation import (
    Conversation,
    Message,
    Unexportable,
    read_conversation,
)
from envmill.tasks.export.format import ExportFormat
from envmill.tasks.export.safe_text import json_line_safe
from envmill.tasks.export.validate import MAX_PROBLEMS, decoded, loaded

OPENAI_KEYS = {"messages", "tools", "parallel_tool_calls"}
MESSAGE_KEYS = {
    "system": {"role", "content"},
    "user": {"role", "content"},
    "assistant": {"role", "content", "tool_calls"},
    "tool": {"role", "content", "tool_call_id"},
}


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
    return json_line_safe(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


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


def validate_openai(data: bytes) -> list[str]:
    """Problems of an OpenAI fine-tuning JSONL file."""
    problems: list[str] = []
    text = decoded(data, problems)
    if text and not text.endswith("\n"):
        problems.append("the last line has no newline")
    lines = text.split("\n")  # JSONL ends lines at "\n" only (never splitlines: U+2028)
    for number, line in enumerate(lines[:-1] if text.endswith("\n") else lines, start=1):
        problems += [f"line {number}: {p}" for p in _openai_line(line)]
        if len(problems) >= MAX_PROBLEMS:
            break
    return problems[:MAX_PROBLEMS]


def _openai_line(line: str) -> list[str]:
    example = loaded(line)
    if not isinstance(example, dict) or set(example) != OPENAI_KEYS:
        return [f"not an object with exactly {sorted(OPENAI_KEYS)}"]
    messages = example["messages"]
    problems = [p for i, m in enumerate(messages or []) for p in _openai_message(i, m)]
    try:
        conversation = read_conversation(messages, example["tools"])
    except Unexportable as exc:
        return [*problems, str(exc)]
    if example["parallel_tool_calls"] is not conversation.parallel_calls:
        problems.append(f"parallel_tool_calls should be {conversation.parallel_calls}")
    return problems


def _openai_message(index: int, message: Any) -> list[str]:
    if not isinstance(message, dict) or message.get("role") not in MESSAGE_KEYS:
        return []  # read_conversation names it
    where, extra = f"message {index}", set(message) - MESSAGE_KEYS[message["role"]]
    problems = [f"{where} has keys {sorted(extra)}"] if extra else []
    if "content" in message and message["content"] is None:
        problems.append(f"{where}: content is null (omit it)")
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not (isinstance(call, dict) and set(call) == {"id", "type", "function"}):
            problems.append(f"{where}: a call is not {{id, type, function}}")
        elif not (isinstance(function, dict) and set(function) == {"name", "arguments"}):
            problems.append(f"{where}: a call's function is not {{name, arguments}}")
    return problems


FORMAT = ExportFormat(
    name="openai",
    about="OpenAI fine-tuning JSONL",
    extension="jsonl",
    convert=lambda record, conversation, changes: openai_example(conversation),
    render=render_openai,
    validate=validate_openai,
)
