"""What the validators of exported files share: each format's module has its own validator
(``openai``, ``llamafactory``, ``parquet``), which reads a file's bytes as a trainer would and
returns the problems it finds (an empty list: the file is sound). The exporter runs it on every
file before writing it; an export that fails its own validation is an error, not a file.

Every validator checks the structure rules of ``conversation.py`` (roles, every tool call answered
by a tool message with its id, arguments that are JSON objects, well-formed tools); each adds its
format's own: OpenAI's keys and ``parallel_tool_calls``, LlamaFactory's alternation and its
``function_call``/``observation`` values, the Parquet schema and its JSON columns.
"""

from __future__ import annotations

import json
from typing import Any

MAX_PROBLEMS = 20  # a validator stops looking after this many


def decoded(data: bytes, problems: list[str]) -> str:
    """``data`` as UTF-8 text; a file that is not adds a problem and reads as empty."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("not UTF-8")
        return ""


def loaded(text: str) -> Any:
    """``text`` as JSON, or None when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return None
