"""How the simulated user gives several facts: values that say what they are bare and first,
measures and counts with their unit, the rest in clauses; each value verbatim, so the agent
copies it exactly; the namesake question comes before the plain ones."""

from __future__ import annotations

from envmill.tasks.core.facts import LEADS, WHICH, Fact, FactLedger, answer_with, ask_and_answer


def test_a_form_is_answered_as_a_person_fills_it_in():
    said = answer_with(
        [
            ("name", "Amy Holt"),
            ("email", "amy.holt93@example.org"),
            ("phone", "682-957-7876"),
            ("weight in kg", "3664.77"),
            ("nights", "3"),
            ("grade", "standard"),
        ],
        0,
    )
    assert said.startswith(LEADS) and said.endswith(
        "Amy Holt, amy.holt93@example.org, 682-957-7876; 3664.77 kg, 3 nights and standard grade."
    ), said
    assert "the name is" not in said and "weight in kg" not in said


def test_every_value_given_is_heard_verbatim():
    facts = [Fact("farm_name", "farm name", "Willow Creek Farm"), Fact("price", "price", 2.99)]
    ledger = FactLedger(facts)
    ledger.hear(answer_with([(f.noun, str(f.value)) for f in facts], 1))
    assert all(ledger.is_said(f.value) for f in facts)


def test_the_namesake_question_comes_first():
    name = Fact("customer_name", "customer name", "Mary Ramirez")
    meant = Fact("customer" + WHICH, "customer" + WHICH, "Mary Ramirez (whose email is m@x.net)")
    address = Fact("address", "address", "2660 Amanda Curve")
    question, answer = ask_and_answer([("customer_id", meant), ("address", address)], 0)
    assert question.startswith("I found more than one customer by that name.")
    assert question.endswith("what's the address?")
    assert answer.startswith("I mean Mary Ramirez, the one whose email is m@x.net.")
    assert "2660 Amanda Curve" in answer
    assert name.value not in question


def test_a_whole_sum_is_said_without_its_point_zero():
    """ "the amount is 500.0" (raters): a person says "500"."""
    from envmill.tasks.core.facts import say_value

    assert say_value(500.0) == "500" and say_value(259.64) == "259.64" and say_value(3) == "3"


def test_a_moment_said_in_words_grounds_its_iso_argument():
    """A user who says "22 October 2025 at 9:30 am" has given 2025-10-22T09:30:00 (a model's
    conversational facts are said so; only the ISO text counted before)."""
    from envmill.tasks.core.facts import Fact, FactLedger, match_strength, same_moment

    moment = "2025-10-22T09:30:00"
    for said in ("22 October 2025 at 9:30 am", "October 22, 2025, 9:30am", "2025-10-22 09:30"):
        assert same_moment(moment, said.casefold()), said
    for wrong in ("22 October 2025 at 10:30 am", "21 October 2025 at 9:30 am", "19:30 on 22 oct"):
        assert not same_moment(moment, wrong.casefold()), wrong
    assert same_moment("2025-10-22T13:00:00", "oct 22, 2025 at 1 pm")
    assert match_strength("22 October 2025 at 9:30 am", moment)
    ledger = FactLedger([Fact("appointment", "appointment", "22 October 2025 at 9:30 am")])
    ledger.hear("Make it 22 October 2025 at 9:30 am, please.")
    assert ledger.is_said(moment)
