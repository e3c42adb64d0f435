"""Parquet in the conversational form TRL's ``SFTTrainer`` takes, readable by
``datasets.load_dataset("parquet", data_files=...)`` as it is.

``messages`` is a list of structs (role, content, tool_calls, tool_call_id), each call a struct
(id, type, function: name, arguments). ``arguments`` and ``tools`` are Parquet JSON columns
(Arrow's ``arrow.json`` extension over text): any reader sees the JSON text, and ``datasets``
decodes them into Python objects, so a row's ``tools`` is the list of tool schemas and each
``arguments`` a dict, which is what ``SFTTrainer`` hands to the tokenizer's
``apply_chat_template(messages, tools=...)`` (it refuses tools given as one string, and most
chat templates write ``arguments`` with ``tojson``, which would quote a string a second time).
A list of structs would not do for either: a struct column has one set of fields for all rows,
so every tool would carry every other tool's parameters as nulls.

Scalar metadata columns follow. The file is written from Arrow with fixed settings (no pandas
metadata, fixed row groups, zstd), so equal input gives equal bytes with one pyarrow version.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING, Any

from envmill.tasks.export.conversation import (
    Conversation,
    Message,
    Unexportable,
    read_conversation,
)
from envmill.tasks.export.format import ExportFormat
from envmill.tasks.export.validate import MAX_PROBLEMS, loaded

if TYPE_CHECKING:  # pyarrow loads when a Parquet file is made or read, not with the format list
    import pyarrow as pa

    from envmill.schemas.export import ExportRecord

ROW_GROUP_SIZE = 1000
METADATA = (  # column, Arrow type (by pyarrow's name for it)
    ("trajectory_id", "string"),
    ("scenario_id", "string"),
    ("env_id", "string"),
    ("run_id", "string"),
    ("policy", "string"),
    ("reward", "float64"),
    ("success", "bool_"),
    ("termination", "string"),
    ("domain", "string"),
    ("backend", "string"),
    ("mode", "string"),
)


def parquet_schema(json_type: pa.DataType) -> pa.Schema:
    """The file's schema; ``json_type`` is ``pa.json_()`` on disk, ``pa.string()`` to build."""
    import pyarrow as pa

    function = pa.struct([("name", pa.string()), ("arguments", json_type)])
    call = pa.struct([("id", pa.string()), ("type", pa.string()), ("function", function)])
    message = pa.struct(
        [
            ("role", pa.string()),
            ("content", pa.string()),
            ("tool_calls", pa.list_(call)),
            ("tool_call_id", pa.string()),
        ]
    )
    metadata = [(name, getattr(pa, kind)()) for name, kind in METADATA]
    return pa.schema([("messages", pa.list_(message)), ("tools", json_type), *metadata])


@cache
def file_schema() -> pa.Schema:
    """The schema of the file on disk (JSON columns as ``arrow.json``)."""
    import pyarrow as pa

    return parquet_schema(pa.json_())


def parquet_row(record: ExportRecord, conversation: Conversation) -> dict[str, Any]:
    """One row, with JSON columns as text."""
    tools = [tool.chat_schema() for tool in conversation.tools]
    row: dict[str, Any] = {
        "messages": [_message(m) for m in conversation.messages],
        "tools": json.dumps(tools, ensure_ascii=False, separators=(",", ":")),
    }
    return row | {name: getattr(record, name) for name, _ in METADATA}


def render_parquet(rows: Iterable[dict[str, Any]]) -> bytes:
    """The Parquet file's bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    built = pa.Table.from_pylist(list(rows), schema=parquet_schema(pa.string()))
    table = built.cast(file_schema())
    sink = io.BytesIO()
    pq.write_table(
        table,
        sink,
        row_group_size=ROW_GROUP_SIZE,
        compression="zstd",
        compression_level=3,
        use_dictionary=True,
        write_statistics=True,
        store_schema=True,  # the Arrow schema, so readers get the JSON type back
    )
    return sink.getvalue()


def _message(message: Message) -> dict[str, Any]:
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in message.tool_calls
    ]
    return {
        "role": message.role,
        "content": message.content,
        "tool_calls": calls or None,
        "tool_call_id": message.tool_call_id,
    }


def validate_parquet(data: bytes) -> list[str]:
    """Problems of a Parquet export: its schema, and every row's conversation."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(io.BytesIO(data))
    except (OSError, pa.ArrowException) as exc:
        return [f"not a readable Parquet file: {exc}"]
    if not table.schema.equals(file_schema(), check_metadata=False):
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
        read_conversation(messages, loaded(row["tools"] or ""))
    except Unexportable as exc:
        return [str(exc)]
    return []


FORMAT = ExportFormat(
    name="parquet",
    about="Parquet for TRL",
    extension="parquet",
    convert=lambda record, conversation, changes: parquet_row(record, conversation),
    render=render_parquet,
    validate=validate_parquet,
)
