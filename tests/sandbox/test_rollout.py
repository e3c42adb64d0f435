"""Reference trajectories (DESIGN §3.4): facts revealed before use, the date in the system message,
the one reward function, and the trajectory row with its ``success`` column.

Reports are built here from a real sandbox run of each reference solution rather than by
certification, so these tests follow the trajectory contract, not the gates' current state.
"""

from __future__ import annotations

import json
import re

import pytest

from envmill.schemas.ids import canonical_json, content_id
from envmill.schemas.scenario import GATES, CertificationReport, GateResult, ScenarioSpec
from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.scenarios.generate import generate_scenario_batch
from envmill.tasks.certify.reward import score_checks
from envmill.tasks.core.facts import said_moment
from envmill.tasks.envs import admit_environment
from envmill.tasks.envs.reading import compute_env_id
from envmill.tasks.rollout import (
    describe_now,
    match_strength,
    opening_message,
    reference_trajectory,
    system_prompt,
)
from envmill.warehouse.rows import trajectory_row
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import query

INTRO = "Clinic front desk."
RULES = ["A patient may not hold two appointments at the same time."]


def report_for(spec: ScenarioSpec, env, sandbox, checks: list[bool] | None = None):
    """A certified report whose step results come from running the solution in the sandbox."""
    with sandbox.episode(env.source, env.class_name, spec.initial_state) as episode:
        outcomes = [episode.call(s.tool, s.arguments) for s in spec.reference_solution]
    assert all(outcome.succeeded for outcome in outcomes), outcomes
    return CertificationReport(
        scenario_id=spec.scenario_id,
        gates=[GateResult(gate=gate, passed=True) for gate in GATES],
        step_results=[outcome.result for outcome in outcomes],
        check_results=checks if checks is not None else [True] * len(spec.checks),
    )


@pytest.fixture(scope="module")
def clinic_pairs(clinic, clinic_scenarios, sandbox) -> list[tuple[ScenarioSpec, object]]:
    specs = [ScenarioSpec(env_id=clinic.env_id, **raw) for raw in clinic_scenarios["certified"]]
    return [(spec, report_for(spec, clinic, sandbox)) for spec in specs]


@pytest.fixture(scope="module")
def procedural_pairs(sandbox) -> list[tuple[ScenarioSpec, object]]:
    """Conversational scenarios of two procedural domains, built through the real sandbox."""
    pairs = []
    for domain in ("banking", "clinic"):
        compiled = compile_environment(load_domain(domain), 3)
        env = admit_environment(compiled.source, sandbox)
        assert env.env_id == compute_env_id(compiled.source)
        batch = generate_scenario_batch(
            compiled, env.env_id, 3, 3, sandbox, conversational_share=1.0
        )
        pairs += [(spec, report_for(spec, env, sandbox)) for spec in batch.scenarios]
    assert len(pairs) >= 4
    return pairs


def trajectory_of(spec, report):
    return reference_trajectory(spec, report, introduction=INTRO, business_rules=RULES)


