"""How a filtered record, a reason and a booking time read (round 41: "my enrolled enrolment",
"the normal work order", "Can you the single room for me", "for an ongoing pain", a Sunday
19:00 appointment)."""

from __future__ import annotations

import random
from datetime import datetime
from types import SimpleNamespace

import pytest

from envmill.tasks.backends.procedural.phrasing.words import described_template, tidy_text
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ArgumentDrawer
from envmill.tasks.backends.procedural.scenarios.lookups import _value_and_noun
from envmill.tasks.core.facts import as_purpose


@pytest.mark.parametrize(
    ("field", "entity", "value", "said"),
    [
        ("status", "enrolment", "enrolled", None),  # says nothing
        ("status", "booking", "booked", None),
        ("priority", "work order", "normal", ("work order", "normal-priority")),
        ("specialty", "doctor", "dermatology", ("dermatologist", "")),
        ("specialty", "doctor", "internal medicine", ("doctor", "internal medicine")),
        ("vehicle_type", "vehicle", "van", ("van", "")),
        ("status", "booking", "checked in", ("booking", "checked-in")),
        ("status", "order", "shipped", ("order", "shipped")),
    ],
)
def test_an_enum_value_and_its_noun_read_together_or_not_at_all(field, entity, value, said):
    assert _value_and_noun(field, entity, value) == said


def test_a_type_word_that_is_a_verb_there_stays():
    room = ArgMention("room_id", "RM-8", "entity_id", "room", described="the single room")
    fill = lambda t: described_template(t, [room])  # noqa: E731
    assert (
        fill("Can you hold room {room_id.label} for me?") == "Can you hold {room_id.label} for me?"
    )
    assert fill("Please book room {room_id}.") == "Please book {room_id}."
    assert fill("Hold room {room_id.label}.") == "Hold {room_id.label}."
    bill = ArgMention("invoice_id", "INV-1", "entity_id", "invoice", described="the oldest invoice")
    assert described_template("Invoice {invoice_id} is wrong.", [bill]) == "{invoice_id} is wrong."
    run = ArgMention("pay_run_id", "R-2", "entity_id", "pay_run", described="the bonus pay run")
    assert (
        described_template("Add Ann to pay run {pay_run_id}.", [run]) == "Add Ann to {pay_run_id}."
    )


def test_one_guest_is_not_one_of_us_and_a_reason_takes_the_article_it_needs():
    assert tidy_text("Hold a room for 4 nights. There are 1 of us.") == (
        "Hold a room for 4 nights. It's just me."
    )
    assert as_purpose("second opinion") == "a second opinion"
    assert as_purpose("consultation") == "a consultation"
    assert as_purpose("ongoing pain") == "ongoing pain"
    assert as_purpose("new symptoms") == "new symptoms"
    assert as_purpose("review of test results") == "a review of test results"


@pytest.mark.parametrize(
    "now", ["2025-03-07T08:15:00", "2025-03-08T10:00:00", "2025-03-05T17:30:00"]
)
def test_a_drawn_booking_time_falls_in_office_hours_on_a_working_day(now):
    seen = set()
    for seed in range(200):
        fake = SimpleNamespace(rng=random.Random(seed))
        moment = datetime.fromisoformat(
            ArgumentDrawer._moment(fake, "datetime", {"current_time": now})
        )
        assert moment.weekday() < 5 and 9 <= moment.hour <= 16, moment
        assert moment > datetime.fromisoformat(now), moment
        seen.add(moment.date())
    assert len(seen) >= 4  # the week ahead, not one day
