"""A conditional whose branches move the tested number in opposite directions aims at a mark:
"The retainer is meant to stay at $8,000; please check where it stands. If it is below that,
add the difference; if it is above, refund the excess" (round 23 read "if below $8,000, add
$20; if not, refund $400" as a logic puzzle with amounts from nowhere)."""

from __future__ import annotations

import random

from envmill.tasks.backends.procedural.manifest import ArgManifest, ToolManifest
from envmill.tasks.backends.procedural.phrasing.task import PAID_IN, _paid_in, conditional_clause
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ChainStep, Condition
from envmill.tasks.backends.procedural.scenarios.conditions import _aim, _no_policy
from envmill.tasks.certify.grounding import Sight

PATH = ["clients", "C-1", "retainer_balance"]
CLIENT = ArgMention("client_id", "C-1", "entity_id", "client", "Ann Lee", "name", True)


def _tool(name: str, phrase: str) -> ToolManifest:
    args = [
        ArgManifest(name="client_id", source="entity_id", entity="client"),
        ArgManifest(name="amount", source="float"),
    ]
    return ToolManifest(
        tool=name, kind="state_change", entity="client", args=args, phrases=[phrase]
    )


def _step(tool: ToolManifest, amount: float, old: float, new: float) -> ChainStep:
    change = {"op": "change", "path": PATH, "old": old, "new": new}
    mentions = [CLIENT, ArgMention("amount", amount, "float")]
    return ChainStep(tool, {"client_id": "C-1", "amount": amount}, mentions, [change])


TOP_UP = _tool("add_retainer", "add {amount} to the retainer of {client_id}")
REFUND = _tool("refund_retainer", "refund {amount} of the retainer of {client_id}")
STATE = {"clients": {"C-1": {"client_id": "C-1", "retainer_balance": 6313.30}}}


def test_a_deposit_against_a_refund_is_aimed_at_a_round_mark_above_the_balance():
    refund = _step(REFUND, 400.0, 6313.30, 5913.30)  # the branch not taken lowers it
    arguments = {"client_id": "C-1", "amount": 20.0}
    tried = [{"op": "change", "path": PATH, "old": 6313.30, "new": 6333.30}]  # ours raises it
    mark = _aim(TOP_UP, arguments, refund, STATE, tried)
    assert mark is not None and mark.raises and mark.field == "retainer_balance"
    assert mark.value > 6313.30 and mark.value % 100 == 0  # round, past the balance
    assert abs(arguments["amount"] - (mark.value - 6313.30)) < 0.005  # the difference
    assert mark.amount(refund) == "amount"


def test_a_mark_is_one_the_tool_can_reach_and_branches_one_way_have_none():
    """From a review: the mark 15 % past the balance was beyond a $500 deposit limit, and a
    withdrawal paired with a refund (both lower it) was aimed as if one raised it."""
    capped = _tool("add_retainer", "add {amount} to the retainer of {client_id}")
    capped.args[1].maximum = 800.0  # $7,000 is in reach; $7,500 (15 % past) is not
    refund = _step(REFUND, 400.0, 6313.30, 5913.30)
    arguments = {"client_id": "C-1", "amount": 20.0}
    tried = [{"op": "change", "path": PATH, "old": 6313.30, "new": 6333.30}]
    mark = _aim(capped, arguments, refund, STATE, tried)
    assert mark is not None and mark.value == 7000.0 and arguments["amount"] <= 800.0
    lowered = [{"op": "change", "path": PATH, "old": 6313.30, "new": 6293.30}]
    assert _aim(TOP_UP, {"client_id": "C-1", "amount": 20.0}, refund, STATE, lowered) is None


def test_branches_moving_the_number_both_ways_without_a_mark_make_no_policy():
    top_up, refund = _step(TOP_UP, 20, 6313.30, 6333.30), _step(REFUND, 400, 6313.30, 5913.30)
    assert _no_policy(top_up, refund, PATH)
    assert not _no_policy(top_up, _step(TOP_UP, 50, 6313.30, 6363.30), PATH)


