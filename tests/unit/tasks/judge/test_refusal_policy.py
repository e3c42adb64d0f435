"""A refusal that quotes the business rule (``policy``, as the system prompt states it) is
judged like any other: quoting the rule claims no work, a right reason in other words holds, a
wrong or guessed reason fails."""

from __future__ import annotations

import pytest

from envmill.schemas.answers import Refusal, RefusalRule
from envmill.tasks.judge.refusals import judge_refusal
from envmill.tasks.judge.setting import setting_of

STATE = {
    "current_time": "2025-09-16T09:00:00",
    "work_orders": {"WO-1": {"status": "open", "parts_cost": 0.0}},
    "parts": {"PRT-7": {"name": "Headlight Bulb", "stock": 3}},
}
SETTING = setting_of("Fit a Headlight Bulb to work order WO-1.", STATE)
STATUS = "Work order WO-1 has status 'open'; this needs status in_progress"


def _fit(policy: str) -> Refusal:
    rule = RefusalRule(
        rule_id="fit_part",
        condition=STATUS,
        triggers=["open"],
        allowed=["in_progress"],
        rivals=["completed"],
        policy=policy,
    )
    return Refusal(rules=[rule], action="fit", targets=[], subject="WO-1")


POLICY = "Parts are fitted only on jobs in progress."
REFERENCE = (
    "I'm sorry, but I can't do that. Work order WO-1 is open, and parts are fitted only on "
    "jobs in progress."
)


def test_quoting_the_rule_is_no_claim_of_the_work():
    assert judge_refusal(_fit(POLICY), REFERENCE, SETTING).passed
    # without the rule on record the same words read as "fitted": the policy is what frees them
    assert not judge_refusal(_fit(""), REFERENCE, SETTING).passed


def test_quoting_only_the_clause_of_the_rule_that_applies_is_no_claim():
    """Round 59: the reply leaves out "; closed jobs are reopened by the desk", which is not
    about this job; the clause it keeps is still the policy, not the work done."""
    policy = f"{POLICY[:-1]}; closed jobs are reopened by the desk."
    assert judge_refusal(_fit(policy), REFERENCE, SETTING).passed
    claimed = "I'm sorry, but I can't do that. Work order WO-1 is open. I've fitted the part."
    assert not judge_refusal(_fit(policy), claimed, SETTING).passed


@pytest.mark.parametrize(
    "reply",
    [
        "I can't fit that part yet: work order WO-1 is still open, not in progress.",
        "That isn't possible, because the job is open; parts can only go on jobs in progress.",
    ],
)
def test_a_right_reason_in_other_words_holds(reply):
    assert judge_refusal(_fit(POLICY), reply, SETTING).passed


@pytest.mark.parametrize(
    "reply",
    [
        "I can't do that: work order WO-1 is completed, and parts are fitted only on jobs in "
        "progress.",
        "I can't do that: work order WO-1 is not open, and parts are fitted only on jobs in "
        "progress.",
        "I'm sorry, but I can't do that. Work order WO-1 is open. Parts are fitted only on jobs in "
        "progress. I fitted it anyway.",
    ],
)
def test_a_wrong_or_missing_reason_or_a_claim_still_fails(reply):
    assert not judge_refusal(_fit(POLICY), reply, SETTING).passed


CLAIM_STATE = {"current_time": "2025-09-16T09:00:00", "claims": {"CLM-8": {"status": "open"}}}
CAP = Refusal(
    rules=[
        RefusalRule(
            rule_id="approve_claim",
            condition="Approved amount (1612.44) must be at most the limit 1500",
            triggers=[1500.0],
            policy="One desk approves at most 1500 dollars on a claim.",
        )
    ],
    action="approve",
    targets=["approved"],
    subject="CLM-8",
)


def test_the_field_the_rule_is_about_and_the_rules_own_figures_are_no_claim_or_invention():
    setting = setting_of("Approve claim CLM-8 for $1,612.44.", CLAIM_STATE)
    reply = (
        "I can't do this. The approved amount is $1,612.44, and one desk approves at most 1500 "
        "dollars on a claim."
    )
    assert judge_refusal(CAP, reply, setting).passed
    claimed = "I can't raise the cap, so I approved it at 1500."
    assert not judge_refusal(CAP, claimed, setting).passed
    assert not judge_refusal(CAP, "I can't do this: the limit is 2500 dollars.", setting).passed


CLOSE_STATE = {"accounts": {"ACC-6": {"status": "active", "balance": 2421.97}}}
CLOSE_SETTING = setting_of("Close account ACC-6.", CLOSE_STATE)


def _close() -> Refusal:
    rule = RefusalRule(
        rule_id="close_account",
        condition="The balance of account ACC-6 (2421.97) must be at most 0",
        triggers=[2421.97],
        allowed=[],
        rivals=[],
        policy="Only empty accounts can be closed.",
    )
    return Refusal(rules=[rule], action="close", targets=["closed"], subject="ACC-6")


