"""A refused call traced to its precondition, and the reply that explains it as a person would:
the rule's own words applied to the record, never the raw comparison; no refusal for a record
that is already over."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.refused_by import refused_by, refusing_rules
from envmill.tasks.backends.procedural.manifest import ToolManifest
from envmill.tasks.backends.procedural.plan import plan_environment
from envmill.tasks.backends.procedural.scenarios.refusals import (
    _already_over,
    next_step,
    spoken_reason,
)

RESERVE = "The stock of part PRT-0007 (3) must be more than the limit 3"


def _fit_rules():
    plan = plan_environment(load_domain("auto_repair"), 0)
    fit = next(t.name for t in plan.tools if t.op.name == "fit_part")
    return refusing_rules(plan)[fit]


def test_an_error_is_traced_to_the_precondition_and_its_rule_text():
    rule = refused_by(_fit_rules(), RESERVE)
    assert rule is not None and rule.kind == "compare"
    assert rule.rule == "The last 3 units of a part stay in reserve."
    status = "Work order WO-00001 has status 'open'; this needs status in_progress"
    assert refused_by(_fit_rules(), status).rule == "Parts are fitted only on jobs in progress."
    assert refused_by(_fit_rules(), "Part PRT-0007 not found") is None


def test_the_reply_gives_the_rule_applied_to_the_record_not_the_comparison():
    rule = refused_by(_fit_rules(), RESERVE)
    said = spoken_reason(RESERVE, rule.rule)
    assert said == (
        "The stock of part PRT-0007 is only 3, and the last 3 units of a part stay in reserve"
    )
    assert "must be" not in said
    checked_in = "Booking BKG-9 has status 'checked_in'; this needs status confirmed"
    said = spoken_reason(checked_in, "Checked-in bookings cannot be cancelled by the desk.")
    assert (
        said == "Booking BKG-9 has been checked in, and checked-in bookings cannot be cancelled by "
        "the desk"
    )
    assert "; this is only possible" not in spoken_reason(checked_in)


def test_a_notice_rule_is_said_once_without_a_doubled_colon():
    late = (
        "Too late: this must be done at least 6 hours before the starts at of class CL-4 "
        "(2025-08-11T12:15:00); current time 2025-08-11T08:15:00"
    )
    said = spoken_reason(late, "Classes can be dropped up to 6 hours before they start.")
    assert said.startswith("The start time of class CL-4 is 11 August 2025 at 12:15 and it is now")
    assert said.count(":") == 2  # the two clock times, no "too late:" label
    assert spoken_reason(late).startswith("It is too late: this must be done at least 6 hours")


def test_a_notice_period_is_no_refusal_for_a_class_already_over():
    tool = ToolManifest(tool="drop_class", kind="state_change", entity="booking")
    over = (
        "Too late: this must be done at least 6 hours before the starts at of class CL-4 "
        "(2025-08-11T12:15:00); current time 2025-08-21T10:15:00"
    )
    soon = over.replace("2025-08-21T10:15:00", "2025-08-11T08:15:00")
    assert _already_over(None, tool, {}, over, None, {})
    assert not _already_over(None, tool, {}, soon, None, {})


def test_a_record_the_user_named_keeps_its_name_in_the_refusal():
    """ "Student ST-00002 is marked as graduated" after the user said "Karen Morris": the
    reply names her beside the id, once; a record named by id stays as it was."""
    from envmill.tasks.backends.procedural.scenarios.chains import ArgMention
    from envmill.tasks.backends.procedural.scenarios.refusals import _by_name

    named = ArgMention(
        "student_id", "ST-00002", "entity_id", "student", "Karen Morris", "name", True
    )
    by_id = ArgMention("course_id", "CRS-2", "entity_id", "course", "Cell Biology", "title", False)
    reason = "Student ST-00002 is marked as graduated; course CRS-2 is full"
    assert _by_name(reason, [named, by_id]) == (
        "Student Karen Morris (ST-00002) is marked as graduated; course CRS-2 is full"
    )


@pytest.mark.parametrize(
    ("error", "offer"),
    [
        (
            "Permission denied: the signed-in role 'resident' may not use decline_request; "
            "only dispatcher may",
            None,  # read as a promise: a passenger asking to delay a flight
        ),
        (
            "Permission denied: the signed-in role 'sender' may not use record_delivery; "
            "only staff may",
            None,
        ),
        (
            "amount (4.08) must be at most the fines due of member MB-5 (3.86)",
            "I can do it for up to $3.86 instead, if that helps.",
        ),
        # a status the step waits for is no offer: a voided ticket is never valid again
        ("ticket TK-7 has status 'voided'; this needs status valid", None),
        ("the stock of part PRT-7 (3) must be at least 5", None),  # not what the user asked
    ],
)
def test_a_refusal_offers_what_the_rule_leaves_open(error, offer):
    """From the ratings: "refusals offer no next step"."""
    assert next_step(error) == offer


def test_a_status_refusal_says_what_was_asked_in_its_tools_words():
    """From a rating: "has been booked, and that can only be done while it is checked in"
    read as garbled; with the tool's words it says what cannot be done, once, about the record
    the fact names."""
    paid = "Pay run RUN-1 has status 'paid'; this needs status draft, approved"
    said = spoken_reason(paid, action="cancel a pay run")
    assert said.endswith("I can only cancel a pay run while it is draft or approved"), said
    filed = "Claim CLM-8 has status 'filed'; this needs status under_review"
    said = spoken_reason(filed, action="deny a claim under review")
    assert said.endswith("and I can only deny a claim under review"), said  # not twice
    on_trip = "Vehicle VH-1 has status 'on_trip'; this needs status available"
    said = spoken_reason(on_trip, action="start a scheduled work order")
    assert "work order" not in said and said.endswith("available"), said  # another record


def test_a_status_refusal_without_the_tools_words_says_what_was_asked_not_what_was_done():
    """Round 23: "Leave request LR-00006 has been withdrawn, and that can only be done while
    it is approved" read as the withdrawing being what needs approval."""
    withdrawn = "Leave request LR-00006 has status 'withdrawn'; this needs status approved"
    assert spoken_reason(withdrawn, action="cancel it") == (
        "Leave request LR-00006 has been withdrawn, and I can only cancel it while it is approved"
    )
    said = spoken_reason(withdrawn)
    assert "can only be done" not in said and said.endswith("approved for me to do that"), said


