"""A trajectory's messages and tools read into typed records, with the structure rules every
export format relies on (DESIGN §3.4: Chat Completions messages).

The rules: roles are system (first only), user, assistant and tool; an assistant message has
text, tool calls or both; every call has an id, type ``function``, a tool name and arguments
that are the JSON text of an object; the tool messages right after an assistant message with
calls answer each of its calls exactly once (by ``tool_call_id``), and a tool message answers
nothing else; there is at least one assistant message; tools are Chat Completions function
schemas with object parameters and distinct names. A conversation that breaks one cannot be
exported faithfully: :class:`Unexportable` names the rule (``code``) and where.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

ROLES = ("system", "user", "assistant", "tool")
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # OpenAI's rule for function names


class Unexportable(ValueError):
    """A conversation that breaks a structure rule; ``code`` is the rule, for counting."""

    def __init__(self, code: str, detail: str):
        super().__init__(f"{code}: {detail}")
        self.code = code


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text of an object, as the assistant wrote it

    @property
    def parsed_arguments(self) -> dict[str, Any]:
        return json.loads(self.arguments)


@dataclass(frozen=True)
class Message:
    role: str
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]

    def chat_schema(self) -> dict[str, Any]:
        """Chat Completions form, in its usual key order."""
        return {"type": "function", "function": self.function_schema()}

    def function_schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True)
class Conversation:
    messages: tuple[Message, ...]
    tools: tuple[Tool, ...]

    @property
    def system(self) -> str | None:
        first = self.messages[0]
        return first.content if first.role == "system" else None

    @property
    def parallel_calls(self) -> bool:
        """Some assistant message makes more than one call."""
        return any(len(m.tool_calls) > 1 for m in self.messages)


def read_conversation(messages: Any, tools: Any) -> Conversation:
    """Read Chat Completions ``messages`` and ``tools`` and check the structure rules.

    Raises:
        Unexportable: a rule is broken; the message says which and where.
    """
    if not isinstance(messages, list) or not messages:
        raise Unexportable("no_messages", "the conversation has no messages")
    read = tuple(_message(index, raw) for index, raw in enumerate(messages))
    _check_order(read)
    return Conversation(messages=read, tools=read_tools(tools))


def read_tools(tools: Any) -> tuple[Tool, ...]:
    """Chat Completions tool schemas (``{"type": "function", "function": {...}}``)."""
    if not isinstance(tools, list):
        raise Unexportable("bad_tools", "tools are not a list")
    read = tuple(_tool(index, raw) for index, raw in enumerate(tools))
    names = [tool.name for tool in read]
    if len(set(names)) != len(names):
        raise Unexportable("bad_tools", "two tools share a name")
    return read


def _tool(index: int, raw: Any) -> Tool:
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or raw.get("type") != "function" or not isinstance(function, dict):
        raise Unexportable("bad_tools", f"tool {index} is not a function schema")
    name, parameters = function.get("name"), function.get("parameters")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise Unexportable("bad_tools", f"tool {index} has no valid name")
    if not isinstance(function.get("description"), str):
        raise Unexportable("bad_tools", f"tool {name} has no description")
    if (
        not isinstance(parameters, dict)
        or parameters.get("type") != "object"
        or not isinstance(parameters.get("properties"), dict)
    ):
        raise Unexportable("bad_tools", f"tool {name}'s parameters are not an object schema")
    return Tool(name=name, description=function["description"], parameters=parameters)


def _message(index: int, raw: Any) -> Message:
    where = f"message {index}"
    if not isinstance(raw, dict):
        raise Unexportable("bad_message", f"{where} is not an object")
    role, content = raw.get("role"), raw.get("content")
    if role not in ROLES:
        raise Unexportable("unknown_role", f"{where} has role {role!r}")
    if role == "system" and index:
        raise Unexportable("system_not_first", f"{where} is a system message")
    calls = _calls(where, raw.get("tool_calls")) if role == "assistant" else ()
    if raw.get("tool_calls") and role != "assistant":
        raise Unexportable("bad_tool_call", f"{where} ({role}) has tool calls")
    if not (isinstance(content, str) or (content is None and calls)):
        raise Unexportable("bad_content", f"{where} ({role}) has no text")
    call_id = raw.get("tool_call_id")
    if role == "tool" and not (isinstance(call_id, str) and call_id):
        raise Unexportable("unexpected_tool_result", f"{where} names no tool_call_id")
    return Message(role, content, calls, call_id if role == "tool" else None)


def _calls(where: str, raw: Any) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise Unexportable("bad_tool_call", f"{where}: tool_calls is not a list")
    calls = tuple(_call(f"{where}, call {index}", call) for index, call in enumerate(raw))
    if len({call.id for call in calls}) != len(calls):
        raise Unexportable("bad_tool_call", f"{where}: two calls share an id")
    return calls


def _call(where: str, raw: Any) -> ToolCall:
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(function, dict) or raw.get("type", "function") != "function":
        raise Unexportable("bad_tool_call", f"{where} is not a function call")
    call_id, name, arguments = raw.get("id"), function.get("name"), function.get("arguments")
    if not isinstance(call_id, str) or not call_id:
        raise Unexportable("bad_tool_call", f"{where} has no id")
    if not isinstance(name, str) or not name:
        raise Unexportable("bad_tool_call", f"{where} names no tool")
    if not isinstance(arguments, str) or not _is_json_object(arguments):
        raise Unexportable("bad_arguments", f"{where} ({name}): arguments are not a JSON object")
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _check_order(messages: tuple[Message, ...]) -> None:
    """Each assistant message's calls are answered, once each, by the tool messages right after
    it; a tool message answers nothing else; some message is the assistant's."""
    pending: set[str] = set()
    for index, message in enumerate(messages):
        if message.role == "tool":
            if message.tool_call_id not in pending:
                raise Unexportable(
                    "unexpected_tool_result",
                    f"message {index} answers {message.tool_call_id!r}, which no open call has",
                )
            pending.discard(message.tool_call_id)
            continue
        if pending:
            raise Unexportable("unanswered_call", f"calls {sorted(pending)} have no tool message")
        pending = {call.id for call in message.tool_calls}
    if pending:
        raise Unexportable("unanswered_call", f"calls {sorted(pending)} have no tool message")
    if not any(message.role == "assistant" for message in messages):
        raise Unexportable("no_assistant_message", "no message is the assistant's")
