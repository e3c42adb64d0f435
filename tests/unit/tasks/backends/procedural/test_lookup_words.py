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
        ("origin", "flight", "ATL", ("flight from ATL", "")),  # not "the ATL flight"
        ("destination", "flight", "SFO", ("flight to SFO", "")),
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


def test_namesakes_are_told_apart_by_a_time_or_a_place_as_a_person_says_it():
    """Round 41: "Data Structures (the one whose start date is 31 Aug 2025)", "Caleb Aguilar
    (the one whose room is Room 102)"; the agent lists them the same way."""
    from envmill.tasks.core.field_words import said_apart
    from envmill.tasks.rollout.reference import _listing

    assert said_apart("start_date", "2025-08-31", "31 Aug 2025") == "starting 31 Aug 2025"
    assert said_apart("starts_at", "2025-04-19T19:15:00", "19 Apr 2025 at 19:15") == (
        "on 19 Apr 2025 at 19:15"
    )
    assert said_apart("address", "9932 Adkins Road", "9932 Adkins Road") == "at 9932 Adkins Road"
    assert said_apart("room", "Room 102", "Room 102") == "in Room 102"
    # round 59: "(the one whose email is …)" read as generated
    assert said_apart("email", "a@x.org", "a@x.org") == "at a@x.org"
    assert said_apart("phone", "555-0101", "555-0101") == "on 555-0101"
    assert said_apart("author", "Jo Nash", "Jo Nash") == "by Jo Nash"
    assert said_apart("hire_date", "2018-03-14", "14 Mar 2018") == "hired on 14 Mar 2018"
    assert said_apart("joined_on", "2022-05-30", "30 May 2022") == "who joined on 30 May 2022"
    assert said_apart("tier", "gold", "gold") is None
    assert said_apart("issued_on", "2025-03-01", "1 Mar 2025") is None  # not a start
    events = [{"starts_at": "2025-08-10T08:00:00"}, {"starts_at": "2025-08-19T16:45:00"}]
    assert _listing(events, "starts_at") == (
        "one on 10 August 2025 at 08:00 and one on 19 August 2025 at 16:45"
    )
    people = [{"email": "a@x.org"}, {"email": "b@y.org"}]
    assert _listing(people, "email") == "one at a@x.org and one at b@y.org"


def test_one_please_a_sentence():
    said = tidy_text("So please add it; if it is above, please refund the excess. Please call.")
    assert said == "So please add it; if it is above, refund the excess. Please call."


def test_a_drawn_date_is_a_working_day_in_the_next_two_weeks():
    now = "2025-02-14T09:00:00"  # a Friday
    for seed in range(100):
        fake = SimpleNamespace(rng=random.Random(seed))
        day = datetime.fromisoformat(ArgumentDrawer._moment(fake, "date", {"current_time": now}))
        assert day.weekday() < 5 and 1 <= (day - datetime(2025, 2, 14)).days <= 14, day


def test_red_team_round_42_wording():
    from envmill.tasks.backends.procedural.codegen.rules import as_dollars
    from envmill.tasks.core.field_words import said_apart

    assert said_apart("location", "remote", "remote") is None  # an office, not an address
    assert said_apart("location", "12 Main St", "12 Main St") == "at 12 Main St"
    said = tidy_text("Please check it: if so, please charge it; otherwise, please use my credit.")
    assert said == "Please check it: if so, charge it; otherwise, use my credit."
    assert tidy_text("Please book the Please Touch Museum tour.") == (
        "Please book the Please Touch Museum tour."
    )
    assert tidy_text("We are a group and there are 1 of us.") == "We are a group and it's just me."
    assert as_dollars("at most 1,000 dollars") == "at most $1,000"
    assert as_dollars("$500 dollars") == "$500 dollars"
    assert as_purpose("pain and swelling") == "pain and swelling"
    assert as_purpose("a, b and c") == "a, b and c"


def test_a_value_left_for_later_leaves_a_sentence_behind():
    """Round 43: "Please set service request SR-000006 to priority." (the value was kept back
    for the agent to ask, and took the sentence with it)."""
    from envmill.tasks.backends.procedural.phrasing.words import vague_template

    urgent = ArgMention("priority", "urgent", "enum", None)
    said = vague_template("Set request {service_request_id} to {priority} priority.", [urgent])
    assert said == "Change the priority of request {service_request_id}."
    gold = ArgMention("plan", "gold", "enum", None)
    assert vague_template("Move me to the {plan} plan.", [gold]) == "Move me to a different plan."


def test_a_drawn_choice_is_never_the_one_the_record_has():
    """Round 44: "set service request SR-000006 to a new priority" (urgent), already urgent."""
    from envmill.tasks.backends.procedural.manifest import ArgManifest, ToolManifest

    args = [
        ArgManifest(name="service_request_id", source="entity_id", entity="request"),
        ArgManifest(name="priority", source="enum", values=["low", "normal", "urgent"]),
    ]
    tool = ToolManifest(tool="set_priority", kind="state_change", entity="request", args=args)
    state = {"requests": {"SR-6": {"priority": "urgent"}}}
    for seed in range(30):
        fake = SimpleNamespace(rng=random.Random(seed))
        fake.compiled = SimpleNamespace(entity_attrs={"request": "requests"})
        arguments = {"service_request_id": "SR-6", "priority": "urgent"}
        ArgumentDrawer._not_as_it_is(fake, tool, arguments, state)
        assert arguments["priority"] in ("low", "normal"), arguments


