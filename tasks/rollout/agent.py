"""The policy of a rollout: a model with native tool calling, through the LLM layer.

Each turn is one cached chat completion (messages, tools and the sample index make its key), so
a resumed run replays the turns it already paid for, and every call is an ``llm_calls`` row.
"""

from __future__ import annotations

from typing import Any, Protocol

from envmill.schemas.rollout import POLICY_STAGE
from envmill.tasks.llm import LlmClient
from envmill.tasks.rollout.actions import Action


class Policy(Protocol):
    """Anything that answers a conversation with an assistant message (see ``actions.py``)."""

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any: ...


class LlmPolicy:
    """The ``policy`` stage's model (``llm.stages.policy``, else ``llm.default``)."""

    def __init__(self, client: LlmClient, *, item: str, sample: int = 0) -> None:
        self.client, self.item, self.sample = client, item, sample

    @property
    def name(self) -> str:
        return self.client.settings.for_stage(POLICY_STAGE).model

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The model's next assistant message; LlmCallError when the call failed for good."""
        reply = self.client.complete(
            POLICY_STAGE, messages, tools=tools, item=self.item, sample=self.sample
        )
        return Action(reply.text, list(reply.tool_calls)).message()
