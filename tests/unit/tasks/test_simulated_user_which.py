"""The offline simulated user answers "which one do you mean?" as the reference's user does."""

from __future__ import annotations

import pytest

from envmill.tasks.core.facts import Fact, ask_and_answer
from envmill.tasks.offline_llm.simulated_user import UserPrompt, user_reply


def test_it_says_which_namesake_it_means_like_the_reference():
    name = Fact("doctor name", "doctor name", "Megan Ellis")
    meant = Fact("doctor you mean", "doctor you mean", "Megan Ellis (whose fee is $144.45)")
    prompt = UserPrompt("You want the agent to book a visit.", [name, meant])
    for needed in ([("doctor_id", meant)], [("name", name), ("doctor_id", meant)]):
        question, answer = ask_and_answer(needed, 0)  # turn: the user said one message
        reply = user_reply(prompt, ["Please book a visit."], f"Thanks. {question}")
        assert reply == answer, (question, reply)
    assert "I mean Megan Ellis, the one whose fee is $144.45." in answer


def test_a_count_is_asked_as_a_number_and_answered_like_the_reference():
    """ "…the cabin and how many seats?", not "what's the cabin and seats?"; the
    offline user, reading that question, gives what the reference's user gives."""
    cabin, seats = Fact("cabin", "cabin", "business"), Fact("seats", "seats", 3)
    question, answer = ask_and_answer([("cabin", cabin), ("seats", seats)], 0)
    assert "the cabin and how many seats?" in question and "3 seats" in answer
    prompt = UserPrompt("You want the agent to reserve seats.", [cabin, seats])
    assert user_reply(prompt, ["Please reserve seats."], question) == answer


def test_details_a_form_names_by_field_are_asked_as_a_person_asks_them():
    """Round 41: "What's the start time and reason?" / "the start time is … and the reason is
    …" read as a form; the agent asks what a receptionist asks and the user answers in kind,
    and the offline user, reading that question, still gives each fact."""
    when = Fact("start time", "start time", "26 May 2025 at 12:00")
    why = Fact("reason", "reason", "ongoing pain")
    title = Fact("gym class title", "gym class title", "Yoga Flow")
    needed = [("starts_at", when), ("reason", why), ("class", title)]
    for turn in range(3):
        question, answer = ask_and_answer(needed, turn)
        assert "start time" not in question and "reason" not in question, question
        assert "what date and time you'd like" in question and "what it's for" in question
        assert "the name of the gym class" in question
        assert "26 May 2025 at 12:00 would be good" in answer and "it's for ongoing pain" in answer
        assert "the gym class is called Yoga Flow" in answer
        prompt = UserPrompt("You want the agent to book a visit.", [when, why, title])
        assert user_reply(prompt, ["Please book a visit."], question) == answer


def test_a_plain_answer_after_which_one_follows_with_and():
    meant = Fact("customer you mean", "customer you mean", "Ann Lee (whose email is a@x.org)")
    amount = Fact("amount", "amount", 259.64)
    _, answer = ask_and_answer([("customer_id", meant), ("amount", amount)], 0)
    assert answer == "I mean Ann Lee, the one whose email is a@x.org. And the amount is $259.64."


def test_a_records_name_is_asked_as_a_person_asks_it_and_still_answered():
    """From a rating: "What's the doctor name?" reads as a form's field; "the doctor's name"
    is what a person asks, and the offline user still finds the fact it asks for."""
    name = Fact("doctor name", "doctor name", "Megan Ellis")
    question, answer = ask_and_answer([("name", name)], 0)
    assert "doctor's name" in question and "doctor name" not in question, question
    prompt = UserPrompt("You want the agent to book a visit.", [name])
    assert user_reply(prompt, ["Please book a visit."], question) == answer
    first = Fact("first name", "first name", "Megan")
    assert "first name" in ask_and_answer([("first_name", first)], 0)[0]  # which name, not whose


def test_an_id_is_asked_for_as_a_number_and_the_offline_user_gives_it():
    """ "What's the work order id?" reads as a database; a card's number is the one printed on
    it, so its id is its reference."""
    order, card = Fact("work order id", "work order id", "WO-4"), Fact("card id", "card id", "C-7")
    for needed, words in (([("work_order_id", order)], "work order number"),
                          ([("card_id", card)], "card reference")):  # fmt: skip
        question, answer = ask_and_answer(needed, 0)
        assert words in question and " id" not in question, question
        prompt = UserPrompt("You want the agent to look at a job.", [order, card])
        assert user_reply(prompt, ["Please look at a job."], question) == answer


def test_a_kind_is_given_before_its_noun_and_a_phone_in_brackets_is_a_phone():
    """ "the cabin is business" read as a form; "(634)885-0707" is a phone number, given bare."""
    from envmill.tasks.core.facts import answer_with

    assert (
        answer_with([("cabin", "business"), ("seats", "1")], 0) == "OK, business cabin and 1 seat."
    )
    given = answer_with([("name", "Julie Brown"), ("phone", "(634)885-0707")], 0)
    assert given.endswith("Julie Brown, (634)885-0707."), given


@pytest.mark.parametrize(
    ("question", "held", "given"),
    [
        ("What's the flight number?", {"flight_id": "FL-1", "flight_number": "SK331"}, "SK331"),
        ("What's the booking reference?", {"booking_id": "B1", "booking_reference": "R9"}, "R9"),
        ("Could you tell me the card number?", {"card_id": "C1", "card_number": "4111"}, "4111"),
        ("What's the work order number?", {"work_order_id": "WO-4"}, "WO-4"),
        ("What's the phone number?", {"phone": "555-0101"}, "555-0101"),
        ("Could you tell me the name of the course?", {"course_title": "Intro"}, "Intro"),
        ("What's the card number?", {"card_id": "C1"}, None),  # the number on it, not its id
    ],
)
def test_a_fact_asked_for_as_it_is_said_is_found_and_an_exact_one_comes_first(
    question, held, given
):
    """Red team: "What's the flight number?" got the flight's id once ids were asked for as
    numbers; a fact named as the question says comes first."""
    from envmill.tasks.core.facts import noun_of

    facts = [Fact(key, noun_of(key), value) for key, value in held.items()]
    reply = user_reply(UserPrompt("You want help.", facts), ["Hi."], question)
    assert (given in reply) if given else reply == "I'm sorry, I don't know that.", reply
