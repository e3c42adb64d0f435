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
from envmill.tasks.offline_llm.conditional import as_conditional
from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest
from envmill.tasks.offline_llm.skeleton import answer, slips_for, topic_of
from envmill.tasks.offline_llm.skeleton_source import topic_module
from envmill.tasks.sandbox.shared import process_sandbox

_INDEX = re.compile(r"^Scenario: (\d+)$", re.MULTILINE)
_KIND = re.compile(r"^Kind: (\w+)$", re.MULTILINE)
TRIVIAL = "def check(initial_state, final_state):\n    return True\n"
TRIES = 8  # scenario numbers tried per scenario asked for, for one of the kind asked


@lru_cache(maxsize=256)
def scenario_for(
    topic: str, index: int, conversational: bool = False, kind: str = "change"
) -> ScenarioSpec | None:
    """The procedural scenario of ``kind`` for ``topic``'s module at ``index`` (or the next
    number that makes one), phrased for a conversation (facts the user reveals) when
    ``conversational``. The number is chosen without the phrasing, so every stage's prompt
    (only the task's names the mode) gets the same scenario's part."""
    other = None  # a scenario of another kind: the state at least is one
    for number in range(index * TRIES, index * TRIES + TRIES):  # no two scenarios share one
        try:
            plain = _of_kind(_build(topic, number, kind, conversational=False), kind, topic)
        except ScenarioSkipped:
            continue
        if not isinstance(plain, ScenarioSpec):
            other = other or plain[0]
            continue
        if not conversational:
            return plain
        try:
            spoken = _of_kind(_build(topic, number, kind, conversational=True), kind, topic)
        except ScenarioSkipped:
            return plain
        return spoken if isinstance(spoken, ScenarioSpec) else plain
    return other


def _of_kind(spec: ScenarioSpec, kind: str, topic: str) -> ScenarioSpec | tuple[ScenarioSpec]:
    """``spec`` when it passes for a scenario of ``kind``, else ``(spec,)``. The procedural
    generator builds the kind asked for where it can (else another chain, which the fake model
    tells as a conditional when asked for one); its answers may follow a change, which
    ScenGenerator's questions and refusals never do."""
    built = (spec.kind or "change").split("+")[0]
    if kind == "conditional" and built not in ("answer", "refusal", "conditional"):
        return as_conditional(spec, topic_module(topic).compiled) or (spec,)
    changers = {t.tool for t in topic_module(topic).compiled.tools if t.kind == "state_change"}
    changes = any(step.tool in changers for step in spec.reference_solution)
    if built == kind and (kind not in ("answer", "refusal") or not changes):
        return spec
    return (spec,)


def _build(topic: str, number: int, kind: str, *, conversational: bool) -> ScenarioSpec:
    top = kind if kind in ("answer", "refusal") else "change"
    return build_scenario(
        topic_module(topic).compiled,
        sha256_hex(topic)[:16],
        number,
        0,
        process_sandbox(SandboxLimits()),
        faker=Faker(FAKER_LOCALE),
        conversational_share=1.0 if conversational else 0.0,
        state_builder=build_initial_state,
        kind_shares={top: 1.0},
        chain_kind=kind if top == "change" else None,
    )


def _scenario(request: ChatRequest) -> ScenarioSpec | None:
    prompt = (request.texts("user") or [""])[0]
    found, kind = _INDEX.search(prompt), _KIND.search(prompt)
    conversational = "Mode: conversational" in prompt
    number = int(found.group(1)) if found else 0
    return scenario_for(topic_of(request), number, conversational, kind[1] if kind else "change")


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
    said: dict = {}  # a conditional says which branch applied: the value it read
    if spec.expected_answer is not None:
        said = {
            "expected_answer": spec.expected_answer.model_dump(),
            "reply": spec.reference_answer,
        }
    elif spec.refusal is not None:
        said = {"refusal": spec.refusal.model_dump(), "reply": spec.reference_answer}
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
