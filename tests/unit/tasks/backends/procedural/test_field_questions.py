"""A question about one field, as a person asks it (round 28: "look up the booking time of one
of your bookings", "the permit type of a permit", "the John Green courier")."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.procedural.phrasing.persona import COMMON_VERBS, in_second_person
from envmill.tasks.backends.procedural.phrasing.word_lists import words
from envmill.tasks.backends.procedural.scenarios.questions import _moment_verb, own_field_noun


@pytest.mark.parametrize(
    ("field", "value", "verb"),
    [
        ("booked_at", "2025-09-02T08:15:00", "made"),  # a booking is made, not "booked"
        ("placed_at", "2025-09-02T08:15:00", "placed"),
        ("returned_on", "2025-04-08", "returned"),
        ("occurred_at", "2025-04-25T15:45:00", None),  # never "when was it occurred?"
        ("starts_at", "2025-04-25T15:45:00", None),  # no past event
        ("booked_at", "soon", None),  # not a moment
    ],
)
def test_a_time_field_is_asked_as_when_it_was_done(field, value, verb):
    assert _moment_verb(field, value) == verb


def test_every_moment_question_and_answer_names_the_verb():
    for template in (*words("answers", "moment_questions"), *words("answers", "moment_answers")):
        assert "{verb}" in template and "{field}" not in template, template


@pytest.mark.parametrize(
    ("field", "entity", "said"),
    [
        ("permit_type", "permit", "type"),  # "the type of permit PM-4"
        ("doc_type", "document", "type"),
        ("card_type", "account", "card type"),  # another record's noun stays
        ("permit_fee", "permit", "permit fee"),  # not a noun that stands alone
    ],
)
def test_a_field_is_said_without_its_own_records_noun(field, entity, said):
    assert own_field_noun(field, entity) == said


def test_a_when_question_becomes_the_users_wish_in_a_goal():
    goal = in_second_person("When was one of my bookings made?", COMMON_VERBS)
    assert goal == "You want to know when one of your bookings was made.", goal


def test_a_phone_is_asked_for_as_a_phone_number_and_a_story_stays_in_one_person():
    """Round 28: "What's the phone?"; "You are Mary Ortiz … My company's travel policy
    changed; you want the agent to …"."""
    from envmill.tasks.core.facts import _as_asked

    assert _as_asked("phone", "555-0101") == "the phone number"
    story = in_second_person("My company's travel policy changed; please move it.", COMMON_VERBS)
    assert story.startswith("Your company's travel policy changed"), story


def test_bare_participles_are_moments_and_odd_names_are_not():
    """From a review: "paid_at" was never asked as a moment; "speed_at" was ("when was it
    speed?"); "scheduled_at" reads as when it happens, not when it was booked."""
    assert _moment_verb("paid_at", "2025-03-02T10:00:00") == "paid"
    assert _moment_verb("speed_at", "2025-03-02T10:00:00") is None
    assert _moment_verb("scheduled_at", "2025-03-02T10:00:00") is None


def test_a_first_person_answer_says_your_once_before_a_name():
    """From a review: "Your Your Coco currently has 1 cancelled appointment."."""
    from envmill.tasks.backends.procedural.scenarios.questions import Question

    asked = Question("How many … does Coco have?", [], "Coco currently has 1 visit.", None,
                     subject="Coco")  # fmt: skip
    assert asked.in_first_person().answer == "Your Coco currently has 1 visit."
    inside = Question("…", [], "The weight of Coco is 9 kg.", None, subject="Coco")
    assert inside.in_first_person().answer == "The weight of your Coco is 9 kg."


def test_a_time_still_to_come_is_not_asked_as_when_it_was_done():
    """From a review: "Your vaccination VAX-4 was scheduled on 23 May" on 3 May."""
    assert _moment_verb("returned_on", "2025-06-01", "2025-05-03T08:30:00") is None
    assert _moment_verb("returned_on", "2025-04-08", "2025-05-03T08:30:00") == "returned"


