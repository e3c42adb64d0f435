"""An agent's action: one assistant message, in whatever shape a policy or a trainer hands it.

A model's reply, an ``openai`` message object, a plain dict or bare text all become one
Chat Completions assistant message with unique call ids, so the stored conversation is valid
training data whatever the policy did. Nothing here judges the calls: unknown tools and bad
arguments are the episode's business (they get error observations). A call is the LLM layer's
``ToolCall``: its arguments stay the JSON text the agent wrote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from envmill.tasks.llm.reply import ToolCall


class ActionError(ValueError):
    """An action that is not an assistant message at all (a number, a list, a user message)."""


@dataclass(frozen=True)
class Action:
    """An assistant message: its text (may be empty) and its tool calls (may be none)."""

    text: str
    calls: list[ToolCall]

    @property
    def is_empty(self) -> bool:
        return not self.text.strip() and not self.calls

    def message(self) -> dict[str, Any]:
        """The Chat Completions assistant message (content None when it only calls tools)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.calls:
            message["tool_calls"] = [call.message_part() for call in self.calls]
        return message


def read_action(action: Any, turn: int, used: set[str] | None = None) -> Action:
    """``action`` (text, a dict, or an object with ``model_dump``) as an :class:`Action`.

    Call ids a policy left out, repeated, or already ``used`` in the episode (models that number
    every turn's calls from ``call_0``) are replaced by ``call_<turn>_<i>``: a tool message must
    answer exactly one call.

    Raises:
        ActionError: not an assistant message.
    """
    if isinstance(action, str):
        return Action(valid_text(action), [])
    if hasattr(action, "model_dump"):
        action = action.model_dump(exclude_none=True)
    if not isinstance(action, dict):
        raise ActionError(f"an action is an assistant message or text, not {type(action).__name__}")
    if action.get("role", "assistant") != "assistant":
        raise ActionError(f"an action is an assistant message, not a {action.get('role')!r} one")
    text = action.get("content")
    if not isinstance(text, str | None):
        raise ActionError("an assistant message's content is text or null")
    raw_calls = action.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ActionError("tool_calls is a list")
    calls, seen = [], set(used or ())
    for index, raw in enumerate(raw_calls):
        call = _read_call(raw, f"call_{turn}_{index}")
        if call.id in seen:
            call = ToolCall(f"call_{turn}_{index}", call.name, call.arguments)
        seen.add(call.id)
        calls.append(call)
    return Action(valid_text(text or ""), calls)


def _read_call(raw: Any, fallback_id: str) -> ToolCall:
    if not isinstance(raw, dict):
        raise ActionError("a tool call is an object")
    function = raw.get("function", raw)  # {"name", "arguments"} alone is accepted too
    if not isinstance(function, dict):
        raise ActionError("a tool call's function is an object")
    name, arguments = function.get("name"), function.get("arguments", "")
    if not isinstance(name, str):
        raise ActionError("a tool call names its function")
    if not isinstance(arguments, str):  # an object a trainer passed: keep it as JSON text
        try:
            arguments = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ActionError(f"a tool call's arguments are not JSON: {exc}") from None
    call_id = raw.get("id")
    call_id = call_id if isinstance(call_id, str) and call_id else fallback_id
    return ToolCall(valid_text(call_id), valid_text(name), valid_text(arguments))


def valid_text(text: str) -> str:
    """``text`` with what is not valid Unicode (a lone surrogate a server sent) replaced, so
    the conversation can be hashed, stored and sent on; an escaped one inside arguments is left
    for the arguments' own check (an error observation)."""
    return text.encode("utf-8", "replace").decode("utf-8")
