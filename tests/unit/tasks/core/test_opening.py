"""The agent sees the user's request, never the instruction to the simulated user: no name, no
conduct lines, no second person left, quoted words as written."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from envmill.tasks.core.opening import (
    FALLBACK_OPENING,
    GREETINGS,
    PLACE_GREETINGS,
    ROLE_GREETINGS,
    opening_message,
)

CASES = [
    ("You are Alice Moreno.", FALLBACK_OPENING),
    (
        "You are Dr. Alice Moreno. You cannot make your appointment on Friday.",
        "I cannot make my appointment on Friday.",
    ),
    (
        "You are Alice Moreno. The clinic should send you a confirmation text. Thank you.",
        "The clinic should send me a confirmation text. Thank you.",
    ),
    (
        "You are Bob. If it costs you more than $50, you want to cancel it.",
        "If it costs me more than $50, I want to cancel it.",
    ),
    ("You are Élodie Durand. You want to move your booking.", "I want to move my booking."),
    ("You are Maria de la Cruz. You want a refund.", "I want a refund."),
    (
        "You are a 45-year-old teacher named Alice Moreno. You want to book a visit.",
        "I am a 45-year-old teacher. I want to book a visit.",
    ),
    (
        "You are Alice Moreno (patient P001). You want to pay your invoice.",
        "I want to pay my invoice.",
    ),
    (
        "You are Alice Moreno, a premium patient. You want to pay your invoice.",
        "I am a premium patient. I want to pay my invoice.",
    ),
    ("Your name is Alice Moreno. You want to book a cleaning.", "I want to book a cleaning."),
    (
        "You are Alice. You want a cleaning. Do not reveal your birth date unless asked. "
        "The agent may ask you for your date of birth; give it.",
        "I want a cleaning.",
    ),
    ("You are Alice Moreno.You want it moved.", "I want it moved."),
    ('You are Alice. Tell the agent "I need you to cancel it".', "I need you to cancel it"),
    (
        'You are Alice. You want to say "thank you" and "see you" to the agent.',
        'I want to say "thank you" and "see you" to the agent.',
    ),
    (
        "You are Alice. You want the agent to let you know when it is done. You are reactive to "
        "the agent and will not say anything that is not asked.",
        "Please let me know when it is done.",
    ),
    ("You are tired. You want to go home.", "I am tired. I want to go home."),
    (  # round 50: "Hi, I am Estate of Harold Jensen (I am a donor to the charity)"
        "You are Estate of Harold Jensen (you are a donor to the charity). You want to know "
        "when a receipt was issued.",
        "I want to know when a receipt was issued.",
    ),
    (  # round 26: "My trip was; please cancel a reservation."
        "You are Leslie Coleman. My trip was called off; you want the agent to cancel it.",
        "My trip was called off; please cancel it.",
    ),
]


@pytest.mark.parametrize(("task", "opening"), CASES)
def test_an_instruction_becomes_the_users_own_words(task, opening):
    said = opening_message(SimpleNamespace(task=task, mode="conversational"))
    greeting = said.removesuffix(opening).strip()
    assert said.endswith(opening)
    assert greeting in {"", *GREETINGS, *(g.replace(",", "!") for g in GREETINGS)}, said


STAFF_CASES = [
    (
        "You are Ann Lee (you work at the box office). You need to book some tickets.",
        PLACE_GREETINGS,
        {"name": "Ann", "place": "box office"},
        "I need to book some tickets.",
    ),
    (
        "You are Tim Pope (you are a loan officer at the lender). You want to know the income of "
        "a borrower.",
        ROLE_GREETINGS,
        {"name": "Tim", "a": "a", "role": "loan officer"},
        None,
    ),
]


@pytest.mark.parametrize(("task", "forms", "who", "wanted"), STAFF_CASES)
def test_staff_say_where_they_work_and_customers_just_say_hello(task, forms, who, wanted):
    said = opening_message(SimpleNamespace(task=task, mode="conversational"))
    assert any(said.startswith(form.format(**who)) for form in forms), said
    assert "Ann Lee" not in said and "Tim Pope" not in said
    if wanted:
        assert said.endswith(wanted)
    customer = "You are Ann Lee (you are a student at the university). You want a transcript."
    said = opening_message(SimpleNamespace(task=customer, mode="conversational"))
    assert "student" not in said and said.endswith(("I want a transcript.", "i want a transcript."))


def test_a_wish_to_know_is_asked_in_more_than_one_way():
    asked = {
        opening_message(
            SimpleNamespace(
                task=f"You are A{n}. You want to know the fare of a flight.", mode="conversational"
            )
        ).split(". ", 1)[-1]
        for n in range(40)
    }
    assert any(a.endswith("the fare of a flight?") for a in asked)
    assert any(a.endswith("I want to know the fare of a flight.") for a in asked)


def test_a_question_of_its_own_is_asked_as_it_is():
    """Round 59: "I want to know this: I've caught up on a loan; can I put it back in good
    standing." opened a conversation."""
    task = (
        "You are Ann Lee (you are a borrower). You want to know this: I've caught up on a "
        "loan; can I put it back in good standing."
    )
    said = opening_message(SimpleNamespace(task=task, mode="conversational"))
    assert "know this" not in said
    assert said.endswith("I've caught up on a loan; can I put it back in good standing?"), said


def test_a_plain_task_is_the_opening_as_it_is():
    task = "You are my favourite agent. Cancel order O-1."
    assert opening_message(SimpleNamespace(task=task, mode="non_conversational")) == task
    said = "Cancel order O-1 for me."
    assert opening_message(SimpleNamespace(task=said, mode="conversational")) == said