def test_no_count_question_over_what_a_rule_keeps_at_one():
    """Round 34: "how many issued invoices does WO-4 have" under "A job has at most one
    invoice that is not void", "how many running batches" of a machine that runs one."""
    from envmill.tasks.backends.procedural.catalog import load_domain
    from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
    from envmill.tasks.backends.procedural.scenarios.questions import _at_most_one, _is_log

    repair = compile_environment(load_domain("auto_repair"), 0)
    assert _at_most_one(repair, "invoice", "work_order_id", {"status": "issued"})
    assert not _at_most_one(repair, "invoice", "work_order_id", {"status": "void"})
    assert not _at_most_one(repair, "invoice", "work_order_id", {})
    plant = compile_environment(load_domain("manufacturing"), 0)
    assert _at_most_one(plant, "batch", "machine_id", {"status": "running"})
    assert not _at_most_one(plant, "batch", "machine_id", {"status": "completed"})
    # nor over a status history: "how many tracking events does a shipment have" (round 35)
    parcels = compile_environment(load_domain("parcel_shipping"), 0)
    assert _is_log(parcels, "tracking_event") and not _is_log(parcels, "parcel")


def test_a_quantity_is_answered_in_its_records_unit():
    """Round 35: "The stock of the Aluminium Sheet 2mm material is 686.44", with no kg."""
    from envmill.tasks.backends.procedural.scenarios.questions import _with_unit

    assert _with_unit("686.44", 686.44, "stock", {"unit": "kg"}) == "686.44 kg"
    assert _with_unit("$3.40", 3.4, "unit_cost", {"unit": "kg"}) == "$3.40"  # a price per unit
    assert _with_unit("12", 12, "stock", {}) == "12"


def test_a_one_letter_value_is_not_asked():
    """A zone "A" made an expected answer no reply could be judged by (round 37's breaker)."""
    from envmill.tasks.backends.procedural.catalog import load_domain
    from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
    from envmill.tasks.backends.procedural.scenarios.questions import _askable

    compiled = compile_environment(load_domain("warehouse"), 0)
    assert not _askable("zone", "A", compiled, "bin")
    assert _askable("zone", "North", compiled, "bin")
    assert not _askable("zone", "none", compiled, "bin")  # "… insurance is none" (a run)


def test_a_question_goes_to_what_someone_has_a_reason_to_ask():
    """Round 53: "when was my enrolment made?", a courier's own pick-up time, "the capacity of
    Library Plaza Garage" were rated contrived; what is coming or where a record stands is
    asked."""
    from envmill.tasks.backends.procedural.scenarios.questions import _has_a_motive

    now = "2025-03-26T09:00:00"
    assert not _has_a_motive("enrolled_at", "2025-03-01T10:00:00", now)
    assert not _has_a_motive("capacity", 11, now)
    assert _has_a_motive("due_on", "2025-04-02", now)
    assert _has_a_motive("due_on", "2025-03-26", now)  # due today (a breaker's)
    assert _has_a_motive("status", "in_progress", now)
    assert _has_a_motive("balance", 120.5, now)
    assert _has_a_motive("seats_available", 12, now)
    assert not _has_a_motive("pauses", 0, now)  # a tally (round 55)
    assert not _has_a_motive("doc_type", "bank statement", now)


@pytest.mark.parametrize(
    ("template", "field", "value", "now", "asked"),
    [
        (
            "field_questions",
            "starts_at",
            "2025-12-08T13:30:00",
            "2025-12-01T09:00",
            "start_questions",
        ),
        (
            "field_questions",
            "starts_at",
            "2025-11-08T13:30:00",
            "2025-12-01T09:00",
            "start_questions_past",
        ),
        ("count_field_questions", "hours", 3, "2025-12-01T09:00", "duration_questions"),
        (
            "field_questions",
            "ends_at",
            "2025-01-09T06:15:00",
            "2025-12-01T09:00",
            "end_questions_past",
        ),
        ("count_field_questions", "seats", 3, "2025-12-01T09:00", "count_field_questions"),
        ("field_questions", "fee", 30.0, "2025-12-01T09:00", "money_questions"),  # how much
        ("field_questions", "starts_on", "2025-01-04", "2025-12-01T09:00", "began_questions"),
        ("field_questions", "valid_until", "2026-01-04", "2025-12-01T09:00", "end_questions"),
    ],
)
def test_when_and_how_long_are_asked_as_a_person_asks_them(template, field, value, now, asked):
    """Round 38: "the start time of appointment AP-7", "how many hours my booking has"."""
    from envmill.tasks.backends.procedural.scenarios.questions import _asked_plainly

    assert _asked_plainly(template, "field_answers", field, value, now)[0] == asked


