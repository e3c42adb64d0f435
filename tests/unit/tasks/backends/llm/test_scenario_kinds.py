"""ScenGenerator asks for the procedural backend's kinds and checks each answer is of the kind
asked for, by what its steps did and what it says (issue 30, item 6)."""

from __future__ import annotations

from collections import Counter

import pytest

from envmill.schemas.scenario import SolutionStep
from envmill.schemas.scengen import KIND_MIX, PlannedStep, TaskAnswer
from envmill.tasks.backends.llm.scengen.kinds import choose_kind, kind_problem
from envmill.tasks.backends.llm.scengen.solution import RanSolution

BEFORE = {
    "next_book_number": 3,
    "books": {
        "B-1": {"book_id": "B-1", "title": "Dune", "status": "available"},
        "B-2": {"book_id": "B-2", "title": "Dune", "status": "on_loan"},
    },
}
CHANGED = {**BEFORE, "books": {**BEFORE["books"], "B-1": {**BEFORE["books"]["B-1"], "status": "x"}}}
CREATED = {**BEFORE, "next_book_number": 4, "books": {**BEFORE["books"], "B-3": {"title": "Emma"}}}
LISTED = {"success": True, "data": list(BEFORE["books"].values())}


def ran(final, *results, steps=()):
    return RanSolution(
        steps=[SolutionStep(tool=t, arguments=a) for t, a in steps] or [SolutionStep(tool="t")],
        results=list(results) or [{"success": True}],
        final_state=final,
    )


def answer(task="Please do it.", **more):
    return TaskAnswer(task=task, steps=[PlannedStep(tool="t")], **more)


EXPECTED = {"expected_answer": {"type": "enum", "value": "on_loan"}, "reply": "It is on loan."}
REFUSAL = {
    "rules": [
        {"rule_id": "on-loan", "condition": "a lent book cannot be lent", "triggers": ["on_loan"]}
    ],
    "action": "lend",
}


@pytest.mark.parametrize(
    ("kind", "said", "solution", "problem"),
    [
        ("change", answer(), ran(CHANGED), None),
        ("change", answer(), ran(BEFORE), "the steps changed nothing"),
        ("answer", answer(**EXPECTED), ran(BEFORE), None),
        ("answer", answer(**EXPECTED), ran(CHANGED), "a answer scenario changes nothing"),
        ("answer", answer(), ran(BEFORE), "states the value it read"),
        ("conditional", answer(), ran(CHANGED), "states the value it read"),
        ("filtered_lookup", answer(), ran(CHANGED, LISTED), None),
        ("filtered_lookup", answer(), ran(CHANGED), "read a list that holds several records"),
        ("disambiguation", answer("Return Dune, the one on loan."), ran(CHANGED, LISTED), None),
        ("disambiguation", answer("Return the book."), ran(CHANGED, LISTED), "a name two records"),
        (
            "created_chain",
            answer(),
            ran(
                CREATED,
                {"success": True, "data": {"book_id": "B-3"}},
                {"success": True},
                steps=[("add_book", {}), ("lend_book", {"book_id": "B-3"})],
            ),
            None,
        ),
        ("created_chain", answer(), ran(CREATED), "then acts on it in a later step"),
        ("refusal", answer(refusal=REFUSAL, reply="No: it is on loan."), ran(BEFORE, LISTED), None),
        ("refusal", answer(refusal=REFUSAL, reply="No."), ran(BEFORE), "no step read"),
        ("refusal", answer(reply="No."), ran(BEFORE), "gives `refusal`"),
        ("refusal", answer(refusal=REFUSAL), ran(BEFORE, LISTED), "the reply that declines"),
    ],
)
def test_an_answer_must_be_of_the_kind_asked_for(kind, said, solution, problem):
    found = kind_problem(kind, said, solution, BEFORE)
    assert found is None if problem is None else problem in (found or ""), found


