"""The judge of refusals (DESIGN §3.3): a decline in any words, no claim of the work, and a
reason a rule supports, negation-aware. Each quoted case of issue 31's review is here."""

from __future__ import annotations

import pytest

from envmill.schemas.answers import Refusal, RefusalRule
from envmill.tasks.judge.refusals import judge_refusal
from envmill.tasks.judge.setting import setting_of

STATE = {
    "current_time": "2025-09-16T09:00:00",
    "reservations": {
        "R-7": {"guest": "Ana Ruiz", "status": "checked_out", "address": "12 Main St, Unit 40"},
    },
    "charges": {"CH-3": {"reservation_id": "R-7", "amount": 80.0}},
}
SETTING = setting_of("Please void charge CH-3 on my reservation.", STATE)
VOID = Refusal(
    rules=[
        RefusalRule(
            rule_id="void_charge",
            condition="a charge can be voided only while its reservation is booked",
            triggers=["checked_out"],
            allowed=["booked"],
            rivals=["cancelled"],
        )
    ],
    action="void",
    targets=["voided"],
    subject="charge CH-3",
)
THREE_RULES = Refusal(
    rules=[
        RefusalRule(rule_id="r1", condition="only booked", triggers=["checked_out"]),
        RefusalRule(rule_id="r2", condition="under 50", triggers=[80.0]),
        RefusalRule(rule_id="r3", condition="same day", triggers=["2025-09-14"]),
    ],
    action="void",
    targets=["voided"],
)


@pytest.mark.parametrize(
    ("refusal", "reply"),
    [
        (VOID, "I'm sorry, I can't void charge CH-3: the reservation is already checked out."),
        (VOID, "That's not something I can do, since the reservation has been checked out."),
        (VOID, "Charges can only be voided while the reservation is booked, so I can't do it."),
        (VOID, "I'm unable to void it: reservation R-7 at 12 Main St, Unit 40 is checked out."),
        (THREE_RULES, "I can't void it: the stay is checked out and the charge is $80.00."),
        (VOID, "I've confirmed the reservation is checked out. I can't void the charge."),
        (VOID, "Our policy doesn't permit that: the reservation is checked out."),
        (VOID, "It can no longer be voided, since the reservation is checked out."),
        (VOID, "That isn't possible: it is checked out and its invoice is issued or paid."),
        # a contraction in the rule's condition is still the condition, not the record's state
        (VOID, "I can't: it's checked out, and a charge is voided only while it's booked."),
    ],
)
def test_a_right_refusal_in_other_words_holds(refusal, reply):
    verdict = judge_refusal(refusal, reply, SETTING)
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("Charges on booked reservations are final and can never be voided.", ""),
        ("I can't void it: only a manager can approve that.", "no reason"),
        ("I can't void it; the reservation is not checked out.", "negates"),
        ("I cannot void it because the reservation is cancelled.", "cancelled"),
        ("I can't void it: the limit is $25.00.", "25"),
        ("Done. Charge CH-3 is now voided.", ""),
        ("I can't do that.", "no reason"),
        ("Voided it - nothing blocked it since the reservation was checked out.", "claims"),
        ("Refunded it. Voiding isn't possible on a checked-out reservation.", "claims"),
        ("I can't: it isn't, as far as I can tell, checked out.", "hedges"),
        ("I can't void it, it might be checked out.", "hedges"),
        ("", "says nothing"),
        ("I can't void it, since it's booked.", "other way"),  # the contraction still states it
    ],
)
def test_a_wrong_refusal_loses(reply, why):
    verdict = judge_refusal(VOID, reply, SETTING)
    assert not verdict.passed and why in verdict.reason, verdict.reason


LATE = Refusal(
    rules=[
        RefusalRule(
            rule_id="refund_purchase",
            condition="Too late: this is only possible within 7 days after the purchased at of "
            "purchase CP-2 (2025-09-01T11:00:00); current time 2025-09-16T09:00:00",
            triggers=[7.0, "2025-09-01", "2025-09-16"],
        )
    ],
    action="refund",
    targets=["refunded"],
)
CLASS = Refusal(
    rules=[
        RefusalRule(
            rule_id="complete_class",
            condition="Class CL-6 is 'cancelled' and cannot become 'completed' "
            "(only from scheduled)",
            triggers=["cancelled"],
            allowed=["scheduled"],
        )
    ],
    action="complete",
    targets=["completed"],
)


