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
