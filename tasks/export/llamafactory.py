"""LlamaFactory's ShareGPT format with tools: a JSON list of
``{"conversations": [{"from", "value"}], "system": text, "tools": "<JSON text>"}`` and the
``dataset_info.json`` entries that describe the files.

LlamaFactory's loader (``SharegptDatasetConverter``) wants, after the system prompt, ``human`` or
``observation`` at even positions and ``gpt`` or ``function_call`` at odd ones, and an even
number of turns (the last one is the response); anything else is skipped with a warning. So:

- a call is ``function_call`` with the value ``{"name", "arguments": {...}}`` as JSON, or a JSON
  list of those for several calls in one message; the tool results of that message become one
  ``observation``: the result itself for one call, a JSON list of the results in call order for
  several (a result that is JSON text goes in as its value);
- assistant text beside tool calls has no place in a ``function_call`` turn: it is dropped and
  counted, as is an assistant text message right before a call of its own;
- two user messages (or two assistant texts) in a row are joined with a blank line, counted;
- turns after the last assistant turn (a closing user message, a last tool result) are cut,
  counted; a conversation that still cannot alternate is :class:`Unexportable`.

``tools`` holds bare function schemas (``name``, ``description``, ``parameters``), the form of
LlamaFactory's own ``glaive_toolcall`` demo that every version of its tool formatters reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from envmill.tasks.export.conversation import Conversation, Message, ToolCall, Unexportable

USER_SIDE, MODEL_SIDE = ("human", "observation"), ("gpt", "function_call")
COLUMNS = {"messages": "conversations", "system": "system", "tools": "tools"}
ENTRY_PREFIX = "envmill_"  # dataset_info.json entries envmill owns: envmill_train, ...


@dataclass
class ShareGptStats:
    """What the conversion had to change, summed over an export."""

    dropped_texts: int = 0
    joined_turns: int = 0
    cut_turns: int = 0

    def add(self, other: ShareGptStats) -> None:
        self.dropped_texts += other.dropped_texts
        self.joined_turns += other.joined_turns
        self.cut_turns += other.cut_turns


def sharegpt_example(conversation: Conversation, stats: ShareGptStats) -> dict[str, Any]:
    """One ShareGPT example; what had to change is added to ``stats``.

    Raises:
        Unexportable: the turns cannot alternate as LlamaFactory requires.
    """
    own = ShareGptStats()
    turns = _alternate(_turns(conversation, own), own)
    stats.add(own)
    tools = [tool.function_schema() for tool in conversation.tools]
    return {
        "conversations": [{"from": side, "value": value} for side, value in turns],
        "system": conversation.system or "",
        "tools": dump(tools),
    }


def render_llamafactory(examples: Iterable[dict[str, Any]]) -> bytes:
    """The JSON file: a list with one example per line, UTF-8."""
    lines = [dump(example) for example in examples]
    body = ",\n".join(lines)
    return (f"[\n{body}\n]\n" if lines else "[]\n").encode("utf-8")


def dataset_info_entries(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    """``dataset_info.json`` entries for the split files (``{"train": "train.json", ...}``)."""
    return {
        f"{ENTRY_PREFIX}{split}": {
            "file_name": name,
            "formatting": "sharegpt",
            "columns": dict(COLUMNS),
        }
        for split, name in files.items()
    }


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _turns(conversation: Conversation, stats: ShareGptStats) -> list[tuple[str, str]]:
    """The messages after the system prompt as (side, value) turns, tool blocks grouped."""
    turns: list[tuple[str, str]] = []
    calls: tuple[ToolCall, ...] = ()
    results: dict[str, str] = {}
    for message in conversation.messages[1 if conversation.system is not None else 0 :]:
        if message.role == "tool":
            results[message.tool_call_id or ""] = message.content or ""
            if len(results) == len(calls):
                turns.append(("observation", _observation(calls, results)))
            continue
        turns.append(_turn(message, stats))
        calls, results = message.tool_calls, {}
    return turns


def _turn(message: Message, stats: ShareGptStats) -> tuple[str, str]:
    if message.role == "user":
        return "human", message.content or ""
    if not message.tool_calls:
        return "gpt", message.content or ""
    if message.content and message.content.strip():
        stats.dropped_texts += 1
    calls = [{"name": c.name, "arguments": c.parsed_arguments} for c in message.tool_calls]
    return "function_call", dump(calls[0] if len(calls) == 1 else calls)


def _observation(calls: tuple[ToolCall, ...], results: dict[str, str]) -> str:
    if len(calls) == 1:
        return results[calls[0].id]
    return dump([_json_or_text(results[call.id]) for call in calls])


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _alternate(turns: list[tuple[str, str]], stats: ShareGptStats) -> list[tuple[str, str]]:
    """Join or drop turns so sides alternate from the user's, then cut the trailing user-side
    turns."""
    out: list[tuple[str, str]] = []
    for side, value in turns:
        if not out or _is_user(out[-1][0]) != _is_user(side):
            out.append((side, value))
        elif side == out[-1][0] and side in ("human", "gpt"):
            out[-1] = (side, f"{out[-1][1]}\n\n{value}")
            stats.joined_turns += 1
        elif (out[-1][0], side) == ("gpt", "function_call"):
            out[-1] = (side, value)
            stats.dropped_texts += 1
        else:
            raise Unexportable("cannot_alternate", f"{side} follows {out[-1][0]}")
    if out and not _is_user(out[0][0]):
        raise Unexportable("cannot_alternate", "the assistant speaks before the user")
    while out and _is_user(out[-1][0]):
        out.pop()
        stats.cut_turns += 1
    if not out:
        raise Unexportable("cannot_alternate", "no assistant turn follows the user's")
    return out


def _is_user(side: str) -> bool:
    return side in USER_SIDE