def test_an_ownership_refusal_says_whose_record_it_is_and_how_to_go_on():
    """Round 23: "You have no permission for that record; you can act only on your own
    records" named no record and left the user nowhere to go."""
    from envmill.tasks.backends.procedural.scenarios.chains import ArgMention
    from envmill.tasks.backends.procedural.scenarios.refusals import _by_name, _not_yours

    error = (
        "Permission denied: resident RES-00001 may act only on their own records; "
        "this one belongs to resident RES-00006"
    )
    kenneth = ArgMention("resident_id", "RES-00006", "entity_id", "resident", "Kenneth Hill",
                         "name", by_label=True)  # fmt: skip
    reason, offer = _not_yours(error, [kenneth], "Mary Lee")
    said = _by_name(reason, [kenneth])
    assert said == (
        "You're signed in as Mary Lee, so I don't have permission to act on Kenneth Hill's records"
    ), said
    assert "RES-0000" not in said  # round 26: no other client's id
    # round 28: "If you are Kenneth Hill" to a user who asked on his behalf
    assert offer == "Kenneth Hill would need to sign in to their own account for this."
    reason, _ = _not_yours(error, [kenneth])  # the own name not known: no one's name
    assert reason.startswith("You're signed in as a different resident"), reason
    request = ArgMention("service_request_id", "SR-000004", "entity_id", "service_request")
    reason, offer = _not_yours(error, [request])  # a record the user gave by id: not whose
    # round 28: whose it is is not told to whoever typed the number
    assert reason.startswith("Service request SR-000004 ") and "permission" in reason, reason
    assert "RES-00006" not in reason + offer  # whose it is stays unsaid
    assert "RES-00006" not in reason
    assert _not_yours("Event EV-5 has status 'draft'; this needs status on_sale", []) is None


