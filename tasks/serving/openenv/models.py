"""The wire types of a served scenario: OpenEnv's Action, Observation and State, subclassed.

An action is one assistant turn: tool calls (name and arguments) and/or text; text alone is the
agent's reply, which ends a non-conversational episode. An observation is the conversation so
far (Chat Completions messages), what this turn added, the results of its tool calls and the
tools on offer; ``reward`` is 0 until the episode ends, then the share of the scenario's checks
that hold (DESIGN §3.3), with each check's result beside it.
"""

from __future__ import annotations

import json
from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, ConfigDict, Field


class ToolCallSpec(BaseModel):
    """One tool call: the tool's name and its arguments (a JSON object)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="the tool to call")
    arguments: dict[str, Any] = Field(default_factory=dict, description="its arguments")


class ScenarioAction(Action):
    """The agent's next assistant message: tool calls, text, or both."""

    tool_calls: list[ToolCallSpec] = Field(default_factory=list, description="calls, in order")
    content: str | None = Field(default=None, description="text; alone, the agent's reply")

    @classmethod
    def call(cls, tool: str, arguments: dict[str, Any] | None = None) -> ScenarioAction:
        """One tool call."""
        return cls(tool_calls=[ToolCallSpec(name=tool, arguments=arguments or {})])

    @classmethod
    def reply(cls, text: str) -> ScenarioAction:
        """A reply in text (the last turn of a non-conversational episode)."""
        return cls(content=text)

    def message(self) -> dict[str, Any]:
        """The assistant message the episode takes (call ids are the episode's to give)."""
        calls = [{"name": c.name, "arguments": c.arguments} for c in self.tool_calls]
        return {"role": "assistant", "content": self.content, "tool_calls": calls}


class ScenarioObservation(Observation):
    """The conversation after a reset or a step; ``done`` and ``reward`` as OpenEnv's."""

    scenario_id: str = ""
    messages: list[dict[str, Any]] = Field(default_factory=list, description="all so far")
    new_messages: list[dict[str, Any]] = Field(default_factory=list, description="this turn's")
    tool_results: list[dict[str, Any]] = Field(
        default_factory=list, description="the results of this turn's calls, in order"
    )
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="the tools on offer (Chat Completions schemas)"
    )
    termination: str | None = Field(default=None, description="why it ended (DESIGN §3.4)")
    reason: str = ""
    check_results: list[bool] = Field(default_factory=list, description="when done")
    success: bool | None = Field(default=None, description="every check held (when done)")


class ScenarioState(State):
    """The session's episode: which scenario, how far, and how it ended."""

    scenario_id: str | None = None
    env_id: str | None = None
    mode: str | None = None
    sample: int = 0
    done: bool = False
    termination: str | None = None
    reward: float | None = None
    success: bool | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)


def tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool results among ``messages`` (their content is the result's canonical JSON)."""
    return [json.loads(m["content"]) for m in messages if m.get("role") == "tool"]