def test_a_record_picked_by_a_value_reads_as_a_person_names_it():
    """Round 44: "the Ford vehicle", "the finance employee", "the children book" and "the
    american restaurant" each read as a field with its value pasted in."""
    from envmill.tasks.backends.procedural.phrasing.words import humanize_value
    from envmill.tasks.backends.procedural.scenarios.lookups import _value_and_noun

    assert _value_and_noun("make", "vehicle", "Ford") == ("Ford", "")
    assert _value_and_noun("department", "employee", "finance") == ("employee in finance", "")
    assert _value_and_noun("genre", "book", "children") == ("book", "children's")
    assert humanize_value("american") == "American"
    assert humanize_value("middle eastern food") == "Middle Eastern food"
    assert humanize_value("americano") == "americano"  # a word, not a nationality


def test_a_value_the_user_gives_later_is_not_some_money_approved():
    from envmill.tasks.backends.procedural.phrasing.words import value_free_template

    amount = ArgMention("approved_amount", 1838.58, "float", None)
    said = value_free_template("Approve {approved_amount} on claim {claim_id}.", [amount])
    assert said == "Approve an amount on claim {claim_id}.", said


def test_a_goal_for_one_says_one():
    """Round 45: "you'd like to reserve some seats" of a booking for 1 seat."""
    from envmill.tasks.backends.procedural.manifest import ToolManifest
    from envmill.tasks.backends.procedural.phrasing.task import create_goal
    from envmill.tasks.backends.procedural.scenarios.chains import ChainStep

    manifest = ToolManifest(tool="reserve_seats", kind="state_change", entity="booking")
    for seats, said in ((1, "reserve a seat"), (3, "reserve some seats")):
        step = ChainStep(manifest, {"seats": seats}, [ArgMention("seats", seats, "int")], [])
        assert create_goal(step, random.Random(0)).body.endswith(said)


def test_a_breakers_wording_finds_of_round_45():
    """The owner of a record picked by a status goes before "that's …"; a goal from a tool's
    description keeps its verb's object; a refusal to the signed-in member says "your"; a
    client's own words are found (a backspace where "\\b" was meant matched nothing)."""
    from envmill.tasks.backends.procedural.manifest import ToolManifest
    from envmill.tasks.backends.procedural.phrasing.task import _described_goal
    from envmill.tasks.backends.procedural.scenarios.chains import ChainStep
    from envmill.tasks.backends.procedural.scenarios.lookups import _owner_placed
    from envmill.tasks.backends.procedural.scenarios.refusals import FIRST_PERSON, _as_yours

    said = _owner_placed("the work order that's in progress", " of 3MNP870")
    assert said == "the work order of 3MNP870 that's in progress"
    assert _owner_placed("Ann's open order", "") == "Ann's open order"

    def goal(tool: str, entity: str, doc: str) -> str | None:
        manifest = ToolManifest(tool=tool, kind="state_change", entity=entity, doc=doc)
        return _described_goal(ChainStep(manifest, {}, [], []), entity, "the pledge PL-1")

    pay = goal("receive_gift", "pledge", "Take a payment against an open pledge; it counts.")
    assert pay == "take a payment against the pledge PL-1"
    assert goal("change_destination", "pledge", "Send a pledge to a new address.") is None
    assert goal("pay_pledge", "pledge", "Take a payment against an open pledge.") is None

    me = ArgMention("member_id", "MB-0001", "entity_id", "member", "Jo Lee", signed_in=True)
    closed = "Member MB-0001 has been closed, and only active members may borrow books"
    assert _as_yours(closed, [me]).startswith("Your account has been closed, and only")
    fines = "The amount is $17.74, while the fines due of member MB-0001 is $13.65"
    assert _as_yours(fines, [me]).endswith("while your fines due is $13.65")
    assert FIRST_PERSON.search("Please deposit $250 into my account") is not None
    assert FIRST_PERSON.search("Mark booking {booking_id} as a no-show.") is None


def test_a_goal_drops_a_time_it_will_be_told_and_keeps_a_linking_word():
    """Round 64: "Flight SK734 is delayed until the departure time" and "deduct the from of
    Breanna Mills's pending payslip"."""
    from envmill.tasks.backends.procedural.manifest import ToolManifest
    from envmill.tasks.backends.procedural.phrasing.task import value_free_goal
    from envmill.tasks.backends.procedural.phrasing.words import value_free_template
    from envmill.tasks.backends.procedural.scenarios.chains import ChainStep

    moment = ArgMention("departs_at", "2025-02-12T20:45:00", "datetime", None)
    said = value_free_template("Flight {flight_id.label} is delayed until {departs_at}.", [moment])
    assert said == "Flight {flight_id.label} is delayed.", said
    manifest = ToolManifest(tool="deduct_from_payslip", kind="state_change", entity="payslip")
    payslip = ArgMention("payslip_id", "PS-1", "entity_id", "payslip", described="my payslip")
    step = ChainStep(manifest, {"payslip_id": "PS-1"}, [payslip], [])
    goal = value_free_goal(step, random.Random(1)).body
    assert goal.endswith("deduct from my payslip"), goal
