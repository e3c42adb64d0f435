"""The two roles of a rollout, played by the test endpoint: the policy and the simulated user.

- **Policy** requests (stage ``policy``) carry tools and the environment's own system message,
  as a real model sees it. The script under the most specific of :func:`conversation_keys` of
  the conversation's ``user`` messages (its opening's :func:`script_key` at least) answers,
  entry *n* for a request holding *n* assistant messages; past its end the policy says
  :data:`PAST_END` ("Done."), and without a script it answers as :func:`generic` does.
- **Simulated user** requests are rendered from ``rollout_user.md`` and then hold the dialogue
  from the user's side (the agent's messages as ``user``, its own as ``assistant``); the first
  turn is the system message and :data:`OPENING_CUE`. The script under :func:`user_script_key`
  of the task answers, entry *n* after *n* turns of its own; past its end, or without a script,
  the rule-based user of ``simulated_user.py``.

:func:`oracle_script` turns a reference trajectory into the policy script that replays it.
"""

from __future__ import annotations

import json
from typing import Any

from envmill.schemas.rollout import OPENING_CUE  # the user side begins with it
from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest, generic
from envmill.tasks.offline_llm.scripts import conversation_keys, user_script_key
from envmill.tasks.offline_llm.simulated_user import read_prompt, user_reply

__all__ = [
    "OPENING_CUE",
    "PAST_END",
    "oracle_script",
    "respond_policy",
    "respond_user",
    "solution_script",
]
PAST_END = "Done."  # the policy's reply past the end of its script


def respond_policy(request: ChatRequest) -> ChatReply:
    """The policy's script entry for this turn, :data:`PAST_END` past it, else ``generic``; the
    script is the one under the most specific of the conversation's keys that has one."""
    users = [m.get("content") for m in request.messages if m.get("role") == "user"]
    if request.scripts is None or not users or not isinstance(users[0], str):
        return generic(request)
    turn = sum(1 for m in request.messages if m.get("role") == "assistant")
    said = [text for text in users if isinstance(text, str)]
    tools = [t.get("function", {}).get("name", "") for t in request.tools]
    for key in conversation_keys(said, tools):
        scripted, reply = request.scripts.entry(key, turn)
        if scripted:
            return reply if reply is not None else ChatReply(content=PAST_END)
    return generic(request)


def respond_user(request: ChatRequest) -> ChatReply:
    """The simulated user's script entry for this turn, else the rule-based user's reply."""
    system = next((m for m in request.messages if m.get("role") == "system"), {})
    prompt = read_prompt(str(system.get("content") or ""))
    said = request.texts("assistant")
    if request.scripts is not None:
        turn = sum(1 for m in request.messages if m.get("role") == "assistant")
        _, reply = request.scripts.entry(user_script_key(prompt.task), turn)
        if reply is not None:
            return reply
    return ChatReply(content=user_reply(prompt, said, request.last_text("user")))


def oracle_script(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The policy script that replays a trajectory's assistant messages (Chat Completions, as in
    ``trajectories.messages_json``), in order: tool calls with their arguments as JSON text
    (verbatim when they are text already), text messages as content."""
    script = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        reply: dict[str, Any] = {"content": message.get("content")}
        calls = message.get("tool_calls") or []
        if calls:
            reply["tool_calls"] = [_scripted_call(call) for call in calls]
        script.append(reply)
    return script


def solution_script(
    user_messages: list[str], steps: list[dict[str, Any]], first_steps: list[int]
) -> list[dict[str, Any]]:
    """The policy script that makes a scenario's reference calls, each message's in turn (one
    call a reply), and ends each message with a short text reply: for a scenario with no
    reference trajectory (one rejected by ``grounded`` alone, evaluated all the same).
    ``first_steps[i]`` is where message i's steps begin in ``steps``."""
    bounds = [*first_steps, len(steps)]
    script: list[dict[str, Any]] = []
    for index in range(len(user_messages)):
        for step in steps[bounds[index] : bounds[index + 1]]:
            call = {"name": step["tool"], "arguments": step.get("arguments", {})}
            script.append({"content": None, "tool_calls": [_scripted_call(call)]})
        script.append({"content": PAST_END})
    return script


def _scripted_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or call  # a bare {"name", "arguments"} is taken as well
    arguments = function.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"name": function.get("name", ""), "arguments": arguments}
