"""Answer and refusal scenarios of the procedural backend: what they say a reply must state
(typed answers, refusal rules), how envmill's judge reads replies against them, and the gates.
"""

from __future__ import annotations

import re

import pytest

from envmill.schemas.scenario import GATES, ScenarioSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.procedural.checks.answers import (
    expected_answer,
    refusal_record,
)
from envmill.tasks.backends.procedural.scenarios import generate as scenarios
from envmill.tasks.backends.procedural.scenarios.refusals import reason_terms, refusal_evidence
from envmill.tasks.backends.procedural.scenarios.subjects import owned_ids
from envmill.tasks.certify.guard import guard_check
from envmill.tasks.certify.scoring import score_final_state
from envmill.tasks.judge import judge_reply
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from tests.conftest import TEST_LIMITS

ERROR = "Account A1 has status 'frozen'; this needs status active"
BALANCE = expected_answer(1250.5, "number", competing=[300, 99.99], exempt=[200])
DUE = expected_answer("2025-03-03T16:00:00", "datetime", competing=["2025-03-04"])
STATUS = expected_answer("in_progress", "text", answer_type="enum", competing=["open", "closed"])
REFUSES = refusal_record(
    "freeze_account",
    ERROR,
    refusal_evidence(ERROR, {}),
    reason_terms(ERROR, {}),
    action="withdraw",
    targets=[],
    subject="account A1",
)
STATE = {"accounts": {"A1": {"balance": 1250.5, "moved": 200, "status": "frozen"}}}


def _says(answer=None, refusal=None, *replies: str) -> list[bool]:
    spec = ScenarioSpec(
        env_id="e", task="t", initial_state=STATE, reference_solution=[], checks=[],
        expected_answer=answer, refusal=refusal,
    )  # fmt: skip
    return [judge_reply(spec, STATE, reply).passed for reply in replies]  # type: ignore[union-attr]


def test_an_answer_is_read_in_any_usual_format():
    assert _says(
        BALANCE,
        None,
        "Your balance is $1,250.50.",
        "1250.5",
        "It is 1,250.50 dollars after moving $200 (account ACC-0012).",
    ) == [True, True, True]
    assert _says(DUE, None, "March 3, 2025 at 4 pm", "2025-03-03T16:00", "3 Mar 2025, 16:00")
    assert _says(STATUS, None, "It is In Progress.", "status: in_progress") == [True, True]


def test_a_wrong_value_and_an_empty_answer_lose():
    assert _says(BALANCE, None, "$1,250.51", "12500.5", "", "   ") == [False] * 4
    assert _says(DUE, None, "3 Mar 2025 at 15:00", "4 March 2025 at 16:00") == [False] * 2
    assert _says(STATUS, None, "It is reopened.", "") == [False] * 2


def test_a_forged_answer_listing_candidates_loses():
    forged = ["It is 1250.5 or 300.", "Maybe 1250.5, 17 or 18.", "1250.5 1250.4 1250.6"]
    assert _says(BALANCE, None, *forged) == [False] * 3
    assert _says(DUE, None, "3 Mar 2025 at 16:00 or 4 Mar 2025") == [False]
    assert _says(STATUS, None, "Either open or in progress.") == [False]


def test_a_refusal_wants_a_decline_with_the_reason_and_no_success():
    assert _says(
        None,
        REFUSES,
        "Sorry, I can\u2019t do that: the account is frozen.",
        "I'm unable to, the account's status does not allow it.",  # any refusal could say it
        "I cannot do that.",  # no reason
        "Done successfully; it is frozen.",  # claims success
        "",
    ) == [True, False, False, False, False]


def _kind_run(sandbox, monkeypatch, kind: str, domains: list[str], seed: int = 5):
    monkeypatch.setattr(scenarios, "KIND_SHARES", {kind: 1.0})
    settings = EnvmillSettings(
        envs=len(domains),
        scenarios_per_env=4,
        batch_size=100,
        seed=seed,
        sandbox=TEST_LIMITS,
        domains=domains,
    )
    (batch,) = plan_batches(settings)
    return synthesize_batch(batch, settings, sandbox)


@pytest.fixture(scope="module")
def kind_runs(sandbox):
    runs = {}
    with pytest.MonkeyPatch.context() as patch:
        for kind, seed in (("answer", 5), ("refusal", 13)):  # 13: a sample with staff refused
            runs[kind] = _kind_run(sandbox, patch, kind, ["banking", "library"], seed)
    return runs


@pytest.mark.parametrize("kind", ["answer", "refusal"])
def test_answer_and_refusal_scenarios_are_certified_by_every_gate(kind_runs, kind):
    output = kind_runs[kind]
    made = [s for s in output.scenarios if s.kind == kind]
    assert made, [s.kind for s in output.scenarios]
    certified = [s for s in made if s.status == "certified"]
    assert certified, [(s.rejected_gate, [g.reason for g in s.gates]) for s in made]
    for record in certified:
        assert record.reference_answer and all(g.passed for g in record.gates)
        assert len(record.gates) == len(GATES)


def test_a_refusal_changes_nothing_and_says_why(kind_runs, sandbox):
    record = next(
        s for s in kind_runs["refusal"].scenarios if s.kind == "refusal" and s.status == "certified"
    )
    spec = ScenarioSpec.model_validate(record.model_dump())
    initial = spec.initial_state
    assert spec.refusal is not None and spec.expected_answer is None
    assert score_final_state(spec, initial, sandbox, spec.answer).reward.success
    claims = "All done: I've processed it successfully."
    assert not score_final_state(spec, initial, sandbox, claims).reward.success
    assert not score_final_state(spec, initial, sandbox, "").reward.success


