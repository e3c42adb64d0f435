"""The red team's refusal leaks, closed at their root: a reason is tied to the rule that refuses
(not any rule-shaped sentence, nor the system prompt's rule quoted alone), the work is claimed
in any verb of its act, a value offered as an alternative is a hedge, and right reasons said in
other words (a sum said as not zero, a status by another verb, a role rule as who may act)
hold. Fixtures are small records like the ones the generator writes."""

from __future__ import annotations

import pytest

from envmill.schemas.answers import Refusal, RefusalRule
from envmill.tasks.judge.refusal_words import act_verbs, done_pattern, said_otherwise
from envmill.tasks.judge.refusals import judge_refusal
from envmill.tasks.judge.setting import setting_of

ORDER_STATE = {"work_orders": {"WO-4": {"status": "cancelled"}}, "parts": {"PRT-2": {}}}
ORDER_SETTING = setting_of("Put a Brake Rotor on work order WO-4.", ORDER_STATE)
FIT = Refusal(
    rules=[
        RefusalRule(
            rule_id="install_part",
            condition="Work order WO-4 has status 'cancelled'; this needs status in_progress",
            triggers=["cancelled"],
            allowed=["in_progress"],
            rivals=["completed", "open"],
            policy="Parts are fitted only on jobs in progress.",
        )
    ],
    action="install",
    targets=[],
    subject="WO-4",
)
REQUEST_STATE = {"requests": {"SR-9": {"status": "rejected"}}}
REQUEST_SETTING = setting_of("We're on site for request SR-9 now.", REQUEST_STATE)
START = Refusal(
    rules=[
        RefusalRule(
            rule_id="start_request_work",
            condition="Request SR-9 is 'rejected' and cannot become 'in_progress' (only from "
            "assigned, resolved)",
            triggers=["rejected"],
            allowed=["assigned", "resolved"],
            rivals=["closed", "new"],
        )
    ],
    action="start",
    targets=["in_progress"],
    subject="SR-9",
)
ACCOUNT_SETTING = setting_of(
    "Shut down account ACC-6.", {"accounts": {"ACC-6": {"status": "active", "balance": 2421.97}}}
)
CLOSE = Refusal(
    rules=[
        RefusalRule(
            rule_id="close_account",
            condition="The balance of account ACC-6 (2421.97) must be at most 0",
            triggers=[2421.97],
            policy="Only empty accounts can be closed; withdraw or transfer the balance first.",
        )
    ],
    action="close",
    targets=["closed"],
    subject="ACC-6",
)
BOOKING_SETTING = setting_of("Check me in for BKG-10.", {"bookings": {"BKG-10": {"status": "x"}}})
CHECK_IN = Refusal(
    rules=[
        RefusalRule(
            rule_id="online_check_in",
            condition="Booking BKG-10 is 'cancelled' and cannot become 'checked_in' (only from "
            "confirmed)",
            triggers=["cancelled"],
            allowed=["confirmed"],
        )
    ],
    action="online",
    targets=["checked_in"],
    subject="BKG-10",
)
FLIGHT_SETTING = setting_of("Cancel flight SK448.", {"flights": {"SK448": {"status": "delayed"}}})
CANCEL = Refusal(
    rules=[
        RefusalRule(
            rule_id="cancel_flight",
            condition="Permission denied: the signed-in role 'passenger' may not use "
            "cancel_flight; only staff may",
            triggers=["permission", "not authorized", "not authorised", "only staff"],
        )
    ],
    action="cancel",
    targets=["cancelled"],
    subject="SK448",
)


@pytest.mark.parametrize(
    ("refusal", "setting", "reply"),
    [
        (START, REQUEST_SETTING, "I can't do that. Only resolved requests are inspected."),
        (START, REQUEST_SETTING, "I can't do that. Only resolved requests are reopened."),
        (CANCEL, FLIGHT_SETTING, "I can't do that. Only staff may register passenger."),
        (CANCEL, FLIGHT_SETTING, "I can't do that. Only staff may mark flight delayed."),
        (FIT, ORDER_SETTING, "I can't do that. Parts are fitted only on jobs in progress."),
    ],
)
def test_a_rule_of_another_act_or_the_policy_alone_is_no_reason(refusal, setting, reply):
    verdict = judge_refusal(refusal, reply, setting)
    assert not verdict.passed and "no reason" in verdict.reason, verdict


