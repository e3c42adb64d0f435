"""An answer after a change (scenarios/kinds.py): the report of the work, then the value asked
for, but never the same value twice ("… capacity is now 65 … The capacity … is 65")."""

from __future__ import annotations

from types import SimpleNamespace

from envmill.schemas.answers import ExpectedAnswer
from envmill.tasks.backends.procedural.scenarios.chains import Chain
from envmill.tasks.backends.procedural.scenarios.kinds import _with_the_change
from envmill.tasks.backends.procedural.scenarios.questions import Question

BEFORE = {"courses": {"C1": {"title": "World History", "capacity": 60}}}
AFTER = {"courses": {"C1": {"title": "World History", "capacity": 65}}}


def _question(field: str, said: str) -> Question:
    expected = ExpectedAnswer(type="number", value=65)
    answer = f"The {field} of course World History is {said}."
    return Question("…", [], answer, expected, said=said, field=field)


def test_an_answer_the_report_already_states_is_not_repeated():
    step = SimpleNamespace(arguments={"course_id": "C1"}, result={"data": AFTER["courses"]["C1"]})
    chain = Chain(BEFORE, AFTER, steps=[step])
    reply = _with_the_change(chain, _question("capacity", "65"))
    assert reply.count("65") == 1 and "capacity" in reply and "World History" in reply, reply
    other = _with_the_change(chain, _question("credits", "4"))  # another field: both are said
    assert "65" in other and other.endswith("The credits of course World History is 4."), other


def test_an_owners_answer_names_the_field_before_their_record():
    """Round 49's templates: "Your booking BKG-1's price is …" reads as a fill-in."""
    from envmill.tasks.backends.procedural.scenarios.questions import Question

    asked = Question(
        "What is the price of booking BKG-1?",
        [],
        "Booking BKG-1's price is $218.00.",
        None,
        subject="booking BKG-1",
    )
    mine = asked.in_first_person()
    assert mine.text == "What is the price of my booking BKG-1?"
    assert mine.answer == "The price of your booking BKG-1 is $218.00."


def test_a_goal_puts_an_article_after_each_preposition():
    """Round 49: "Please add a parcel to shipment."."""
    from envmill.tasks.backends.procedural.phrasing.task import _with_articles

    assert _with_articles(["parcel", "to", "shipment"]) == ["parcel", "to", "a", "shipment"]
    assert _with_articles(["parcel", "to", "the", "shipment"]) == [
        "parcel",
        "to",
        "the",
        "shipment",
    ]
