"""Is a Chat Completions conversation well-formed for training? The first problem, with its index.

The shape accepted: a system message, then a user message; roles only system, user, assistant,
tool (system only first); user and system messages with text; each assistant message with text or
tool calls; each tool call with a unique id, type ``function``, a known tool name and arguments
that parse as a JSON object; each call answered by exactly one tool message with its id before the
next assistant or user message, and no tool message that answers nothing.

The ending: an assistant message with text and no tool calls (the agent's last word, which a
trainer learns from); or, for an episode the user ended (termination ``user_stop``), the user's
last message. Anything else (a tool result, an unanswered call, a user message nobody answered)
stops mid-task and would teach the agent to stop there. ``STOP_MARKER`` may appear only in that
final user message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from envmill.schemas.rollout import STOP_MARKER

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class FormatProblem:
    """The first thing malformed: a code to group by, the message index, a human sentence."""

    code: str
    index: int
    message: str


def find_format_problem(
    messages: list[Any], termination: str, tool_names: set[str]
) -> FormatProblem | None:
    """The first problem of ``messages`` in reading order, or None when well-formed."""
    return (
        _check_start(messages)
        or _check_sequence(messages, tool_names)
        or _check_ending(messages, termination)
    )


def _text(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    return content if isinstance(content, str) and content.strip() else None


def _check_start(messages: list[Any]) -> FormatProblem | None:
    for index, role in ((0, "system"), (1, "user")):
        message = messages[index] if len(messages) > index else None
        if not isinstance(message, dict) or message.get("role") != role:
            found = message.get("role") if isinstance(message, dict) else "nothing"
            return FormatProblem(
                f"no_{role}", index, f"message {index} should be the {role} message, is {found}"
            )
    return None


def _check_sequence(messages: list[Any], tool_names: set[str]) -> FormatProblem | None:
    """Roles, texts, calls and their answers, message by message."""
    pending: dict[str, int] = {}  # open call id -> index of the assistant message holding it
    seen: set[str] = set()
    for index, message in enumerate(messages):
        problem = _check_message(index, message)
        if problem is not None:
            return problem
        if message["role"] == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or pending.pop(call_id, None) is None:
                return FormatProblem(
                    "orphan_tool_message",
                    index,
                    f"tool message {index} answers no open tool call (tool_call_id {call_id!r})",
                )
            continue
        if pending:
            return _unanswered(pending, index)
        if message["role"] == "assistant":
            problem = _check_calls(index, message.get("tool_calls") or [], tool_names, seen)
            if problem is not None:
                return problem
            pending = {call["id"]: index for call in message.get("tool_calls") or []}
    return _unanswered(pending, None) if pending else None


def _check_message(index: int, message: Any) -> FormatProblem | None:
    """One message on its own: its role, its text."""
    role = message.get("role") if isinstance(message, dict) else None
    if role not in ROLES:
        return FormatProblem("bad_role", index, f"message {index} has role {role!r}")
    if role == "system" and index > 0:
        return FormatProblem("misplaced_system", index, f"system message at {index}, not first")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return FormatProblem("bad_content", index, f"{role} message {index} content is not text")
    if (role == "tool" and content is None) or (role in ("system", "user") and not _text(message)):
        return FormatProblem("empty_message", index, f"{role} message {index} has no text")
    calls = message.get("tool_calls")
    if role == "assistant" and calls is not None and not isinstance(calls, list):
        return FormatProblem("bad_tool_call", index, f"assistant {index} tool_calls is no list")
    if role == "assistant" and _text(message) is None and not calls:
        return FormatProblem(
            "empty_assistant", index, f"assistant message {index} has neither text nor tool calls"
        )
    return None


def _check_calls(
    index: int, calls: list[Any], tool_names: set[str], seen: set[str]
) -> FormatProblem | None:
    for call in calls:
        problem = _check_call(index, call, tool_names)
        if problem is None and call["id"] in seen:
            problem = FormatProblem(
                "duplicate_tool_call_id",
                index,
                f"tool call id {call['id']!r} in assistant message {index} is used before",
            )
        if problem is not None:
            return problem
        seen.add(call["id"])
    return None


def _check_call(index: int, call: Any, tool_names: set[str]) -> FormatProblem | None:
    """One tool call: id, type, name, arguments."""
    where = f"tool call in assistant message {index}"
    if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call["id"]:
        return FormatProblem("bad_tool_call", index, f"{where} has no id")
    if call.get("type") != "function" or not isinstance(call.get("function"), dict):
        return FormatProblem("bad_tool_call", index, f"{where} is not of type function")
    name, arguments = call["function"].get("name"), call["function"].get("arguments")
    if name not in tool_names:
        return FormatProblem("unknown_tool", index, f"{where} names an unknown tool {name!r}")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return FormatProblem(
            "bad_arguments", index, f"{where} ({name}) has arguments that are no JSON object"
        )
    return None


def _unanswered(pending: dict[str, int], index: int | None) -> FormatProblem:
    call_id, at = next(iter(pending.items()))
    return FormatProblem(
        "unanswered_tool_call",
        at,
        f"tool call {call_id!r} of assistant message {at} has no tool message before"
        f" {'the end' if index is None else f'message {index}'}",
    )


def _check_ending(messages: list[Any], termination: str) -> FormatProblem | None:
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if STOP_MARKER in str(message.get("content") or "") and (
            index != last or message["role"] != "user"
        ):
            return FormatProblem(
                "misplaced_stop", index, f"{STOP_MARKER} in message {index}, not the user's last"
            )
    final = messages[last]
    if final["role"] == "assistant" and _text(final) and not final.get("tool_calls"):
        return None
    if final["role"] == "user" and termination == "user_stop":
        return None
    ending = "a user message" if final["role"] == "user" else f"a {final['role']} message"
    if final["role"] == "assistant":
        ending = "an assistant message without text"
    return FormatProblem(
        "bad_ending",
        last,
        f"conversation ends with {ending} at {last} (termination {termination}); it should end"
        " with the assistant's text or, when the user stopped, the user's last message",
    )