def test_a_marked_conditional_says_the_mark_and_each_branch_by_its_difference():
    taken = _step(TOP_UP, 1686.70, 6313.30, 8000.0)
    other = _step(REFUND, 400.0, 6313.30, 5913.30)
    taken.mentions[1] = ArgMention("amount", 1686.70, "float", described="the difference")
    other.mentions[1] = ArgMention("amount", 400.0, "float", described="the excess")
    condition = Condition(CLIENT, "retainer_balance", "<", 8000.0, True, other, {}, target=True)
    staff = conditional_clause(taken, condition, random.Random(0), vague=False, voice="staff")
    text = staff.sentence()
    assert text.startswith("Ann Lee's retainer balance is meant to stay at $8,000; please"), text
    assert "If it is below that, " in text and "refund the excess from" in text, text
    # money added comes from someone (round 28: "put the difference into it" from nowhere), and
    # is in hand: a client's card on file (round 45: "a deposit before the money has arrived")
    assert "charge the difference to their card on file, so please add it to their" in text, text
    member = conditional_clause(taken, condition, random.Random(1), vague=False, voice="self")
    assert "I'll pay in the difference, so please add it to" in member.sentence(), member
    assert member.sentence().startswith("I "), member  # a member speaks for themself
    # where no one signs in, staff pass on what the client agreed and asked (round 25: "a mark
    # of no one's"; round 33: a caller saying who they are told a confidential balance)
    own = conditional_clause(taken, condition, random.Random(0), vague=False).sentence()
    assert own.startswith("Ann Lee keeps their retainer balance at $8,000 under their agree"), own
    # the top-up is charged to a card, not promised (round 38: "made without any payment
    # actually being received")
    charged = "charge the difference to their card on file, so please add it to their retainer"
    assert charged in own, own
    assert "to be $8,000" not in text + own, text  # "I'd like it to be $X" (round 33)
    assert "1,686.70" not in text and "$400" not in text, text


def test_a_branch_that_says_where_the_money_comes_from_is_left_as_it_is():
    moved = "move the difference into it from ACC-1"
    assert _paid_in(moved, PAID_IN) == moved
    assert _paid_in("put the difference into it", PAID_IN) == (
        "they'll pay in the difference, so please put that amount into it"
    )


def test_the_difference_between_an_amount_the_user_gave_and_one_read_is_grounded():
    sight = Sight()
    sight.hear("I'd like the retainer to be $8,000.")
    sight.read_value({"retainer_balance": 6313.30})
    assert sight.unseen({"amount": 1686.70}) == []  # 8,000 less what was read
    assert sight.unseen({"amount": 1234.56}) == [("amount", 1234.56)]  # a guess
    assert sight.unseen({"quantity": 1686.70}) == [("quantity", 1686.70)]  # not money


def test_a_difference_of_figures_the_agent_did_not_read_from_a_tool_is_no_ground():
    """From a review: figures said together ("45 and 60"), or a figure of the system message,
    made any difference of them look seen."""
    plain = Sight()
    plain.hear("Book 45 and 60.")  # no amount of money
    plain.read_value({"slots": [45, 60]})
    assert plain.unseen({"amount": 15}) == [("amount", 15)]
    ruled = Sight()
    ruled.read_text("Deposits over $1,000 need a manager.")  # the system message
    ruled.hear("Please deposit $200.")
    assert ruled.unseen({"amount": 800}) == [("amount", 800)]


def test_a_goal_names_the_speakers_own_record_as_theirs():
    """Round 23: a signed-in guest's goal read "change the phone of a guest"."""
    from envmill.tasks.backends.procedural.phrasing.task import fill_template

    guest = ArgMention("guest_id", "GST-2", "entity_id", "guest", "Gary Rogers", signed_in=True)
    assert fill_template("change the phone of {guest_id}", [guest], True) == "change my phone"
    assert fill_template("update {guest_id.label}'s email", [guest], True) == "update my email"
    booked = fill_template("book a room for the guest {guest_id}", [guest], True)
    assert booked == "book a room for me"
    other = ArgMention("guest_id", "GST-3", "entity_id", "guest", "Ann Lee")
    assert fill_template("change the phone of {guest_id}", [other], True) == (
        "change the phone of the guest"
    )


