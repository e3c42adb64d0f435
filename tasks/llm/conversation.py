"""One call's conversation: the request in the structured mode the endpoint takes, the fallback
to text mode, and the repair turns.

``auto`` mode sends the schema as ``response_format``; only a 400 *about* response_format (its
``param`` or message names it) sends the same question again in text mode, and only when that
gets past the 400 is the model remembered as refusing json_schema. Any other 400 (a context
too long, a bad parameter) is the call's failure: a second paid request would not fix it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel

from envmill.tasks.llm.reply import LlmReply
from envmill.tasks.llm.structured import (
    ReplyError,
    parse_reply,
    repair_messages,
    response_format_for,
    with_schema_instruction,
)
from envmill.tasks.llm.transport import Failure

Chat = Callable[[list[dict[str, Any]], dict[str, Any]], LlmReply]  # (messages, extra) -> reply
_ABOUT_RESPONSE_FORMAT = re.compile(r"response_format|json_schema|response format", re.IGNORECASE)
_REFUSES_SCHEMA: set[tuple[str, str]] = set()  # (base_url, model) that answered 400 to it
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Question:
    """What one call asks: messages, tools, the schema of the answer, how to ask for it."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    schema: type[BaseModel] | None
    setting: Literal["auto", "json_schema", "text"]
    repair_turns: int


def answer(chat: Chat, question: Question, base_url: str, model: str) -> LlmReply:
    """Ask (in the structured mode the endpoint takes) and repair until valid."""
    mode = _structured_mode(question, base_url, model)
    try:
        return converse(chat, question, mode)
    except Failure as failure:
        auto = question.setting == "auto"
        if not (auto and mode == "json_schema" and refuses_response_format(failure)):
            raise
    reply = converse(chat, question, "text")
    with _LOCK:
        _REFUSES_SCHEMA.add((base_url, model))
    return reply


def refuses_response_format(failure: Failure) -> bool:
    """A 400 that is about response_format (its ``param`` or its message says so)."""
    if failure.status != 400:
        return False
    about = failure.param.startswith("response_format")
    return about or bool(_ABOUT_RESPONSE_FORMAT.search(failure.message))


def _structured_mode(question: Question, base_url: str, model: str) -> str | None:
    if question.schema is None:
        return None
    with _LOCK:
        refused = (base_url, model) in _REFUSES_SCHEMA
    setting = question.setting
    return "text" if setting == "text" or (setting == "auto" and refused) else "json_schema"


def converse(chat: Chat, question: Question, mode: str | None) -> LlmReply:
    """The request, then up to ``repair_turns`` turns that show the model its parse error."""
    schema = question.schema
    messages = question.messages
    conversation = with_schema_instruction(messages, schema) if mode == "text" else messages
    extra: dict[str, Any] = {"tools": question.tools} if question.tools else {}
    if mode == "json_schema" and schema is not None:
        extra["response_format"] = response_format_for(schema)
    error = ""
    for _turn in range(question.repair_turns + 1):
        reply = chat(conversation, extra)
        if schema is None or reply.tool_calls:
            return reply
        try:
            return replace(reply, value=parse_reply(reply.text, schema))
        except ReplyError as exc:
            error = str(exc)
            conversation = repair_messages(conversation, reply.text, error)
    turns = question.repair_turns
    plural = "s" * (turns != 1)
    raise Failure("ReplyError", f"unusable reply after {turns} repair turn{plural}: {error}")