def test_a_limit_of_the_rule_need_not_be_read_but_a_state_value_must():
    rule = {"rule_id": "cap", "condition": "at most 2 loans", "triggers": [2, "on_loan"]}
    said = answer(refusal={"rules": [rule], "action": "lend"}, reply="No: you hold 2 loans.")
    assert kind_problem("refusal", said, ran(BEFORE, LISTED), BEFORE) is None
    assert "'on_loan'" in kind_problem("refusal", said, ran(BEFORE), BEFORE)


def test_kinds_follow_the_mix_and_the_seed():
    drawn = Counter(choose_kind(KIND_MIX, 0, "e" * 16, index) for index in range(2000))
    assert set(drawn) == set(KIND_MIX)
    for kind, share in KIND_MIX.items():
        assert abs(drawn[kind] / 2000 - share / sum(KIND_MIX.values())) < 0.04, (kind, drawn)
    assert choose_kind(KIND_MIX, 0, "e" * 16, 5) == choose_kind(KIND_MIX, 0, "e" * 16, 5)
    assert {choose_kind({"refusal": 1.0, "change": 0.0}, 1, "x", i) for i in range(20)} == {
        "refusal"
    }


def test_made_up_triggers_and_look_alike_kinds_are_refused():
    """Breaker: triggers found nowhere ("NOT-IN-STATE-xyz", 424242) certified and then let the
    judge reward made-up reasons; an answer that changed a record's ``next_*`` field passed as
    changing nothing; two records sharing a status passed as namesakes."""
    lie = {"rule_id": "r", "condition": "lent books stay lent", "triggers": ["NOT-IN-STATE-xyz"]}
    said = answer(refusal={"rules": [lie], "action": "lend"}, reply="No.")
    assert "neither in the steps' results nor in the rule" in kind_problem(
        "refusal", said, ran(BEFORE, LISTED), BEFORE
    )
    number = {"rule_id": "r", "condition": "lent books stay lent", "triggers": [424242]}
    said = answer(refusal={"rules": [number], "action": "lend"}, reply="No: its code is 424242.")
    assert "424242" in kind_problem("refusal", said, ran(BEFORE, LISTED), BEFORE)
    field = {**BEFORE, "books": {**BEFORE["books"], "B-1": {**BEFORE["books"]["B-1"]}}}
    field["books"]["B-1"]["next_due"] = "2026-01-01"
    assert "changes nothing" in kind_problem("answer", answer(**EXPECTED), ran(field), BEFORE)
    counter = {**BEFORE, "next_book_number": 4}  # the system's own counter is not a change
    assert kind_problem("answer", answer(**EXPECTED), ran(counter), BEFORE) is None
    listed = {
        "success": True,
        "data": [{"book_id": "B-1", "status": "on_loan"}, {"book_id": "B-2", "status": "on_loan"}],
    }
    by_status = answer("Return the book that is on_loan.")
    assert "a name two records" in kind_problem(
        "disambiguation", by_status, ran(CHANGED, listed), BEFORE
    )


@pytest.mark.parametrize(
    "weights", [{"refusal": float("inf")}, {"refusal": 1e308, "answer": 1e308}]
)
def test_kind_weights_must_be_finite(weights):
    from pydantic import ValidationError

    from envmill.schemas.scengen import ScenGenSettings

    with pytest.raises(ValidationError, match="finite weight"):
        ScenGenSettings(kinds=weights)


def test_a_deadline_the_rule_reckons_from_a_date_read_is_a_trigger():
    """Procedural refusals name the day a window closed (the day after a charge was posted):
    derived from a date a step read, not a value of the state."""
    rule = {"rule_id": "r", "condition": "only within 1 day of posting", "triggers": ["2025-09-15"]}
    said = answer(refusal={"rules": [rule], "action": "void"}, reply="No: it is too late.")
    posted = {"success": True, "data": [{"posted_at": "2025-09-14T09:00:00"}]}
    assert kind_problem("refusal", said, ran(BEFORE, posted), BEFORE) is None
    assert "2025-09-15" in kind_problem("refusal", said, ran(BEFORE, LISTED), BEFORE)
