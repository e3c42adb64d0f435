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
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from envmill.schemas.export import ExportRecord
from envmill.tasks.export.conversation import Conversation, Message

ROW_GROUP_SIZE = 1000
METADATA = (
    ("trajectory_id", pa.string()),
    ("scenario_id", pa.string()),
    ("env_id", pa.string()),
    ("run_id", pa.string()),
    ("policy", pa.string()),
    ("reward", pa.float64()),
    ("success", pa.bool_()),
    ("termination", pa.string()),
    ("domain", pa.string()),
    ("backend", pa.string()),
    ("mode", pa.string()),
)


def parquet_schema(json_type: pa.DataType) -> pa.Schema:
    """The file's schema; ``json_type`` is ``pa.json_()`` on disk, ``pa.string()`` to build."""
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
    fields = [("messages", pa.list_(message)), ("tools", json_type), *METADATA]
    return pa.schema(fields)


SCHEMA = parquet_schema(pa.json_())


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
    built = pa.Table.from_pylist(list(rows), schema=parquet_schema(pa.string()))
    table = built.cast(SCHEMA)
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