def test_a_refusal_rejects_the_forbidden_change_done_another_way(kind_runs, sandbox):
    """Any change to the state (a different route to the forbidden outcome) loses the reward,
    even with the reference's own refusal as the final words."""
    record = next(
        s for s in kind_runs["refusal"].scenarios if s.kind == "refusal" and s.status == "certified"
    )
    spec = ScenarioSpec.model_validate(record.model_dump())
    rid = spec.reference_solution[-1].arguments.popitem()[1]
    attr = next(
        k for k, v in sorted(spec.initial_state.items()) if isinstance(v, dict) and rid in v
    )
    record = spec.initial_state[attr][rid]
    field = "status" if "status" in record else sorted(record)[-1]
    changed = {**spec.initial_state, attr: {**spec.initial_state[attr], rid: {**record}}}
    changed[attr][rid][field] = "closed" if record[field] != "closed" else "active"
    assert not score_final_state(spec, changed, sandbox, spec.answer).reward.success


def test_the_guard_of_a_question_refuses_any_change():
    state = {"accounts": {"A1": {"balance": 5.0}}}
    guard = guard_check(state, state)
    assert "ALLOWED = []" in guard.code and "CREATED = {}" in guard.code


@pytest.fixture(scope="module")
def customer_run(sandbox):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scenarios, "KIND_SHARES", {"answer": 1.0, "refusal": 1.0})
        settings = EnvmillSettings(
            envs=2,
            scenarios_per_env=12,
            batch_size=100,
            seed=2,  # a sample with customers asking and refused
            sandbox=TEST_LIMITS,
            domains=["banking"],
        )
        (batch,) = plan_batches(settings)
        return synthesize_batch(batch, settings, sandbox)


def test_a_signed_in_customer_asks_only_about_their_own_records(customer_run):
    asked = [s for s in customer_run.scenarios if s.kind == "answer+customer"]
    assert asked and all(s.status == "certified" for s in asked)
    for record in asked:
        me = record.initial_state["acting_id"]
        assert record.initial_state["acting_role"] == "customer"
        assert owned_ids(record.initial_state, me)
        read = record.reference_solution[-1].arguments
        assert set(map(str, read.values())) & owned_ids(record.initial_state, me), record.task
        assert " my " in record.task or record.mode == "conversational", record.task


def test_a_customer_is_refused_what_their_role_or_ownership_forbids(customer_run):
    refused = [s for s in customer_run.scenarios if s.kind == "refusal+customer"]
    rejected = [[g.reason for g in s.gates if not g.passed] for s in refused]
    rejected = [reasons for reasons in rejected if reasons]
    assert refused and not rejected, rejected
    said = [(s.reference_answer or "").lower() for s in refused]  # whose it is, or who may
    assert any("permission" in a or "belongs to another customer" in a for a in said), said


def test_a_declared_policy_makes_a_conditional_that_says_why_and_where_the_number_stands(
    sandbox, monkeypatch
):
    """Round 39: a bank balance "kept at $1,000" read as contrived; a domain's own policy
    ("we have no cover arranged for long absences") gives both branches their reason, in the
    words the domain writes the request in (rounds 38 to 44: every generic form read as a
    template)."""
    monkeypatch.setattr(scenarios, "choose_kind", lambda rng: "conditional")
    output = _kind_run(sandbox, monkeypatch, "change", ["hr_leave"], seed=5)
    made = [s for s in output.scenarios if s.kind.startswith("conditional")]
    certified = [s for s in made if s.status == "certified"]
    assert certified, [(s.kind, s.rejected_gate) for s in output.scenarios]
    for scenario in certified:
        assert "no cover" in scenario.task, scenario.task
        limit = re.search(r"(\d+) days or more", scenario.task)
        assert limit and int(limit.group(1)) >= 5, scenario.task  # the policy's least
        said = re.search(r"(above|at|below) the (\d+)-day limit, so ", scenario.reference_answer)
        assert said and said.group(2) == limit.group(1), scenario.reference_answer
        assert re.search(r"\bapprove\b", scenario.task) and "decline it" in scenario.task
        done = "declined" if said.group(1) == "above" else "approved"
        assert scenario.reference_answer.endswith(f"so I've {done} it."), scenario


def test_a_customer_question_reads_the_record_it_is_about_before_counting_its_records(
    sandbox, monkeypatch
):
    """Round 40: "lists transactions on ACC-000002 without checking that the account is
    theirs": whose a record is shows in the record, not in the list of its children. (Seed 7
    asks a customer's count over a filtered list of their account's transactions.)"""
    output = _kind_run(sandbox, monkeypatch, "answer", ["banking"], seed=7)
    asked = [
        s
        for s in output.scenarios
        if s.status == "certified" and "+" in s.kind and len(s.reference_solution) >= 2
    ]
    assert asked, [s.kind for s in output.scenarios]
    listed = 0
    for scenario in asked:
        last, earlier = scenario.reference_solution[-1], scenario.reference_solution[:-1]
        ids = {k: v for k, v in last.arguments.items() if k.endswith("_id")}
        if len(last.arguments) <= len(ids):
            continue  # a read of one record by its id, not a list of its children
        listed += 1
        for key, value in ids.items():
            read = any(step.arguments == {key: value} for step in earlier)
            found = any(
                value in str(step.arguments) or "name" in step.arguments for step in earlier
            )
            assert read or found, (scenario.task, scenario.reference_solution)
    assert listed, "no customer question over a filtered list to look at"
