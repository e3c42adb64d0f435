"""Why a question is asked and which part of a rule applies (round 59: "a bare field lookup with
no purpose behind the question"; "the refusal pastes an irrelevant clause")."""

from __future__ import annotations

import random

import pytest

from envmill.schemas.answers import ExpectedAnswer
from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.phrasing.persona import client_asking
from envmill.tasks.backends.procedural.phrasing.word_lists import load_wording
from envmill.tasks.backends.procedural.scenarios.questions import Question
from envmill.tasks.backends.procedural.scenarios.refusals import _what_applies


def _question(shape: str, about: str) -> Question:
    expected = ExpectedAnswer(type="enum", value="frozen")
    return Question(
        "What is the status of account ACC-1?", [], "Account ACC-1 has been frozen.", expected,
        vague="What is the status of an account?", shape=shape, about=about,
    )  # fmt: skip


@pytest.mark.parametrize("about", ["record", "person", "thing"])
def test_staff_say_whom_or_what_they_ask_for(about):
    reasons = load_wording("answers")
    asked = _question("status", about).with_a_reason(random.Random(3), "a resident")
    said = asked.text.removeprefix("What is the status of account ACC-1? ")
    if about == "record":
        lines = reasons["reasons_for_client"]
        options = [r.format(client="a resident", client_cap="A resident") for r in lines]
    else:
        options = reasons[f"reasons_about_{about}"]["status"]
    assert said in options, asked.text
    assert asked.vague.endswith(said)  # the conversational opening says why too


def test_the_asker_of_their_own_record_says_their_own_reason():
    asked = _question("money", "record").with_a_reason(random.Random(1), None)
    said = asked.text.removeprefix("What is the status of account ACC-1? ")
    assert said in load_wording("answers")["reasons_own"]["money"]
    assert asked.answer == "Account ACC-1 has been frozen."  # the answer is unchanged


def test_a_question_after_a_change_needs_no_other_reason():
    question = _question("", "record")
    assert question.with_a_reason(random.Random(1), "a guest") is question


def test_every_shape_has_reasons_for_each_asker():
    reasons = load_wording("answers")
    for key in ("reasons_own", "reasons_about_person", "reasons_about_thing"):
        assert set(reasons[key]) == {"status", "money", "when", "count", "field"}, key


def test_staff_ask_for_the_domains_client_and_a_household_for_itself():
    assert client_asking(compile_environment(load_domain("city_requests"), 0)) == "a resident"
    assert client_asking(compile_environment(load_domain("hr_leave"), 0)) == "an employee"
    assert client_asking(compile_environment(load_domain("smart_home"), 0)) is None


def test_a_refusal_leaves_out_the_clause_about_another_status():
    compiled = compile_environment(load_domain("insurance_claims"), 0)
    manifest = next(t for t in compiled.tools if t.tool == "route_claim")  # seed 0: an alias
    target = next(a.name for a in manifest.args if a.entity == manifest.entity)
    policy = (
        "Adjusters are assigned only to newly filed claims; denied claims are reopened by appeal."
    )
    attr = compiled.entity_attrs[manifest.entity]
    for status, said in (
        ("approved", "Adjusters are assigned only to newly filed claims."),
        ("denied", policy),
    ):
        state = {attr: {"CLM-1": {"status": status}}}
        assert _what_applies(compiled, manifest, {target: "CLM-1"}, state, policy) == said


def test_stock_is_asked_and_told_as_a_shop_says_it():
    """Round 60: "Wool Doormat's stock is 1." read as terse."""
    from envmill.tasks.backends.procedural.scenarios.questions import _asked_plainly

    assert _asked_plainly("field_questions", "field_answers", "stock", 1, "") == (
        "stock_questions",
        "stock_answers",
    )


def test_a_template_naming_a_role_is_not_used_of_a_record_named_by_its_person():
    """Round 60: "The instructor for Rachel Woodard's closed course is unavailable", where
    Rachel Woodard is the instructor."""
    from envmill.tasks.backends.procedural.phrasing.task import _names_a_person

    assert _names_a_person("The instructor for {course_id.label} is unavailable; cancel it.")
    assert not _names_a_person("Cancel {course_id.label}; it won't run this term.")