@pytest.mark.parametrize(
    ("refusal", "reply", "passes"),
    [  # the rule named by its label, or stated the right way round with a modal verb
        (LATE, "I'm sorry, it's too late for that now - the window has closed.", True),
        (LATE, "I can't do that, though it's not too late.", False),
        (CLASS, "I'm unable to: only scheduled classes can be marked completed.", True),
        (CLASS, "I can't complete it - the class was cancelled.", True),
        (CLASS, "I can't mark it completed; it's scheduled.", False),
        (CLASS, "Sorry, it is cancelled, but I have completed it anyway.", False),
    ],
)
def test_a_rule_said_by_its_label_or_its_condition(refusal, reply, passes):
    verdict = judge_refusal(refusal, reply, setting_of("Refund it, complete it.", STATE))
    assert verdict.passed is passes, verdict.reason


def test_an_irregular_past_claims_the_work():
    send = VOID.model_copy(update={"action": "send", "targets": []})
    reply = "I cannot void it, the reservation is checked out. I have sent the transfer."
    assert not judge_refusal(send, reply, SETTING).passed


def test_a_claim_after_the_decline_in_one_sentence_is_still_a_claim():
    reply = "I can't void it because it's checked out, so I voided the other charge instead."
    assert not judge_refusal(VOID, reply, SETTING).passed


LOANS = Refusal(
    rules=[
        RefusalRule(
            rule_id="open_loan",
            condition="Customer C-1 already has 3 loans with status active; the limit is 3",
            triggers=[3.0],
        ),
        RefusalRule(
            rule_id="withdraw",
            condition="Amount (5000.0) must be at most the balance of account A3 (2999.77)",
            triggers=[2999.77],
        ),
    ],
    action="open",
    targets=["opened"],
)


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        ("I can't open it: you already have 3 active loans, the maximum.", True),
        ("I can't do that: the balance is only $2,999.77.", True),
        ("I can't open it, it is 3 days too early.", False),  # a small figure of something else
        ("I can't open it: the queue has 3 pending items.", False),  # "the", "has" name nothing
        ("I can't: your balance is not 2999.77.", False),  # negated
    ],
)
def test_a_figure_names_the_rule_only_as_a_fact_of_its_subject(reply, passes):
    verdict = judge_refusal(LOANS, reply, SETTING)
    assert verdict.passed is passes, verdict.reason


NEW_ORDER = Refusal(
    rules=[
        RefusalRule(
            rule_id="return_order",
            condition="only shipped orders can be returned",
            triggers=["new"],
            allowed=["shipped"],
        )
    ],
    action="return",
    targets=["returned"],
)
WINDOW = Refusal(
    rules=[
        RefusalRule(
            rule_id="return_order",
            condition="returns are accepted within 7 days of delivery",
            triggers=[9],
        )
    ],
    action="return",
    targets=["returned"],
)
LIMIT = Refusal(
    rules=[RefusalRule(rule_id="borrow", condition="the limit is 1 active loan", triggers=[1])],
    action="borrow",
    targets=["borrowed"],
)


@pytest.mark.parametrize(
    ("refusal", "reply", "passes"),
    [
        (NEW_ORDER, "I can't return it: the order is still new.", True),
        (NEW_ORDER, "I can't return it, it's a new order.", True),
        (NEW_ORDER, "I can't do that, the new policy forbids it.", False),
        (
            WINDOW,
            "I can't return it: the window of 7 days has passed, it arrived 9 days ago.",
            True,
        ),
        (WINDOW, "I can't; it was delivered 9 days ago and the return period is 7 days.", True),
        (WINDOW, "I can't; the return period is 14 days.", False),
        (LIMIT, "I can't: the most allowed is 1 and you already have 1.", True),
        (LIMIT, "I can't: you already have 1 loan out, which is the maximum.", True),
        (LIMIT, "I can't: you have 1 day left on your card.", False),
    ],
)
def test_a_trigger_in_another_sense_and_a_rule_in_its_kindred_words(refusal, reply, passes):
    verdict = judge_refusal(refusal, reply, SETTING)
    assert verdict.passed is passes, (reply, verdict.reason)


TODAY_WINDOW = Refusal(
    rules=[
        RefusalRule(
            rule_id="return_order",
            condition="returns are accepted within 7 days of delivery",
            triggers=["2025-09-05", "2025-09-16"],
        ),
        RefusalRule(
            rule_id="approve",
            condition="only a manager can approve",
            triggers=["not authorized", "manager"],
        ),
    ],
    action="return",
    targets=["returned"],
)


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        ("Sorry, I can't do that today.", False),
        ("I'm not authorized to do that today.", False),
        ("I can't return it today: it's past the 30-day return window.", False),
        ("I can't return it: it was delivered on 5 September, past the 7-day window.", True),
        ("I can't approve it: only a manager can.", True),
    ],
)
def test_today_and_a_way_of_declining_are_no_reason(reply, passes):
    verdict = judge_refusal(TODAY_WINDOW, reply, SETTING)
    assert verdict.passed is passes, (reply, verdict.reason)