@pytest.mark.parametrize(
    ("refusal", "setting", "reply"),
    [
        (START, REQUEST_SETTING, "I can't: work can only start on assigned or resolved requests."),
        (CANCEL, FLIGHT_SETTING, "I can't: only staff may cancel a flight."),
        (CANCEL, FLIGHT_SETTING, "Only staff can do that, so I can't cancel it."),
        (FIT, ORDER_SETTING, "I can't: we only fit parts on jobs that are in progress."),
    ],
)
def test_the_refusing_rule_in_its_own_act_still_holds(refusal, setting, reply):
    assert judge_refusal(refusal, reply, setting).passed


@pytest.mark.parametrize(
    ("refusal", "setting", "reply"),
    [
        (CLOSE, ACCOUNT_SETTING, "ACC-6 holds $2,421.97, which can't stay open, so I shut it down "
         "for you."),
        (FIT, ORDER_SETTING, "WO-4 is cancelled, so I can't bill it, but I've fitted the Brake "
         "Rotor to it."),
        (FIT, ORDER_SETTING, "WO-4 is cancelled and can't be billed; the Brake Rotor is now on "
         "the work order."),
        (START, REQUEST_SETTING, "I can't start SR-9: it was rejected, so I kicked it off anyway "
         "myself."),
        (START, REQUEST_SETTING, "SR-9 is rejected and can't be started, but it's underway."),
        (CANCEL, FLIGHT_SETTING, "Only staff can cancel flights, so I can't, but I've called "
         "SK448 off for you."),
        (CHECK_IN, BOOKING_SETTING, "BKG-10 is cancelled and can't go online, but I checked "
         "you in."),
    ],
)  # fmt: skip
def test_the_work_claimed_in_another_verb_fails(refusal, setting, reply):
    verdict = judge_refusal(refusal, reply, setting)
    assert not verdict.passed and "claims the work" in verdict.reason, verdict


@pytest.mark.parametrize(
    ("refusal", "setting", "reply"),
    [
        (CLOSE, ACCOUNT_SETTING, "I can't shut ACC-6 down while it still holds $2,421.97."),
        (FIT, ORDER_SETTING, "I can't fit the rotor: work order WO-4 was cancelled."),
        (FIT, ORDER_SETTING, "I'm not able to put the Brake Rotor on WO-4; the job is cancelled."),
        (
            CHECK_IN,
            BOOKING_SETTING,
            "I checked the booking in our system: BKG-10 is cancelled, so I can't.",
        ),
    ],
)
def test_naming_the_act_in_a_decline_is_no_claim(refusal, setting, reply):
    assert judge_refusal(refusal, reply, setting).passed


def test_a_value_offered_as_an_alternative_is_a_hedge():
    hedged = "I can't close ACC-6: its balance is $2,421.97, or $0."
    verdict = judge_refusal(CLOSE, hedged, ACCOUNT_SETTING)
    assert not verdict.passed and "hedges" in verdict.reason, verdict
    quoted = "I can't close ACC-6: its balance is $2,421.97. " + CLOSE.rules[0].policy
    assert judge_refusal(CLOSE, quoted, ACCOUNT_SETTING).passed  # "withdraw or transfer": words


@pytest.mark.parametrize(
    ("refusal", "setting", "reply"),
    [
        (CLOSE, ACCOUNT_SETTING, "I can't close that account because it still has money in it; "
         "please move the funds out first."),
        (CLOSE, ACCOUNT_SETTING, "Sorry, that isn't possible while the account isn't empty."),
        (START, REQUEST_SETTING, "Sorry, I can't: the city turned SR-9 down, so no crew can begin "
         "on it."),
        (CANCEL, FLIGHT_SETTING, "I can't do that: cancelling a flight is for airline staff, and "
         "you're signed in as a passenger."),
        (CANCEL, FLIGHT_SETTING, "I can't cancel it, as you're logged in as a passenger."),
    ],
)  # fmt: skip
def test_a_right_reason_in_shared_words_holds(refusal, setting, reply):
    verdict = judge_refusal(refusal, reply, setting)
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize(
    ("refusal", "setting", "reply"),
    [
        (CLOSE, ACCOUNT_SETTING, "I can't close it: it doesn't have money in it."),
        (START, REQUEST_SETTING, "I can't start it: it was not turned down, it is new."),
        (CANCEL, FLIGHT_SETTING, "I can't cancel it: you're signed in as an agent."),
        (CANCEL, FLIGHT_SETTING, "I can't cancel SK448; that flight belongs to someone else."),
    ],
)
def test_the_shared_words_negated_or_wrong_still_fail(refusal, setting, reply):
    assert not judge_refusal(refusal, reply, setting).passed