def test_a_persona_name_never_repeats_its_first_name():
    """Round 60: a persona called "Henry Henry"."""
    from envmill.tasks.backends.procedural.state.contact import plain_name

    class Fake:
        last = iter(["Henry", "Henry", "Diaz"])

        def first_name(self):
            return "Henry"

        def last_name(self):
            return next(self.last)

    assert plain_name(Fake()) == "Henry Diaz"


def test_a_refused_action_leaves_out_a_figure_the_refusal_is_not_about():
    """ "issue a one-year policy" read as a stated 1 the state does not hold (the judge
    refused five references in an insurance-only run)."""
    from envmill.tasks.backends.procedural.scenarios.refusals import _action

    compiled = compile_environment(load_domain("insurance_claims"), 0)
    creator = next(t.tool for t in compiled.tools if t.tool in ("open_policy", "issue_policy"))
    assert "one-year" not in _action(compiled, creator)
    assert "policy" in _action(compiled, creator)


def test_a_refusal_is_never_of_a_change_to_the_value_already_there():
    """Round 61: "set the hourly rate to $250" of a matter already at $250 was refused for
    being on hold, and the reply never said nothing needed doing."""
    from envmill.tasks.backends.procedural.scenarios.refusals import _changes_nothing

    compiled = compile_environment(load_domain("legal_cases"), 1)  # seed 1 has the rate tool
    manifest = next(t for t in compiled.tools if t.tool == "change_hourly_rate")
    state = {"matters": {"MAT-1": {"hourly_rate": 250.0, "status": "on_hold"}}}
    same = {"matter_id": "MAT-1", "hourly_rate": 250}
    assert _changes_nothing(compiled, manifest, same, state)
    assert not _changes_nothing(compiled, manifest, {**same, "hourly_rate": 300}, state)


def test_a_status_answer_says_what_comes_next():
    """Round 62: "Your loan shows as active" left out that it is due back on 10 Feb."""
    from envmill.tasks.backends.procedural.scenarios.questions import _coming_up

    now = "2025-01-22T10:00:00"
    loan = {"status": "active", "borrowed_on": "2025-01-21", "due_on": "2025-02-10"}
    assert _coming_up(loan, now, "loan") == " It's due on 10 Feb 2025."
    assert _coming_up({**loan, "due_on": "2025-01-20"}, now, "loan") == ""  # already past
    assert _coming_up({"status": "active", "ends_on": "2025-03-01"}, now, "member") == ""


def test_a_reason_names_the_businesss_client_and_a_past_moment_has_no_plans():
    """A breaker: "A customer is asking." of a gym's class (its clients are members), and "I'm
    planning my week around it." of a reading recorded three weeks ago."""
    from envmill.tasks.backends.procedural.scenarios.questions import _shape

    asked = _question("field", "thing").with_a_reason(random.Random(0), "a member")
    options = load_wording("answers")["reasons_about_thing"]["field"]
    said = asked.text.removeprefix("What is the status of account ACC-1? ")
    assert said in [o.format(client="a member", client_cap="A member") for o in options]
    assert "{" not in said and "customer" not in said
    assert _shape("moment_answers") == _shape("start_answers_past") == "field"
    assert _shape("start_answers") == "when"


def test_a_rule_keeps_its_advice_when_a_status_word_is_not_a_record():
    """A breaker: "after that, file a new one" was dropped because "new" is a request status."""
    compiled = compile_environment(load_domain("city_requests"), 0)
    tools = [t for t in compiled.tools if t.entity == "service_request"]
    manifest = next(t for t in tools if "reopen" in t.tool or "not_fixed" in t.tool)
    target = next(a.name for a in manifest.args if a.entity == manifest.entity)
    policy = "A request can be reopened at most 2 times; after that, file a new one."
    state = {compiled.entity_attrs["service_request"]: {"SR-1": {"status": "resolved"}}}
    assert _what_applies(compiled, manifest, {target: "SR-1"}, state, policy) == policy