def test_a_past_form_that_names_a_field_of_the_rule_is_no_claim():
    claim = Refusal(
        rules=[
            RefusalRule(
                rule_id="approve_claim",
                condition="the approved amount must be at most the amount claimed",
                triggers=[80.0],
            )
        ],
        action="approve",
        targets=["approved"],
    )
    rule = "I can't: approved amount (80.00) must be at most the amount claimed."
    assert judge_refusal(claim, rule, SETTING).passed
    done = "I can't: the amount is $80.00. I approved it, you must pay."
    assert not judge_refusal(claim, done, SETTING).passed


def test_a_day_the_state_does_not_hold_is_invented():
    state = {"current_time": "2025-05-04T08:15:00", "purchases": {"CP-2": {"at": "2025-04-15"}}}
    setting = setting_of("Refund credit purchase CP-2.", state)
    late = Refusal(
        rules=[
            RefusalRule(
                rule_id="refund",
                condition="only possible within 4 days after the purchase",
                triggers=[4.0, "2025-04-15"],
            )
        ],
        action="refund",
        targets=["refunded"],
    )
    right = "I can't: refunds are only possible within 4 days, and you bought it on 15 April."
    wrong = "I can't: refunds are only possible within 4 days, and you bought it on 3 May."
    assert judge_refusal(late, right, setting).passed
    verdict = judge_refusal(late, wrong, setting)
    assert not verdict.passed and "2025-05-03" in verdict.reason


TIP = Refusal(
    rules=[
        RefusalRule(
            rule_id="add_tip",
            condition="Amount (58.82) must be at most the limit 50",
            triggers=[58.82],
        )
    ],
    action="add",
    subject="delivery DLV-4",
)
DELIVERY = Refusal(
    rules=[
        RefusalRule(
            rule_id="record_delivery",
            condition="Permission denied: the signed-in role 'sender' may not use "
            "record_delivery; only agent may",
            triggers=["permission", "not authorized", "only staff"],
        )
    ],
    action="record",
    subject="shipment SHP-2",
)


@pytest.mark.parametrize(
    ("refusal", "reply", "passes"),
    [
        (TIP, "I can't add that: the tip must be at most $50, but it is $58.82.", True),
        (TIP, "I can't add that: the tip ($58.82) can't be more than the $50 limit.", True),
        # from the break-it review: the bound turned around was full reward
        (TIP, "I can't add that: the tip must be at least $50, but it is $58.82.", False),
        (TIP, "I can't add that: the tip ($58.82) can't be less than $50.", False),
        (TIP, "I can't add that: $58.82 is below the minimum of $50.", False),
        (DELIVERY, "Sorry, I can't: only an agent has permission to record delivery, and you "
         "are signed in as a sender.", True),
        (DELIVERY, "Sorry, I can't: you don't have permission to record deliveries.", True),
        (DELIVERY, "Sorry, I can't: only a sender has permission to record delivery, and you "
         "are signed in as an agent.", False),
    ],
)  # fmt: skip
def test_a_bound_or_a_role_turned_around_is_no_reason(refusal, reply, passes):
    setting = setting_of("Add a tip of $58.82 to delivery DLV-4.", {"d": {"DLV-4": {}}})
    assert judge_refusal(refusal, reply, setting).passed is passes, reply


LEAVE = Refusal(
    rules=[
        RefusalRule(
            rule_id="submit_leave",
            condition="Leave balance of employee E-5 (1) must be at least days (2)",
            triggers=[1.0],
        )
    ],
    action="submit",
    subject="employee E-5",
)


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        # words that compare the two values say nothing of which side the rule bounds
        ("I can't submit it: 2 days is too many, since employee E-5 has only 1 day of leave "
         "left.", True),
        ("I can't submit it: the request exceeds the leave balance of employee E-5, which is 1 "
         "day.", True),
        ("I can't submit it: the leave balance of employee E-5 must be at least the days asked "
         "for, but it is 1.", True),
        # the keywords kept, the rule turned around
        ("I can't submit it: the leave balance of employee E-5 must be at most the days asked "
         "for, but it is 1.", False),
        ("I can't submit it: the leave balance of employee E-5 (1) can't be more than 2.", False),
    ],
)  # fmt: skip
def test_an_at_least_rule_in_other_words(reply, passes):
    setting = setting_of(
        "Submit 2 days of leave for employee E-5.", {"e": {"E-5": {"leave_balance": 1}}}
    )
    assert judge_refusal(LEAVE, reply, setting).passed is passes, reply