def test_a_branch_aimed_at_a_mark_hands_no_money_over():
    """Round 24: "here's the difference towards the retainer" when the user hands nothing over."""
    from envmill.tasks.backends.procedural.phrasing.task import _branch

    paying = _tool("add_retainer", "here's {amount} towards the retainer of {client_id}")
    paying.phrases.append("add {amount} to the retainer of {client_id}")
    step = _step(paying, 1686.70, 6313.30, 8000.0)
    step.mentions[1] = ArgMention("amount", 1686.70, "float", described="the difference")
    said = {_branch(step, random.Random(seed), None, True).lead() for seed in range(8)}
    assert all(not s.startswith("here's") for s in said), said


def test_staff_bring_an_account_to_its_mark_with_the_holder_at_the_desk():
    """Round 38: "I'll pay out cash from account ACC-1" with no customer there."""
    account = ArgMention("account_id", "ACC-1", "entity_id", "account")
    taken = _step(TOP_UP, 250.0, 750.0, 1000.0)
    taken.mentions[0] = account
    taken.mentions[1] = ArgMention("amount", 250.0, "float", described="the difference")
    other = _step(REFUND, 100.0, 750.0, 650.0)
    other.mentions[0] = account
    other.mentions[1] = ArgMention("amount", 100.0, "float", described="the excess")
    condition = Condition(account, "balance", "<", 1000.0, True, other, {}, target=True)
    named = conditional_clause(taken, condition, random.Random(0), vague=False, voice="staff")
    text = named.sentence()
    assert text.startswith(
        "The holder of account ACC-1 is here; they keep its balance at $1,000"
    ), text
    assert "they'll pay in the difference" in text, text
    goal = conditional_clause(taken, condition, random.Random(0), vague=True, voice="staff")
    assert goal.sentence().startswith(
        "An account holder is here; they keep the balance of their account"
    ), goal


def test_a_stamp_both_branches_set_does_not_make_the_branch_not_taken_done():
    """Approving and rejecting both stamp the decision's time: only what tells them apart
    must be missing from the final state."""
    from envmill.tasks.backends.procedural.scenarios.conditions import _not_done

    stamp = {"op": "change", "path": ["requests", "LR-1", "decided_at"], "old": None,
             "new": "2025-05-05T09:00:00"}  # fmt: skip
    approved = {"op": "change", "path": ["requests", "LR-1", "status"], "old": "pending",
                "new": "approved"}  # fmt: skip
    rejected = {**approved, "new": "rejected"}
    taken = _step(TOP_UP, 0, 0, 0)
    taken.changes = [approved, stamp]
    other = _step(REFUND, 0, 0, 0)
    other.changes = [rejected, stamp]
    final = {"requests": {"LR-1": {"status": "approved", "decided_at": "2025-05-05T09:00:00"}}}
    assert _not_done(other, final, taken)
    assert not _not_done(other, final)  # without the taken branch, the stamp looks done
    final["requests"]["LR-1"]["status"] = "rejected"
    assert not _not_done(other, final, taken)


def test_a_policy_s_own_words_name_only_what_is_filled_in():
    """A typo in a domain's request template fails when the spec is read, naming the text."""
    import pytest
    from pydantic import ValidationError

    from envmill.tasks.backends.procedural.spec.domain import PolicySpec

    base = {"field": "days", "high": "reject", "low": "approve", "why": "no cover"}
    assert PolicySpec(**base, asks=["Please decide {record}; under {limit} is fine."]).asks
    bad_words = (
        {"asks": ["decide {recrod} under {limit}"]},
        {"line": "the {limit budget"},
        {"low_done": "{x}"},
        {"asks": [""]},  # a breaker's: an empty request lost an environment's scenarios
        {"asks": ["Pay {record} } if under { {limit}."]},
        {"high_done": "   "},
        {"asks": ["Pay {{record}} if under {limit}"]},  # no record named
        {"asks": ["Pay {record} with store credit if it is small"]},  # no threshold said
        {"asks": ["{record} {limit!r}"]},
    )
    for bad in bad_words:
        with pytest.raises(ValidationError, match=r"policy \w+ .*: (?:only|is|must|may)"):
            PolicySpec(**base, **bad)
