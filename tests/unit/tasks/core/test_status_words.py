"""How a status change is said (core/status_words.py): the verb for what the agent did, "marked"
for what happened, "now" for a state; the status word itself always stays."""

from __future__ import annotations

import pytest

from envmill.tasks.core.status_words import status_kind, status_news, where_it_stands


def test_each_kind_of_status_reads_as_a_person_says_it():
    assert status_kind("cancelled") == "action"
    assert status_kind("withdrawn") == "action"
    assert status_kind("delivered") == "recorded"
    assert status_kind("on hold") == "state"
    assert status_kind("available") == "state"
    said = {status_news("booking B1", "checked in", pick) for pick in range(6)}
    assert "I've checked in booking B1" in said and "booking B1 has been checked in" in said
    assert status_news("item I1", "returned to stock", 0) == "I've returned item I1 to stock"
    marked = {status_news("order O1", "delivered", pick) for pick in range(4)}
    assert marked == {"I've marked order O1 as delivered", "order O1 is now marked delivered"}
    assert all("on hold" in status_news("matter M1", "on hold", p) for p in range(6))


@pytest.mark.parametrize(
    ("status", "said"),
    [
        ("denied", "claim C-9 has been denied"),
        ("failed", "claim C-9 is marked as failed"),  # it happened: never "is failed"
        ("ended", "claim C-9 is marked as ended"),
        ("under review", "claim C-9 is under review"),
        ("draft", "claim C-9 is a draft"),
        ("maintenance", "claim C-9 is under maintenance"),  # not "is maintenance"
        ("upheld", "claim C-9 has been upheld"),
    ],
)
def test_where_a_record_stands_takes_the_verb_its_status_needs(status, said):
    assert where_it_stands("claim C-9", status) == said


def test_a_status_that_is_a_process_gets_its_preposition_in_the_news():
    said = {status_news("desk D1", "maintenance", pick) for pick in range(3)}
    assert said == {"desk D1 is now under maintenance", "desk D1 is under maintenance now"}


def test_a_status_of_words_that_is_no_place_is_said_as_the_status():
    assert where_it_stands("it", "do not contact") == "its status is do not contact"
    assert where_it_stands("donor D1", "on hold") == "donor D1 is on hold"


def test_a_status_that_repeats_its_noun_is_said_as_the_status():
    """Round 54: "Your enrolment EN-000004 has been enrolled."."""
    said = where_it_stands("your enrolment EN-4", "enrolled")
    assert said == "the status of your enrolment EN-4 is enrolled"
    assert where_it_stands("booking B-1", "booked") == "the status of booking B-1 is booked"
    assert where_it_stands("claim C-9", "closed") == "claim C-9 has been closed"