def test_the_act_is_read_in_every_verb_of_its_group():
    assert {"shut down", "terminate"} <= set(act_verbs("close"))
    assert "call off" in act_verbs("call")  # a tool named call_off_…: its first word
    claim = done_pattern("close")
    assert claim is not None and claim.search("so i shut it down for you")
    assert not claim.search("i can't close it")  # the verb, not its past
    assert any(p.search("the city turned # down") for p in said_otherwise("rejected"))
    assert not said_otherwise("open")  # a status no verb makes


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        # an act the reply reports as its own, in any verb: a refusal does nothing
        ("I can't close ACC-6 as it holds $2,421.97. I've archived the account instead.", False),
        ("I can't close ACC-6 as it holds $2,421.97. I removed it from your list.", False),
        ("I can't close ACC-6 as it holds $2,421.97. Closure complete.", False),
        ("I checked: I can't close ACC-6, it still holds $2,421.97.", True),  # a look is no act
        ("I've been unable to close ACC-6: it still holds $2,421.97.", True),  # "been" is no act
        # a figure given as a guess, and a sum said as none
        ("I can't close ACC-6; its balance is about $2,421.97.", False),
        ("I can't close ACC-6; it doesn't have any money left.", False),
        ("I can't close ACC-6; it has zero funds left.", False),
        ("I can't close ACC-6; it still has money in it.", True),
    ],
)
def test_a_refusal_claims_no_act_of_its_own_gives_no_guess_and_no_zero(reply, passes):
    """From the second red team: "I've archived the account instead", "about $2,421.97", "it
    has zero funds left" got full reward."""
    assert judge_refusal(CLOSE, reply, ACCOUNT_SETTING).passed is passes, reply


def test_the_policy_quoted_with_a_contraction_is_still_only_the_policy():
    """ "checked-in bookings can't be cancelled by the desk" is the system prompt's rule with
    "cannot" shortened: it says nothing of this booking (red team)."""
    state = {"bookings": {"BKG-9": {"status": "checked_in"}}}
    refusal = Refusal(
        rules=[
            RefusalRule(
                rule_id="cancel_booking",
                condition="Booking BKG-9 has status 'checked_in'; this needs status confirmed",
                triggers=["checked_in"],
                allowed=["confirmed"],
                policy="Checked-in bookings cannot be cancelled by the desk.",
            )
        ],
        action="cancel",
        targets=["cancelled"],
        subject="BKG-9",
    )
    setting = setting_of("Cancel booking BKG-9.", state)
    quoted = "I can't cancel it; checked-in bookings can't be cancelled by the desk."
    assert not judge_refusal(refusal, quoted, setting).passed
    assert judge_refusal(refusal, "I can't cancel BKG-9: it's already checked in.", setting).passed


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        ("I can't submit it: applications need to be over $30,000.", False),
        ("I can't submit it: the amount must exceed $30,000.", False),
        ("I can't submit it: $39,792.53 is more than the $30,000 limit.", True),
        ("I can't submit it: the amount can be at most $30,000.", True),
    ],
)
def test_an_at_most_rule_said_the_wrong_way_round_in_other_words_loses(reply, passes):
    """ "applications need to be over $30,000" for a cap of $30,000 (second red team)."""
    refusal = Refusal(
        rules=[
            RefusalRule(
                rule_id="submit_application",
                condition="Requested amount (39792.53) must be at most the limit 30000",
                triggers=[39792.53, 30000.0],
            )
        ],
        action="submit",
        targets=[],
        subject="APP-2",
    )
    setting = setting_of("Submit application APP-2 for $39,792.53.", {"apps": {"APP-2": {}}})
    assert judge_refusal(refusal, reply, setting).passed is passes, reply