@pytest.mark.parametrize(
    ("question", "goal"),
    [
        ("When is my appointment AP-7?", "You want to know when your appointment AP-7 is."),
        ("How long is my booking DB-2?", "You want to know how long your booking DB-2 is for."),
        ("When does my policy POL-5 start?", "You want to know when your policy POL-5 starts."),
        ("When did my lease end?", "You want to know when your lease ended."),
    ],
)
def test_a_when_or_how_long_question_becomes_what_the_user_wants_to_know(question, goal):
    assert in_second_person(question, COMMON_VERBS) == goal


def test_a_moment_named_by_its_records_own_noun_is_when_it_was_made():
    """Round 39: "when my credit purchase CP-7 was purchased"."""
    from envmill.tasks.backends.procedural.scenarios.questions import _not_its_own_noun

    assert _not_its_own_noun("purchased", "credit_purchase") == "made"
    assert _not_its_own_noun("placed", "order") == "placed"


def test_a_status_that_is_a_phrase_goes_after_the_noun():
    """Round 39: "the number of on sale harvest lots"."""
    import random
    from types import SimpleNamespace

    from envmill.tasks.backends.procedural.scenarios.questions import _filter

    status = SimpleNamespace(name="status", source="enum", values=["on_sale"])
    tool = SimpleNamespace(args=[SimpleNamespace(name="farmer_id"), status], entity="harvest_lot")
    args, before, after = _filter(tool, random.Random(0), {"farmer_id": "F-1"})
    assert (before, after) == ("", " on sale") and args["status"] == "on_sale"
    status.values = ["active"]
    assert _filter(tool, random.Random(0), {})[1:] == ("active ", "")


def test_a_kind_filter_goes_before_the_noun():
    """Round 40: "the number of transactions whose kind is transfer in"."""
    import random
    from types import SimpleNamespace

    from envmill.tasks.backends.procedural.scenarios.questions import _filter

    kind = SimpleNamespace(name="kind", source="enum", values=["transfer_in"])
    tool = SimpleNamespace(args=[SimpleNamespace(name="account_id"), kind], entity="transaction")
    before = [_filter(tool, random.Random(seed), {})[1] for seed in range(10)]
    assert set(before) <= {"transfer-in ", ""} and "transfer-in " in before


def test_each_branch_of_a_policy_becomes_what_the_user_wants():
    """Round 41's breaker: "if it is for 5 days or more, decline it; otherwise, you want the
    agent to approve it"."""
    said = in_second_person(
        "Please check leave request LR-2: if it is for 5 days or more, decline it; otherwise, "
        "please approve it.",
        COMMON_VERBS,
    )
    assert "you want the agent to decline it; otherwise, you want the agent to approve" in said


def test_a_sum_is_asked_how_much_as_people_name_it():
    """Round 58: "I'd like to know the balance due of Kevin Sanders" and "the postage of my
    shipment" read as field queries."""
    from envmill.tasks.backends.procedural.scenarios.questions import _asked_plainly, _sum_of

    assert _asked_plainly("field_questions", "field_answers", "balance_due", 14.84, "") == (
        "money_questions",
        "money_answers",
    )
    assert _sum_of("balance due", "Kevin Sanders", person=True) == "Kevin Sanders's balance due"
    assert _sum_of("postage", "my shipment SHP-3", person=False) == (
        "the postage on my shipment SHP-3"
    )
    assert _sum_of("price", "my booking BKG-5", person=False) == "the price of my booking BKG-5"
