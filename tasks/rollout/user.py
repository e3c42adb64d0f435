"""The simulated user of a conversational episode: a model that holds the task and the facts.

It sees the dialogue from its own side: the agent's words as ``user`` messages, its own as
``assistant`` ones, no tool traffic. It says what it wants, reveals a fact when asked, and ends
the conversation with the stop marker (``schemas.rollout.STOP_MARKER``).
"""

from __future__ import annotations

from typing import Any, Protocol

from envmill.schemas.rollout import OPENING_CUE, STOP_MARKER, USER_STAGE
from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.core.facts import flatten_facts, said_as
from envmill.tasks.llm import LlmClient, render


class SimulatedUser(Protocol):
    """Anything that answers the agent: an LLM user, a script, a person at a keyboard."""

    def reply(self, conversation: list[dict[str, Any]]) -> str:
        """The user's next message (the stop marker in it ends the episode)."""
        ...


class LlmUser:
    """The user played by the ``rollout_user`` stage's model; its calls are cached per sample."""

    def __init__(self, client: LlmClient, scenario: ScenarioSpec, *, item: str, sample: int = 0):
        facts = [(f.key, said_as(f.key, f.value)) for f in flatten_facts(scenario.user_facts)]
        self.prompt = render("rollout_user", task=scenario.task, facts=facts, stop=STOP_MARKER)
        self.client, self.item, self.sample = client, item, sample

    def reply(self, conversation: list[dict[str, Any]]) -> str:
        messages = [*self.prompt.messages, *user_side(conversation)]
        reply = self.client.complete(
            USER_STAGE,
            messages,
            item=self.item,
            sample=self.sample,
            prompt_hash=self.prompt.prompt_hash,
        )
        return reply.text


def user_side(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The dialogue as the user sees it: its cue to begin, then its own words as ``assistant``
    and the agent's as ``user``; tool calls and results are not shown."""
    turns: list[dict[str, Any]] = [{"role": "user", "content": OPENING_CUE}]
    for message in conversation:
        role, text = message.get("role"), message.get("content")
        if role not in ("user", "assistant") or not isinstance(text, str) or not text.strip():
            continue
        flipped = "assistant" if role == "user" else "user"
        if turns[-1]["role"] == flipped:  # narration before a call, then the answer: one turn
            turns[-1] = {"role": flipped, "content": f"{turns[-1]['content']}\n\n{text}"}
        else:
            turns.append({"role": flipped, "content": text})
    return turns


def split_stop(text: str) -> tuple[str, bool]:
    """The user's words without the stop marker, and whether it was there."""
    if STOP_MARKER not in text:
        return text.strip(), False
    return text.replace(STOP_MARKER, "").strip(), True
