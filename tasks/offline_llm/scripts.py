"""Scripts: the replies a test or benchmark writes for the two roles of a rollout.

A script is a list of replies under a key. The policy's key is :func:`script_key` of the
conversation's opening (its first ``user`` message), the simulated user's :func:`user_script_key`
of the task its prompt states; the reply a request gets is the entry whose number is how many
turns the role has already taken in that request (its ``assistant`` messages). An answer so
depends on the request alone: episodes running at once never interfere, and a retried request
gets the same answer.

A reply travels as JSON::

    {"content": "text or null", "tool_calls": [{"name": "book", "arguments": {"id": "B1"}}]}

``arguments`` is an object, or a string passed on verbatim (so malformed JSON can be scripted);
``{"empty": true}`` is an empty message (content ``""``, no tool calls), as the ``empty`` fault.
Scripts are uploaded with ``POST /_scripts`` (``{key: [reply, ...]}``, merged into the ones the
endpoint holds; ``null`` removes a key) and forgotten on ``/_reset``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from envmill.tasks.offline_llm.responders import ChatReply

KEY_LENGTH = 16
USER_PREFIX = "user-"  # the simulated user's keys: a namespace of their own
REPLY_FIELDS = {"content", "tool_calls", "empty"}
CALL_FIELDS = {"name", "arguments"}


def script_key(opening: str) -> str:
    """The policy's script key for a conversation whose first ``user`` message is ``opening``
    (stripped before hashing)."""
    return _digest("policy", opening)


def conversation_keys(
    user_messages: Sequence[str], tools: Sequence[str] | None = None
) -> list[str]:
    """The policy's script keys for a conversation whose ``user`` messages so far are
    ``user_messages``, the most specific first: with ``tools`` (the tool names offered now),
    the messages and the tools; then every prefix of the messages, down to the opening
    (:func:`script_key`). Two multi-turn scenarios may open with the same words and differ in a
    later turn, or in the tools they offer (BFCL's miss_func withholds one): either tells their
    scripts apart."""
    texts = [text.strip() for text in user_messages]
    said = "\n\u241e\n".join(texts)
    offered = [_digest("policy", f"{said}\n\u241f\n{','.join(sorted(tools))}")] if tools else []
    keys = [_digest("policy", "\n\u241e\n".join(texts[:n])) for n in range(len(texts), 1, -1)]
    return offered + keys + ([script_key(texts[0])] if texts else [])


def user_script_key(task: str) -> str:
    """The simulated user's script key for ``task`` as the user's prompt states it (stripped)."""
    return USER_PREFIX + _digest("user", task)


def _digest(namespace: str, text: str) -> str:
    data = f"{namespace}\n{text.strip()}".encode()
    return hashlib.sha256(data).hexdigest()[:KEY_LENGTH]


def reply_from_json(data: Any) -> ChatReply:
    """A scripted reply from its JSON; ValueError names what is wrong with it."""
    if not isinstance(data, dict):
        raise ValueError("a reply must be an object")
    if not data.keys() <= REPLY_FIELDS:
        unknown = sorted(set(data) - REPLY_FIELDS)[0]
        raise ValueError(f"unknown field '{unknown}' (known: content, tool_calls, empty)")
    if "empty" in data:
        if data["empty"] is not True or len(data) > 1:
            raise ValueError('an empty reply is {"empty": true} alone')
        return ChatReply(content="")
    content = data.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError("content must be a string or null")
    calls = data.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ValueError("tool_calls must be an array")
    tool_calls = []
    for index, call in enumerate(calls):
        try:
            tool_calls.append(_call_from_json(call))
        except ValueError as exc:
            raise ValueError(f"tool_calls[{index}]: {exc}") from None
    return ChatReply(content=content, tool_calls=tool_calls)


def _call_from_json(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError("a tool call must be an object")
    if not data.keys() <= CALL_FIELDS:
        unknown = sorted(set(data) - CALL_FIELDS)[0]
        raise ValueError(f"unknown field '{unknown}' (known: name, arguments)")
    if not isinstance(data.get("name"), str):
        raise ValueError("name must be a string")
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict | str):
        raise ValueError("arguments must be an object or a string")
    return {"name": data["name"], "arguments": arguments}


def reply_to_json(reply: ChatReply | Mapping[str, Any]) -> dict[str, Any]:
    """The JSON of a reply (a mapping is taken as JSON already, and checked)."""
    if isinstance(reply, Mapping):
        reply_from_json(dict(reply))
        return dict(reply)
    data: dict[str, Any] = {"content": reply.content}
    if reply.tool_calls:
        data["tool_calls"] = [
            {"name": call["name"], "arguments": call["arguments"]} for call in reply.tool_calls
        ]
    return data


def scripts_json(
    scripts: Mapping[str, Sequence[ChatReply | Mapping[str, Any]] | None],
) -> dict[str, list[dict[str, Any]] | None]:
    """The upload JSON of ``{key: [reply, ...] or None}``; ValueError for a bad reply."""
    return {
        key: None if replies is None else [reply_to_json(reply) for reply in replies]
        for key, replies in scripts.items()
    }


def parse_scripts(body: Any) -> dict[str, list[ChatReply] | None]:
    """``{key: [reply, ...] or null}`` from an upload's JSON; ValueError names the problem."""
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object {key: [reply, ...]}")
    scripts: dict[str, list[ChatReply] | None] = {}
    for key, replies in body.items():
        if not key.strip():
            raise ValueError("a script key must not be empty")
        if replies is None:
            scripts[key] = None
            continue
        if not isinstance(replies, list):
            raise ValueError(f"script '{key}' must be an array of replies (or null to remove it)")
        try:
            scripts[key] = [reply_from_json(reply) for reply in replies]
        except ValueError as exc:
            index = next(i for i, r in enumerate(replies) if not _valid(r))
            raise ValueError(f"script '{key}' reply {index}: {exc}") from None
    return scripts


def _valid(reply: Any) -> bool:
    try:
        reply_from_json(reply)
    except ValueError:
        return False
    return True


class ScriptBook:
    """The scripts an endpoint holds, safe to read from many request threads at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scripts: dict[str, list[ChatReply]] = {}

    def add(self, scripts: Mapping[str, list[ChatReply] | None]) -> int:
        """Merge ``scripts`` in (None removes a key); returns how many keys are held."""
        with self._lock:
            for key, replies in scripts.items():
                if replies is None:
                    self._scripts.pop(key, None)
                else:
                    self._scripts[key] = list(replies)
            return len(self._scripts)

    def clear(self) -> None:
        with self._lock:
            self._scripts.clear()

    def __len__(self) -> int:
        return len(self._scripts)

    def has(self, key: str) -> bool:
        return key in self._scripts

    def entry(self, key: str, turn: int) -> tuple[bool, ChatReply | None]:
        """(whether ``key`` has a script, its reply number ``turn`` or None past its end)."""
        with self._lock:
            replies = self._scripts.get(key)
        if replies is None:
            return False, None
        return True, replies[turn] if 0 <= turn < len(replies) else None