def test_a_count_named_after_its_noun_is_said_in_the_plural():
    """Round 26: "The free spaces of lot … is only 11"."""
    error = "The spaces free of lot LOT-001 (11) must be at least the capacity of lot LOT-001 (12)"
    said = spoken_reason(error, "A lot can be closed only when no car is parked in it.")
    assert said.startswith("Lot LOT-001 has only 11 spaces free"), said


def test_a_status_policy_about_other_statuses_gives_way_to_the_status_needed():
    """Round 27: "Order OR-000008 is marked as delivered. Unpaid orders can be cancelled
    directly; paid orders need a refund" cited a rule that does not apply."""
    error = "Order OR-000008 has status 'delivered'; this needs status placed"
    said = spoken_reason(error, "Unpaid orders can be cancelled directly.", "cancel an order")
    assert (
        said
        == "Order OR-000008 is marked as delivered; I can only cancel an order while it is placed"
    )
    paid = "Pay run RUN-1 has status 'paid'; this needs status draft, approved"
    rule = "A pay run can be cancelled only while it is a draft or approved."
    assert spoken_reason(paid, rule, "cancel a pay run").endswith(rule.rstrip(".").lower()[1:])


def test_a_refusal_hears_a_story_and_a_role_refusal_says_who_can():
    """Round 35: a refusal that ignored "I lost my job", and "Only front desk has permission to
    reverse charge, and you are signed in as a guest" with no one to ask."""
    from envmill.tasks.backends.procedural.scenarios.refusals import STORY

    assert STORY.search("Hi! I lost my job and can't keep pledge PLG-8; please cancel it.")
    assert STORY.search("My trip was called off; please cancel reservation RSV-3.")
    assert not STORY.search("Hi there, I've moved to 85 Elm St; please update my address.")
    # a business's decision or a change of plan is no hardship (round 37's breaker)
    assert not STORY.search("We're no longer selling Oak Shelf; take it off the menu.")
    assert not STORY.search("We can't lend on application APP-3; decline it.")
    assert not STORY.search("I no longer need the leave; please withdraw it.")
    error = (
        "Permission denied: the signed-in role 'guest' may not use reverse charge; only "
        "front desk may."
    )
    said = spoken_reason(error, None, "reverse a folio charge")
    assert said == (
        "Only the front desk has permission to reverse a folio charge, and you are signed in as "
        "a guest; please ask the front desk to do it for you"
    ), said


def test_staff_are_not_refused_on_a_record_that_is_over_and_a_client_may_be():
    """Round 35: box-office staff selling tickets for a gala that ended a month ago."""
    from envmill.tasks.backends.procedural.codegen.compiler import compile_environment

    compiled = compile_environment(load_domain("events"), 0)
    tool = next(t for t in compiled.tools if t.entity == "ticket" and t.kind == "state_change")
    events = compiled.entity_attrs["event"]
    gala = {"EV-6": {"title": "Spring Symphony Gala", "status": "completed"}}
    status = "Event EV-6 has status 'completed'; this needs status on_sale"
    rule = refused_by(refusing_rules(plan_environment(compiled.spec, 0))[tool.tool], status)
    assert rule is not None and rule.kind in ("field_in", "field_not_in"), rule
    for role, acting, refused in (("staff", None, True), ("customer", "CU-1", False)):
        state = {events: gala, "acting_role": role, "acting_id": acting}
        over = _already_over(compiled, tool, {"event_id": "EV-6"}, status, rule, state)
        assert over is refused, role


def test_a_rules_sum_is_written_as_money():
    """Round 41: "one application may request at most 30000 dollars" read as a form."""
    from envmill.tasks.backends.procedural.codegen.rules import as_dollars

    assert as_dollars("One application may request at most 30000 dollars.") == (
        "One application may request at most $30,000."
    )
    assert (
        as_dollars("A withdrawal is at most 1585.5 dollars.")
        == "A withdrawal is at most $1,585.50."
    )
    assert as_dollars("Prices are in dollars before tax.") == "Prices are in dollars before tax."


