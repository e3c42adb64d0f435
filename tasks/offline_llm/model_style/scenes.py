"""The model-style answers to ScenGenerator's state and task stages: a state the design fills for
the scenario's number and kind, and a task from the design's own templates of that kind, read
off the state the prompt shows."""

from __future__ import annotations

import re
import zlib

from envmill.tasks.offline_llm.model_style.choice import design_of, topic_seed
from envmill.tasks.offline_llm.model_style.design import Design
from envmill.tasks.offline_llm.model_style.scene import Scene, View
from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest
from envmill.tasks.offline_llm.skeleton import answer, topic_of
from envmill.tasks.offline_llm.skeleton_check import fenced_json

_INDEX = re.compile(r"^Scenario: (\d+)$", re.MULTILINE)
_KIND = re.compile(r"^Kind: (\w+)$", re.MULTILINE)
FALLBACK = ("change", "answer")  # what a model writes when no template of the kind fits


def _prompt(request: ChatRequest) -> str:
    return (request.texts("user") or [""])[0]


def scenario_of(request: ChatRequest) -> tuple[int, str]:
    """The scenario's number and kind, as the prompt names them."""
    text = _prompt(request)
    found, kind = _INDEX.search(text), _KIND.search(text)
    return (int(found.group(1)) if found else 0), (kind.group(1) if kind else "change")


def respond_scenario_state(request: ChatRequest) -> ChatReply:
    index, kind = scenario_of(request)
    seed = topic_seed(topic_of(request))
    return answer({"state": design_of(request).build_state(seed, index, kind)})


def respond_scenario_task(request: ChatRequest) -> ChatReply:
    index, kind = scenario_of(request)
    text = _prompt(request)
    state = fenced_json(text, "Initial state:") or {}
    scene = write_scene(design_of(request), View(state, index), kind)
    if scene is None:
        return answer({"task": "Nothing needs doing today.", "steps": []})
    return answer(_as_corrected(scene.answer("Mode: conversational" in text), request))


# the verbs a tool that does an action may start with, as a model reads a tool list
SAME_ACT = {
    "book": ("book", "schedule", "reserve"),
    "cancel": ("cancel",),
    "discard": ("discard",),
    "lend": ("lend", "check_out", "borrow"),
    "renew": ("renew", "extend"),
}
_TOOL_LIST = re.compile(r"name each rule by the tool that enforces it.*one of: ([\w, ]+)")


def _as_corrected(said: dict, request: ChatRequest) -> dict:
    """A model names its refusal's rules in its own words first; told they must be the tools
    that enforce them (and which tools there are), it renames each by the tool its action
    names, as a model reading that message would."""
    found = _TOOL_LIST.search(request.last_text()) if "refusal" in said else None
    if found is None:
        return said
    tools = [name.strip() for name in found.group(1).split(",")]
    verbs = SAME_ACT.get(said["refusal"].get("action", ""), ())
    tool = next((t for verb in verbs for t in tools if t.startswith(verb)), None)
    if tool is None:
        return said
    rules = [{**rule, "rule_id": tool} for rule in said["refusal"]["rules"]]
    return {**said, "refusal": {**said["refusal"], "rules": rules}}


def write_scene(design: Design, view: View, kind: str) -> Scene | None:
    """The first template of ``kind`` that fits the state, starting at one the scenario's number
    picks (so scenarios of a kind tell different stories); else one of a kind every state
    allows."""
    for wanted in (kind, *FALLBACK):
        templates = design.tasks.get(wanted, ())
        start = zlib.crc32(f"{wanted} {view.index}".encode())
        for offset in range(len(templates)):
            scene = templates[(start + offset) % len(templates)](view)
            if scene is not None:
                return scene
    return None
