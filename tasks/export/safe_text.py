"""Text a trainer's tokenizer cannot misread: chat-template control strings and broken UTF-16.

A tool result, a user's words or an agent's argument may hold ``<|im_start|>``, ``<|eot_id|>``
or ``[INST]``; Hugging Face tokenizers turn such text inside a message into the special token
itself, so a corpus could carry an injected turn. The export treats each such string as the
user asks (``escape`` by default: a zero-width space after its first character keeps it readable
and no longer a token; ``drop``; ``keep``), and counts what it touched. A lone surrogate
(``"\\ud800"`` read from JSON) cannot be written as UTF-8 at all: it becomes U+FFFD.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from envmill.schemas.export import ExportRecord

SpecialTokens = Literal["escape", "drop", "keep"]
SPECIAL_TOKEN_MODES: tuple[SpecialTokens, ...] = ("escape", "drop", "keep")
# the control strings of common chat templates: ChatML and Llama 3 (<|…|>), Llama 2 and Mistral
# ([INST], <<SYS>>, <s>), Gemma (<start_of_turn>), and the bare BOS / EOS of many more
SPECIAL_TOKEN = re.compile(
    r"<\|[A-Za-z0-9_]{1,40}\|>"
    r"|\[/?INST\]|<</?SYS>>|</?s>"
    r"|<(?:start|end)_of_turn>|<(?:bos|eos|pad|unk)>"
    r"|<\|?(?:begin|end)_of_text\|?>|<\|?(?:start|end)_header_id\|?>"
)
LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
ZERO_WIDTH = "\u200b"


@dataclass
class Touched:
    """What making the text safe changed, counted for the export's summary."""

    special_tokens: int = 0
    surrogates: int = 0


def safe_record(record: ExportRecord, mode: SpecialTokens, touched: Touched) -> ExportRecord:
    """``record`` with every string of its messages and tools made safe (``safe_string``)."""
    messages = _safe(record.messages, mode, touched)
    tools = _safe(record.tools, mode, touched)
    if messages == record.messages and tools == record.tools:
        return record
    return record.model_copy(update={"messages": messages, "tools": tools})


def safe_string(text: str, mode: SpecialTokens, touched: Touched) -> str:
    """``text`` without lone surrogates, its chat-template control strings escaped, dropped or
    kept as ``mode`` says."""
    text, surrogates = LONE_SURROGATE.subn("\ufffd", text)
    touched.surrogates += surrogates
    if mode == "keep":
        return text
    replace = (lambda found: "") if mode == "drop" else _escaped
    text, tokens = SPECIAL_TOKEN.subn(replace, text)
    touched.special_tokens += tokens
    return text


def _escaped(found: re.Match[str]) -> str:
    token = found.group(0)
    return token[0] + ZERO_WIDTH + token[1:]


def _safe(value: Any, mode: SpecialTokens, touched: Touched) -> Any:
    if isinstance(value, str):
        return safe_string(value, mode, touched)
    if isinstance(value, list):
        return [_safe(item, mode, touched) for item in value]
    if isinstance(value, dict):
        return {
            safe_string(str(key), "keep", touched): _safe(item, mode, touched)
            for key, item in value.items()
        }
    return value


def json_line_safe(line: str) -> str:
    """A JSON text with the characters other readers split lines at (U+2028, U+2029, U+0085)
    written as escapes: valid JSON either way, but a reader that splits on them (Python's
    ``str.splitlines``) would see one example broken in two."""
    return line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085")