def test_a_new_reading_is_compared_with_the_one_on_record():
    """Round 42: "The mileage is only 119240, while the mileage of vehicle … is 132932"."""
    from envmill.tasks.backends.procedural.scenarios.refusals import LIMIT_SAID, _limit_said

    found = LIMIT_SAID.match(
        "Mileage (119240) must be at least the mileage of vehicle VEH-6 (132932)"
    )
    assert found is not None
    assert _limit_said(found, ruled=True) == (
        "the new mileage of 119240 is lower than the 132932 on record for vehicle VEH-6"
    )
    other = LIMIT_SAID.match("amount (188.42) must be at most the fines due of member M-6 (0.15)")
    assert other is not None
    assert (
        _limit_said(other, ruled=True)
        == "the amount is $188.42, while the fines due of member M-6 are $0.15"
    )  # round 49 read "your fines due is" as a slip


def test_a_user_who_claims_anothers_name_is_not_a_refusal_scenario():
    """Rounds 44 and 49: "… My name is Michele Young", sent from Lisa Butler's session, read as
    a contrived trap; asking for someone by name stays."""
    from envmill.tasks.backends.procedural.scenarios.chains import ArgMention
    from envmill.tasks.backends.procedural.scenarios.refusals import _says_they_are_another

    michele = ArgMention(
        name="passenger_id", value="PX-7", source="entity_id", label="Michele Young", by_label=True
    )
    claims = "I'd like 2 economy seats on SK818. My name is Michele Young."
    assert _says_they_are_another(claims, [michele])
    assert _says_they_are_another("Hi, I'm Michele Young; book me a seat.", [michele])
    assert not _says_they_are_another("Please update the account of Michele Young.", [michele])


def test_a_window_refusal_says_when_the_record_was_stamped():
    """Round 49: "The issue date of receipt RC-2 is … and it is now …, so it is too late"."""
    from envmill.tasks.backends.procedural.scenarios.refusals import TIME_SAID, _time_said

    found = TIME_SAID.match(
        "Too late: this must be done at most 30 days after the issued on of receipt RC-2 "
        "(2024-09-30); current time 2025-05-29T09:45:00"
    )
    assert found is not None
    assert _time_said(found, ruled=True) == (
        "receipt RC-2 was issued on 2024-09-30, so it is too late now"
    )


def test_a_rule_about_too_late_is_not_drawn_for_a_record_not_there_yet():
    """Round 54 (rated 1): "Cancel order OR-10 and refund the payment" of an unpaid order,
    refused with "paid orders can be refunded only before they ship". A shipped order is what
    that rule is about."""
    from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
    from envmill.tasks.backends.procedural.scenarios.refusals import _not_there_yet

    compiled = compile_environment(load_domain("ecommerce"), 0)
    refund = next(t.tool for t in compiled.tools if t.tool.startswith(("refund", "cancel_and")))
    rules = refusing_rules(plan_environment(compiled.spec, compiled.seed))[refund]
    early = "Order OR-10 has status 'pending'; this needs status paid"
    late = "Order OR-10 has status 'shipped'; this needs status paid"
    rule = refused_by(rules, early)
    assert rule is not None and "before they ship" in (rule.rule or "")
    assert _not_there_yet(compiled, early, rule)
    assert not _not_there_yet(compiled, late, refused_by(rules, late))
    # a status the record comes back round to is no "not yet": a courier on a delivery is
    # exactly whom "finishes it before clocking in again" is about (a breaker's)
    couriers = compile_environment(load_domain("food_delivery"), 0)
    clock_in = next(t.tool for t in couriers.tools if t.doc.startswith("Make an off-shift"))
    rules = refusing_rules(plan_environment(couriers.spec, couriers.seed))[clock_in]
    busy = "Courier CR-3 has status 'on_delivery'; this needs status off_shift"
    rule = refused_by(rules, busy)
    assert rule is not None and " before " in (rule.rule or "")
    assert not _not_there_yet(couriers, busy, rule)
