"""Responders for ScenGenerator's stages: the scenario the procedural generator makes for the
prompt's topic and scenario number, cut into what each stage asks for — the state, the task with
its steps, the checks (without the guard, which envmill adds itself). The fake model runs the
procedural chain in a sandbox of its own, as a capable model would reason its way to calls that
work."""

from __future__ import annotations

import re
from functools import lru_cache

from faker import Faker

from envmill.schemas.ids import sha256_hex
from envmill.schemas.scenario import ScenarioSpec
from envmill.schemas.settings import SandboxLimits
from envmill.tasks.backends.procedural.scenarios.generate import (
    FAKER_LOCALE,
    ScenarioSkipped,
    build_scenario,
)
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest
from envmill.tasks.offline_llm.skeleton import answer, slips_for, topic_of
from envmill.tasks.offline_llm.skeleton_source import topic_module
from envmill.tasks.sandbox.shared import process_sandbox

_INDEX = re.compile(r"^Scenario: (\d+)$", re.MULTILINE)
TRIVIAL = "def check(initial_state, final_state):\n    return True\n"
TRIES = 5  # scenario numbers tried after the one asked for, when the chain makes no change


@lru_cache(maxsize=256)
def scenario_for(topic: str, index: int, conversational: bool = False) -> ScenarioSpec | None:
    """The procedural scenario for ``topic``'s module at ``index`` (or the next that works),
    phrased for a conversation (facts the user reveals) when ``conversational``. The number is
    chosen without the phrasing, so every stage's prompt (only the task's names the mode) gets
    the same scenario's part."""
    for number in range(index, index + TRIES):
        try:
            plain = _build(topic, number, conversational=False)
        except ScenarioSkipped:
            continue
        if not conversational:
            return plain
        try:
            return _build(topic, number, conversational=True)
        except ScenarioSkipped:
            return plain
    return None


# ScenGenerator writes tasks that change the state; questions and refusals are not its kind
CHANGES_ONLY = {"change": 1.0}


def _build(topic: str, number: int, *, conversational: bool) -> ScenarioSpec:
    return build_scenario(
        topic_module(topic).compiled,
        sha256_hex(topic)[:16],
        number,
        0,
        process_sandbox(SandboxLimits()),
        faker=Faker(FAKER_LOCALE),
        conversational_share=1.0 if conversational else 0.0,
        state_builder=build_initial_state,
        kind_shares=CHANGES_ONLY,
    )


def _scenario(request: ChatRequest) -> ScenarioSpec | None:
    prompt = (request.texts("user") or [""])[0]
    found = _INDEX.search(prompt)
    conversational = "Mode: conversational" in prompt
    return scenario_for(topic_of(request), int(found.group(1)) if found else 0, conversational)


def respond_scenario_state(request: ChatRequest) -> ChatReply:
    spec = _scenario(request)
    state = dict(spec.initial_state) if spec else {}
    if slips_for(request, "counter_behind"):
        state |= {name: 1 for name in state if name.startswith("next_")}
    return answer({"state": state})


def respond_scenario_task(request: ChatRequest) -> ChatReply:
    spec = _scenario(request)
    if spec is None:
        return answer({"task": "Nothing to do.", "user_facts": {}, "steps": []})
    steps = [step.model_dump() for step in spec.reference_solution]
    if slips_for(request, "wrong_step"):
        steps[0] = {**steps[0], "tool": steps[0]["tool"] + "_now"}
    said = (
        {"expected_answer": spec.expected_answer.model_dump(), "reply": spec.reference_answer}
        if spec.expected_answer is not None
        else {}
    )  # a conditional says which branch applied: the value it read
    task, facts = spec.task, spec.user_facts
    if slips_for(request, "vague_task"):
        task, facts = "Please sort out my request.", {}
    return answer({"task": task, "user_facts": facts, "steps": steps, **said})


def respond_scenario_checks(request: ChatRequest) -> ChatReply:
    spec = _scenario(request)
    if slips_for(request, "trivial_checks", repair=request.stage == "scenario_repair"):
        return answer({"checks": [{"fact": "The request was handled", "code": TRIVIAL}]})
    checks = spec.checks[:-1] if spec else []  # the last is the guard: envmill adds its own
    if slips_for(request, "forgetful_checks", repair=request.stage == "scenario_repair"):
        checks = checks[:1]
    return answer({"checks": [{"fact": c.description, "code": c.code} for c in checks]})
