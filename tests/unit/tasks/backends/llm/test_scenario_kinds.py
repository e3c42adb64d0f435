"""ScenGenerator's scenarios carry a kind (issue 29, item 7), read from what the solution did,
so the corpus metrics cover both backends."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.llm.scengen.build import kind_of

BEFORE = {"next_id": 3, "books": {"B1": {"status": "available"}}}


@pytest.mark.parametrize(
    ("after", "answers", "kind"),
    [
        ({**BEFORE, "next_id": 4}, True, "answer"),
        (BEFORE, False, "lookup"),
        ({**BEFORE, "books": {"B1": {"status": "on_loan"}}}, False, "change"),
        ({**BEFORE, "books": {**BEFORE["books"], "B2": {"status": "new"}}}, False, "created_chain"),
        ({**BEFORE, "books": {"B1": {"status": "on_loan"}}}, True, "answer_after_change"),
    ],
)
def test_the_kind_follows_what_the_solution_did(after, answers, kind):
    assert kind_of(BEFORE, after, answers) == kind