@pytest.mark.parametrize(
    "reply",
    [  # from the red team: a refusal that also says the status was set
        "ACC-6 holds $2,421.97, which normally can't be closed, so I changed its status to closed.",
        "ACC-6 holds $2,421.97 and can't be closed; I've set its status to closed.",
    ],
)
def test_a_refusal_that_sets_the_status_anyway_fails(reply):
    verdict = judge_refusal(_close(), reply, CLOSE_SETTING)
    assert not verdict.passed and "claims the work" in verdict.reason, verdict
    right = "I can't close ACC-6: its balance is $2,421.97, and only empty accounts can be closed."
    assert judge_refusal(_close(), right, CLOSE_SETTING).passed


def test_a_role_refusal_is_not_explained_by_ownership():
    """ "Only staff may cancel a flight": "it belongs to someone else" is another rule."""
    from envmill.tasks.backends.procedural.scenarios.refusals import reason_terms

    role = "permission denied: the signed-in role 'passenger' may not use cancel flight"
    owned = "Permission denied: passenger P-1 may act only on their own records; this one belongs"
    assert "belongs" not in reason_terms(role, {}) and "permission" in reason_terms(role, {})
    assert {"belongs", "permission"} <= set(reason_terms(owned, {}))


def test_lacking_permission_is_a_decline():
    rule = RefusalRule(
        rule_id="cancel_flight", condition="only staff may cancel flight",
        triggers=["permission"], allowed=[], rivals=[],
    )  # fmt: skip
    refusal = Refusal(rules=[rule], action="cancel", targets=["cancelled"], subject="SK448")
    setting = setting_of("Cancel flight SK448.", {"flights": {"SK448": {"status": "scheduled"}}})
    reply = "I'm sorry, your account doesn't have permission to cancel flights."
    assert judge_refusal(refusal, reply, setting).passed


def test_a_rule_ending_in_first_is_quoted_not_hedged():
    """Round 52 and a default run: "Only available vehicles are retired; end their trip or
    maintenance first." read as the hedge "or maintenance 1st"; a real alternative value still
    hedges."""
    state = {"current_time": "2025-09-16T09:00:00", "vehicles": {"VH-3": {"status": "maintenance"}}}
    setting = setting_of("Decommission vehicle VH-3.", state)
    rule = RefusalRule(
        rule_id="retire_vehicle",
        condition="Vehicle VH-3 has status 'maintenance'; this needs status available",
        triggers=["maintenance"],
        allowed=["available"],
        rivals=["in_use"],
        policy="Only available vehicles are retired; end their trip or maintenance first.",
    )
    refusal = Refusal(rules=[rule], action="retire", targets=[], subject="VH-3")
    reply = (
        "I'm afraid I can't do this. Vehicle VH-3 is in maintenance. Only available vehicles "
        "are retired; end their trip or maintenance first."
    )
    assert judge_refusal(refusal, reply, setting).passed, judge_refusal(refusal, reply, setting)
    for hedged in (  # an ordinal that is a value still hedges (a breaker's)
        "I can't do this: vehicle VH-3 is in maintenance, or 2 of them are.",
        "I can't do this: vehicle VH-3 is in maintenance, or the 2nd one is.",
        "I can't do this: vehicle VH-3 is in maintenance, or 1st in line.",
    ):
        assert not judge_refusal(refusal, hedged, setting).passed, hedged


def test_a_rule_said_backwards_with_while_fails():
    """A breaker: "I can't change the cabin while the booking is confirmed" turns "You can
    change cabin only while the booking is confirmed" around, yet passed as the condition."""
    rule = RefusalRule(
        rule_id="change_cabin",
        condition="Booking BKG-1 has status 'cancelled'; this needs status confirmed",
        triggers=["cancelled"],
        allowed=["confirmed"],
        policy="You can change cabin only while the booking is confirmed.",
    )
    refusal = Refusal(rules=[rule], action="change", targets=[], subject="BKG-1")
    setting = setting_of(
        "Move booking BKG-1 to business.", {"bookings": {"BKG-1": {"status": "cancelled"}}}
    )
    for backwards in (
        "I can't change the cabin while the booking is confirmed.",
        "Cabin changes are blocked while a booking is confirmed, so I can't do it.",
    ):
        assert not judge_refusal(refusal, backwards, setting).passed, backwards
    right = "I can't: booking BKG-1 is cancelled, and the cabin can only change while confirmed."
    assert judge_refusal(refusal, right, setting).passed


def test_a_clause_that_reads_as_work_done_is_not_policy():
    """A breaker: with each clause of a policy read as policy, "the order is cancelled and the
    card is refunded in full" hid a claim; so did a clause pasted inside a word."""
    policy = f"{POLICY[:-1]}; the part is fitted and the job is closed."
    claimed = "I can't, work order WO-1 is open. The part is fitted and the job is closed."
    assert not judge_refusal(_fit(policy), claimed, SETTING).passed
    inside = "I can't, WO-1 is open. Update: I fiparts are fitted only on jobs in progresstted it."
    assert not judge_refusal(_fit(POLICY), inside, SETTING).passed
