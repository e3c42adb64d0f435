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
from typing import Any

from envmill.tasks.export.conversation import (
    Conversation,
    Message,
    ToolCall,
    Unexportable,
    read_tools,
)
from envmill.tasks.export.format import ExportFormat, ShareGptStats
from envmill.tasks.export.safe_text import json_line_safe
from envmill.tasks.export.validate import MAX_PROBLEMS, decoded, loaded

USER_SIDE, MODEL_SIDE = ("human", "observation"), ("gpt", "function_call")
COLUMNS = {"messages": "conversations", "system": "system", "tools": "tools"}
ENTRY_PREFIX = "envmill_"  # dataset_info.json entries envmill owns: envmill_train, ...
SHAREGPT_KEYS = {"conversations", "system", "tools"}


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
    return json_line_safe(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


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


def validate_llamafactory(data: bytes) -> list[str]:
    """Problems of a LlamaFactory ShareGPT JSON file (with tools)."""
    problems: list[str] = []
    examples = loaded(decoded(data, problems))
    if not isinstance(examples, list):
        return [*problems, "the file is not a JSON list"]
    for index, example in enumerate(examples):
        problems += [f"example {index}: {p}" for p in _sharegpt_example(example)]
        if len(problems) >= MAX_PROBLEMS:
            break
    return problems[:MAX_PROBLEMS]


def _sharegpt_example(example: Any) -> list[str]:
    if not isinstance(example, dict) or set(example) != SHAREGPT_KEYS:
        return [f"not an object with exactly {sorted(SHAREGPT_KEYS)}"]
    problems = [] if isinstance(example["system"], str) else ["system is not text"]
    tools = loaded(example["tools"]) if isinstance(example["tools"], str) else None
    if not isinstance(tools, list) or not _function_schemas(tools):
        problems.append("tools is not the JSON text of a list of function schemas")
    return problems + _sharegpt_turns(example["conversations"])


def _function_schemas(tools: list[Any]) -> bool:
    try:
        read_tools([{"type": "function", "function": tool} for tool in tools])
    except Unexportable:
        return False
    return True


def _sharegpt_turns(turns: Any) -> list[str]:
    if not isinstance(turns, list) or not turns or len(turns) % 2:
        return ["conversations is not a non-empty list of an even number of turns"]
    problems, calls = [], 0
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict) or set(turn) != {"from", "value"}:
            return [*problems, f"turn {index} is not {{from, value}}"]
        side, value = turn["from"], turn["value"]
        if side not in (MODEL_SIDE if index % 2 else USER_SIDE) or not isinstance(value, str):
            return [*problems, f"turn {index} ({side}) breaks the alternation or is not text"]
        if side == "observation" and not calls:
            problems.append(f"turn {index}: an observation that answers no function_call")
        elif side == "observation" and calls > 1 and _list_length(value) != calls:
            problems.append(f"turn {index}: {calls} calls need a JSON list of {calls} results")
        if calls and side != "observation" and index % 2 == 0:
            problems.append(f"turn {index}: the function_call before it has no observation")
        calls = _function_calls(value) if side == "function_call" else 0
        if side == "function_call" and not calls:
            problems.append(f"turn {index}: not a call {{name, arguments: object}} or a list")
    return problems


def _function_calls(value: str) -> int:
    """How many well-formed calls a function_call value holds (0: it is malformed)."""
    calls = loaded(value)
    calls = calls if isinstance(calls, list) else [calls]
    well_formed = all(
        isinstance(c, dict)
        and set(c) == {"name", "arguments"}
        and isinstance(c["name"], str)
        and isinstance(c["arguments"], dict)
        for c in calls
    )
    return len(calls) if calls and well_formed else 0


def _list_length(value: str) -> int:
    parsed = loaded(value)
    return len(parsed) if isinstance(parsed, list) else -1


def validate_dataset_info(info: Any, files: set[str]) -> list[str]:
    """Problems of envmill's entries in a ``dataset_info.json`` (``files``: the data files
    written beside it)."""
    if not isinstance(info, dict):
        return ["dataset_info.json is not a JSON object"]
    problems = []
    for name, entry in info.items():
        if not name.startswith(ENTRY_PREFIX):
            continue
        if not isinstance(entry, dict) or entry.get("file_name") not in files:
            problems.append(f"entry {name} names no file written")
        elif entry.get("formatting") != "sharegpt" or entry.get("columns") != COLUMNS:
            problems.append(f"entry {name} is not sharegpt with columns {COLUMNS}")
    return problems


FORMAT = ExportFormat(
    name="llamafactory",
    about="LlamaFactory ShareGPT",
    extension="json",
    convert=lambda record, conversation, changes: sharegpt_example(conversation, changes),
    render=render_llamafactory,
    validate=validate_llamafactory,
    dataset_info=dataset_info_entries,
    changes_turns=True,
)