def fact_text(value) -> str | None:
    """A fact value as text, the way an argument equal to it would be compared."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).casefold()


def tool_call(message: dict) -> tuple[str, dict] | None:
    if not message.get("tool_calls"):
        return None
    (call,) = message["tool_calls"]
    return call["function"]["name"], json.loads(call["function"]["arguments"])


# --- conversational mode: facts before use -------------------------------------------------


def assert_facts_revealed_before_use(spec, trajectory) -> int:
    """Every argument equal to a fact appears in an earlier user message; returns the count."""
    facts = {fact_text(v) for v in spec.user_facts.values()} - {None}
    checked, heard = 0, []
    for message in trajectory.messages:
        if message["role"] == "user":
            heard.append(message["content"].casefold())
        call = tool_call(message)
        for value in call[1].values() if call else []:
            text = fact_text(value)
            if text in facts:
                checked += 1
                forms = {text, (said_moment(str(value)) or text).casefold()}  # "14 March 2025"
                assert any(f in said for f in forms for said in heard), (text, call)
    return checked


def test_conversational_user_reveals_each_fact_before_the_agent_uses_it(
    clinic_pairs, procedural_pairs
):
    conversational = [p for p in clinic_pairs + procedural_pairs if p[0].mode == "conversational"]
    assert len(conversational) >= 6
    used = [assert_facts_revealed_before_use(s, trajectory_of(s, r)) for s, r in conversational]
    assert sum(used) >= len(conversational)  # not vacuous: facts were used, and checked


def test_facts_combined_in_one_argument_or_written_differently_are_revealed(
    clinic, clinic_scenarios, sandbox
):
    raw = dict(clinic_scenarios["certified"][3])
    raw["task"] = "You are Chen Wei. You want a dermatology visit and a new phone number."
    raw["user_facts"] = {
        "name": "Chen Wei",
        "patient_id": "P003",
        "new_phone": "+1 (555) 0199",
        "date": "2025-03-14",
        "time": "09:00",
        "reason": "skin rash",
    }
    spec = ScenarioSpec(env_id=clinic.env_id, **raw)
    messages = trajectory_of(spec, report_for(spec, clinic, sandbox)).messages
    heard = " ".join(m["content"] for m in messages if m["role"] == "user")
    for value in ("14 March 2025", "09:00", "+1 (555) 0199", "skin rash", "P003"):
        assert value in heard


def test_each_question_is_answered_by_the_next_user_message(procedural_pairs):
    """Staff who name their record up front ("Please void folio charge CHG-1") may leave
    nothing to ask but the yes; a run still has conversations that ask."""
    asking = [p for p in procedural_pairs if p[0].mode == "conversational" and p[0].user_facts]
    assert asking
    asked = 0
    for spec, report in asking:
        messages = trajectory_of(spec, report).messages
        questions = [
            i
            for i, m in enumerate(messages)
            if m["role"] == "assistant" and m["content"] and not m.get("tool_calls")
        ][:-1]  # the last one is the final answer; a note beside a call is no question
        asked += bool(questions)
        for i in questions:
            assert messages[i]["content"].endswith("?")
            assert messages[i + 1]["role"] == "user"
            assert tool_call(messages[i + 2])  # the call that needed the answer comes next
    assert asked >= len(asking) / 2, (asked, len(asking))


def test_procedural_opening_is_the_persona_request_not_the_facts(procedural_pairs):
    """A conversational task is an instruction to the user ("You are …"); the agent sees the
    request in the first person, without the name, the conduct lines or any fact but the
    record it is about, which staff name as a colleague would ("cancel booking BKG-9")."""
    talking = [(s, r) for s, r in procedural_pairs if s.mode == "conversational"]
    assert talking
    for spec, report in talking:
        opening = trajectory_of(spec, report).messages[1]
        assert opening == {"role": "user", "content": opening_message(spec)}
        assert spec.task.startswith("You are ") and "You " not in opening["content"]
        assert "volunteer" not in opening["content"] and "the agent" not in opening["content"]
        said = [
            key
            for key, value in spec.user_facts.items()
            if isinstance(value, str) and len(value) > 3 and value in opening["content"]
        ]
        assert len(said) <= 1, said
        assert all(re.search(r" (?:name|title|id)$", key) for key in said), said


def test_hand_written_instructions_become_the_users_own_words(clinic_pairs):
    spec = next(s for s, _ in clinic_pairs if s.user_facts.get("name") == "Alice Moreno")
    opening = opening_message(spec)
    assert re.match(r"^(?:\w[\w ]*[.!,] )?I cannot make my cardiology appointment", opening)
    assert "Alice Moreno" not in opening and "You" not in opening and " your " not in opening
    report = next(r for s, r in clinic_pairs if s.scenario_id == spec.scenario_id)
    messages = trajectory_of(spec, report).messages
    said = " ".join(m["content"] for m in messages if m["role"] == "user")
    assert "Alice Moreno" in said  # asked for before the lookup by name
    assert "1984-02-17" not in said  # a fact no step uses stays unsaid


def test_fact_matching_rules():
    assert match_strength("P003", "p003") == 2 and match_strength(64, 64.0) == 2
    assert match_strength("64", 64.0) == 2 and not match_strength(True, True)
    assert match_strength("skin rash", "skin rash follow-up") == 1
    assert match_strength("Alice Moreno, born 1984", "Alice Moreno") == 1
    assert not match_strength("P003", "P0031") and not match_strength(3, "P003")
    assert match_strength("2025-03-11 at 11:00, same doctor", "2025-03-11T11:00:00") == 1
    assert not match_strength("2025-03-11 at 12:00", "2025-03-11T11:00:00")
    narrative = "First, please move my appointment to 2025-03-11 at 11:00. " * 3
    assert not match_strength(narrative, "2025-03-11T11:00:00")


# --- the system message, the shape, the reward -------------------------------------------------


def test_non_conversational_shape_is_system_task_calls_answer(clinic_pairs):
    for spec, report in (p for p in clinic_pairs if p[0].mode == "non_conversational"):
        trajectory = trajectory_of(spec, report)
        n = len(spec.reference_solution)
        roles = [m["role"] for m in trajectory.messages]
        assert roles == ["system", "user", *["assistant", "tool"] * n, "assistant"]
        assert trajectory.messages[1]["content"] == spec.task
        pairs = zip(trajectory.messages[2:-1:2], trajectory.messages[3:-1:2], strict=True)
        for (call, result), step, outcome in zip(
            pairs, spec.reference_solution, report.step_results, strict=True
        ):
            assert tool_call(call) == (step.tool, step.arguments)
            assert result["tool_call_id"] == call["tool_calls"][0]["id"]
            assert result["content"] == canonical_json(outcome)
        assert trajectory.steps == n and trajectory.termination == "finished"


def test_system_message_states_introduction_date_and_rules(clinic_pairs):
    clock = "2025-03-10T09:00:00"
    spec, report = next(p for p in clinic_pairs if p[0].initial_state["current_time"] == clock)
    system = trajectory_of(spec, report).messages[0]
    assert system["role"] == "system" and system["content"].startswith(INTRO)
    assert "Current date and time: 2025-03-10 09:00 (Monday)." in system["content"]
    assert f"- {RULES[0]}" in system["content"]


@pytest.mark.parametrize(
    ("state", "line"),
    [
        ({"current_date": "2025-03-10"}, "Current date: 2025-03-10 (Monday)."),
        ({"now": "2025-03-09T18:30:00Z"}, "Current date and time: 2025-03-09 18:30 UTC (Sunday)."),
        ({"today": "next Tuesday"}, "Current date and time: next Tuesday."),
        ({"current_time": 1741597200, "items": {}}, None),
        ({}, None),
    ],
)
def test_the_clock_comes_from_the_state_or_is_not_mentioned(state, line):
    assert describe_now(state) == line
    prompt = system_prompt("Intro.", [], state)
    assert (line in prompt) if line else "Current date" not in prompt


def test_reward_and_success_come_from_score_checks(clinic_pairs, clinic, sandbox):
    spec, _ = clinic_pairs[0]
    for checks in ([True, True], [True, False], [False, False]):
        trajectory = trajectory_of(spec, report_for(spec, clinic, sandbox, checks))
        expected = score_checks(checks)
        assert (trajectory.reward, trajectory.success) == (expected.reward, expected.success)
        assert trajectory.check_results == checks
    assert trajectory_of(*clinic_pairs[0]).success is True


def test_trajectory_id_hashes_scenario_policy_and_messages(clinic_pairs):
    spec, report = clinic_pairs[1]
    trajectory = trajectory_of(spec, report)
    assert trajectory.trajectory_id == content_id(
        {"scenario_id": spec.scenario_id, "policy": "reference", "messages": trajectory.messages}
    )
    assert trajectory_of(spec, report).trajectory_id == trajectory.trajectory_id  # deterministic


# --- the warehouse row ---------------------------------------------------------------------------


def test_success_is_stored_and_old_parts_without_it_still_read(clinic_pairs, tmp_path):
    import pyarrow.parquet as pq

    from envmill.warehouse.commits import Commit, describe_part, publish

    spec, report = clinic_pairs[0]
    trajectory = trajectory_of(spec, report)
    wh = Warehouse(tmp_path / "data")
    new = wh.write("trajectories", [trajectory_row(trajectory, "run-1")], key="new")
    old = pq.read_table(new).drop(["success"])
    other = content_id("older")
    old = old.set_column(0, "trajectory_id", [[other]])
    pq.write_table(old, wh.table_dir("trajectories") / "part-old.parquet")
    info = describe_part(wh.table_dir("trajectories") / "part-old.parquet", 1)
    publish(wh.root, Commit(key="old", parts={"trajectories": info}))  # as an older writer did
    rows = query(wh.root, "SELECT trajectory_id, success FROM trajectories").to_pylist()
    assert {r["trajectory_id"]: r["success"] for r in rows} == {
        trajectory.trajectory_id: True,
        other: None,  # unknown, not False: the old part predates the column
    }
