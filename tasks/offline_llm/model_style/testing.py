"""The model-style answers to the environment check's tester stages: the calls that test the
tools listed (``probing``), and a probe state for the tools that never succeeded. The judge's
verdicts stay the offline model's own, which read only the probes' results and diffs."""

from __future__ import annotations

from typing import Any

from envmill.tasks.offline_llm.model_style.choice import design_of
from envmill.tasks.offline_llm.model_style.design import Design
from envmill.tasks.offline_llm.model_style.probing import laid_out, negative_call
from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest
from envmill.tasks.offline_llm.skeleton import answer
from envmill.tasks.offline_llm.skeleton_check import fenced_json


def respond_probe(request: ChatRequest) -> ChatReply:
    text = (request.texts("user") or [""])[0]
    tools = fenced_json(text, "Tools to test:") or []
    state = fenced_json(text, "Initial state:") or {}
    return answer({"calls": planned_calls(design_of(request), tools, state)})


def planned_calls(
    design: Design, tools: list[dict[str, Any]], state: dict[str, Any]
) -> list[dict[str, Any]]:
    """For each tool, the calls its ``calls_needed`` asks for, in running order."""
    positives = design.probes(state)
    units = []
    for tool in tools:
        needed = tool.get("calls_needed", ["positive"])
        unit = positives.get(tool["name"])
        if "positive" in needed and unit:
            units.append(unit)
        if "negative" in needed:
            units.append([_negative(design, tool, state, unit)])
    return laid_out([unit for unit in units if unit and unit[0] is not None])


def _negative(
    design: Design, tool: dict[str, Any], state: dict[str, Any], unit: list[dict] | None
) -> dict[str, Any] | None:
    chosen = design.negatives.get(tool["name"])
    if chosen is not None:
        arguments, expectation = chosen
        return {"tool": tool["name"], "kind": "negative", "arguments": arguments,
                "expectation": expectation}  # fmt: skip
    return negative_call(tool, state, unit[-1] if unit else None)


def respond_probe_state(request: ChatRequest) -> ChatReply:
    """No change to the state (the model believes its initial state suits every tool), and the
    positive calls again for the tools listed."""
    text = (request.texts("user") or [""])[0]
    tools = fenced_json(text, "Tools that never succeeded:") or []
    state = fenced_json(text, "Initial state:") or {}
    asked = [{**tool, "calls_needed": ["positive"]} for tool in tools]
    return answer({"state": {}, "calls": planned_calls(design_of(request), asked, state)})
