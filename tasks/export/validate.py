"""Validators of exported files, one per format: each reads the bytes as a trainer would and
returns the problems it finds (an empty list: the file is sound). The exporter runs them on
every file before writing it; an export that fails its own validation is an error, not a file.

All three check the structure rules of ``conversation.py`` (roles, every tool call answered by
a tool message with its id, arguments that are JSON objects, well-formed tools); each adds its
format's own: OpenAI's keys and ``parallel_tool_calls``, LlamaFactory's alternation and its
``function_call``/``observation`` values, the Parquet schema and its JSON columns.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from envmill.tasks.export.conversation import Unexportable, read_conversation, read_tools
from envmill.tasks.export.llamafactory import COLUMNS, ENTRY_PREFIX, MODEL_SIDE, USER_SIDE
from envmill.tasks.export.parquet import SCHEMA

MAX_PROBLEMS = 20
OPENAI_KEYS = {"messages", "tools", "parallel_tool_calls"}
MESSAGE_KEYS = {
    "system": {"role", "content"},
    "user": {"role", "content"},
    "assistant": {"role", "content", "tool_calls"},
    "tool": {"role", "content", "tool_call_id"},
}
SHAREGPT_KEYS = {"conversations", "system", "tools"}


def validate_openai(data: bytes) -> list[str]:
    """Problems of an OpenAI fine-tuning JSONL file."""
    problems: list[str] = []
    text = _text(data, problems)
    if text and not text.endswith("\n"):
        problems.append("the last line has no newline")
    for number, line in enumerate(text.splitlines(), start=1):
        problems += [f"line {number}: {p}" for p in _openai_line(line)]
        if len(problems) >= MAX_PROBLEMS:
            break
    return problems[:MAX_PROBLEMS]


def _openai_line(line: str) -> list[str]:
    example = _json(line)
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


def validate_llamafactory(data: bytes) -> list[str]:
    """Problems of a LlamaFactory ShareGPT JSON file (with tools)."""
    problems: list[str] = []
    examples = _json(_text(data, problems))
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
    tools = _json(example["tools"]) if isinstance(example["tools"], str) else None
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
    calls = _json(value)
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
    parsed = _json(value)
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


def validate_parquet(data: bytes) -> list[str]:
    """Problems of a Parquet export: its schema, and every row's conversation."""
    try:
        table = pq.read_table(io.BytesIO(data))
    except (OSError, pa.ArrowException) as exc:
        return [f"not a readable Parquet file: {exc}"]
    if not table.schema.equals(SCHEMA, check_metadata=False):
        return ["the schema is not the export's"]
    if b"pandas" in (table.schema.metadata or {}):
        return ["the file carries pandas metadata"]
    problems = []
    for index, row in enumerate(table.to_pylist()):
        problems += [f"row {index}: {p}" for p in _parquet_row(row)]
        if len(problems) >= MAX_PROBLEMS:
            break
    return problems[:MAX_PROBLEMS]


def _parquet_row(row: dict[str, Any]) -> list[str]:
    if any(row[name] is None for name in ("trajectory_id", "env_id", "policy", "reward")):
        return ["a metadata column is null"]
    messages = [{k: v for k, v in m.items() if v is not None} for m in row["messages"] or []]
    try:
        read_conversation(messages, _json(row["tools"] or ""))
    except Unexportable as exc:
        return [str(exc)]
    return []


def _text(data: bytes, problems: list[str]) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("not UTF-8")
        return ""


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
