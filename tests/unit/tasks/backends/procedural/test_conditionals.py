"""Conditionals a person would say: round amounts and thresholds, a threshold that covers what
the branch for high values takes away, one money format, the record named as a person names
it, and no second read of a number a search already showed (from the rating: "If the balance
of an account is $36 or more, please move 20.89 dollars from it …; otherwise, please put
$31.17 into it")."""

from __future__ import annotations

import math
import random
import re

import pytest

from envmill.tasks.backends.procedural.manifest import ArgManifest, ToolManifest
from envmill.tasks.backends.procedural.phrasing.task import condition_subject, conditional_clause
from envmill.tasks.backends.procedural.phrasing.words import order_phrases
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ChainStep, Condition
from envmill.tasks.backends.procedural.scenarios.conditions import (
    _threshold,
    in_round_numbers,
    shows_field,
)
from envmill.tasks.backends.procedural.scenarios.round_numbers import (
    MANTISSAS,
    rounded_amount,
)


def is_round(number: float) -> bool:
    """One significant digit, or a half below three ($15, $250, $1,500)."""
    power = 10 ** math.floor(math.log10(number))
    return any(math.isclose(number, m * power) for m in MANTISSAS)


def _money(**bounds) -> ArgManifest:
    return ArgManifest(name="amount", source="float", **bounds)


@pytest.mark.parametrize(
    ("value", "expected"), [(219.06, 200.0), (20.89, 20.0), (462.92, 500.0), (2.0, 10.0)]
)
def test_an_amount_the_user_chooses_is_round(value, expected):
    assert rounded_amount(_money(minimum=0.01, maximum=50000), value, True) == expected


def test_a_round_amount_keeps_its_type_and_bounds():
    count = ArgManifest(name="quantity", source="int", minimum=1, maximum=250)
    assert rounded_amount(count, 294, False) == 250 and isinstance(
        rounded_amount(count, 294, False), int
    )
    assert rounded_amount(count, 7, False) == 7
    # a bound no round number fits leaves the value as drawn
    assert rounded_amount(_money(minimum=21.1, maximum=21.3), 21.2, True) == 21.2


def test_a_branch_s_amounts_are_rounded_in_place():
    tool = ToolManifest(
        tool="deposit",
        kind="state_change",
        entity="account",
        args=[ArgManifest(name="account_id", source="entity_id", entity="account"), _money()],
    )
    arguments = {"account_id": "ACC-000006", "amount": 31.17}
    in_round_numbers(tool, arguments)
    assert arguments == {"account_id": "ACC-000006", "amount": 30.0}


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("value", [61.18, 2886.5, 18, 175.0, 0.4])
def test_a_threshold_is_round_decides_as_drawn_and_covers_what_is_taken(seed, value):
    rng = random.Random(seed)
    op, holds = rng.choice((">=", "<")), rng.random() < 0.5
    least = rng.choice((0.0, 20.0, 150.0))
    threshold = _threshold(value, op, holds, rng, least)
    if threshold is None:
        return
    assert is_round(threshold), threshold
    assert (value >= threshold if op == ">=" else value < threshold) == holds
    # "if it has $X or more, move $200 out of it": the line is never below what is taken
    assert threshold >= least


def test_the_old_arbitrary_thresholds_are_gone():
    """ "$36", "$1,700": two significant digits read as a machine's figure."""
    for seed in range(200):
        threshold = _threshold(2886.5, ">=", True, random.Random(seed))
        assert threshold is not None and threshold not in (1700.0, 1800.0, 2300.0)


def _account_tool(name: str, phrase: str, *, to: bool = False) -> ToolManifest:
    args = [ArgManifest(name="account_id", source="entity_id", entity="account"), _money()]
    if to:
        args.append(ArgManifest(name="to_account_id", source="entity_id", entity="account"))
    return ToolManifest(
        tool=name, kind="state_change", entity="account", args=args, phrases=[phrase]
    )


def _branches(amounts: tuple[float, float]) -> tuple[ChainStep, ChainStep, ArgMention]:
    record = ArgMention("account_id", "ACC-000006", "entity_id", "account")
    move = _account_tool(
        "move_money",
        "Please move {amount} dollars from account {account_id} to account {to_account_id}.",
        to=True,
    )
    deposit = _account_tool("deposit", "Please put {amount} into my account {account_id}.")
    out = ChainStep(
        move,
        {"account_id": "ACC-000006", "amount": amounts[0], "to_account_id": "ACC-000001"},
        [
            record,
            ArgMention("amount", amounts[0], "float"),
            ArgMention("to_account_id", "ACC-000001", "entity_id", "account"),
        ],
        [],
    )
    into = ChainStep(
        deposit,
        {"account_id": "ACC-000006", "amount": amounts[1]},
        [record, ArgMention("amount", amounts[1], "float")],
        [],
    )
    return out, into, record


@pytest.mark.parametrize("seed", range(6))
def test_a_conditional_says_money_one_way(seed):
    out, into, record = _branches((20.0, 31.17))
    condition = Condition(record, "balance", ">=", 50.0, True, into, {})
    out.condition = condition
    body = conditional_clause(out, condition, random.Random(seed), vague=False).body
    assert "dollars" not in body, body
    assert "$20" in body and "$31.17" in body and "$50" in body, body
    assert not re.search(r"(?<!\$)\b\d+(?:\.\d+)? dollars", body)


def test_the_record_is_named_as_a_person_names_it():
    client = ArgMention(
        "client_id", "CLT-0004", "entity_id", "client", "Ryan Reed", "name", by_label=True
    )
    assert condition_subject(client, "retainer balance", vague=False) == (
        "Ryan Reed's retainer balance"
    )
    account = ArgMention("account_id", "ACC-000006", "entity_id", "account")
    assert condition_subject(account, "balance", vague=False) == (
        "the balance of account ACC-000006"
    )
    # in a goal, before the user is asked which: "my account", never "an account"
    assert condition_subject(account, "balance", vague=True) == "the balance of my account"


def test_a_search_that_showed_the_number_needs_no_second_read():
    found = [{"client_id": "CLT-0004", "name": "Ryan Reed", "retainer_balance": 2886.5}]
    assert shows_field(found, "CLT-0004", "retainer_balance")
    assert not shows_field(found, "CLT-0005", "retainer_balance")
    assert not shows_field([{"client_id": "CLT-0004", "name": "Ryan Reed"}], "CLT-0004", "x")


def test_a_branch_says_the_order_not_the_reason_before_it():
    """From the rating: "if not, their case is about to start, with the amount set to $500"."""
    said = order_phrases(
        [
            "{client_id.label}'s case is about to start; add {amount} to their retainer.",
            "Please cancel my order {order_id}; I changed my mind.",
        ]
    )
    assert said == ["add {amount} to their retainer.", "Please cancel my order {order_id}"]


def test_a_branch_reply_says_where_the_money_went_and_the_judge_takes_it():
    """ "…, so I went ahead: I've changed account ACC-000006's balance to $41.18" never said
    the $20 went to ACC-000001; the amount the user gave is no guess beside the answer."""
    from types import SimpleNamespace

    from envmill.schemas.answers import ExpectedAnswer
    from envmill.tasks.backends.procedural.scenarios.chains import Chain
    from envmill.tasks.backends.procedural.scenarios.conditions import branch_answer
    from envmill.tasks.judge.answers import judge_answer
    from envmill.tasks.judge.setting import setting_of

    out, into, record = _branches((20.0, 30.0))
    out.condition = Condition(record, "balance", ">=", 30.0, True, into, {})
    accounts = {
        "ACC-000006": {"account_id": "ACC-000006", "balance": 61.18},
        "ACC-000001": {"account_id": "ACC-000001", "balance": 4104.43},
    }
    moved = {
        "ACC-000006": {**accounts["ACC-000006"], "balance": 41.18},
        "ACC-000001": {**accounts["ACC-000001"], "balance": 4124.43},
    }
    out.result = {
        "success": True,
        "data": moved["ACC-000006"],
        "message": "Transferred 20.0 from ACC-000006 to ACC-000001.",
    }
    chain = Chain({"accounts": accounts}, {"accounts": moved}, steps=[out])
    compiled = SimpleNamespace(
        entity_attrs={"account": "accounts"}, roles={}, acting_role_attr=None
    )
    expected, reply = branch_answer(compiled, chain)
    assert "ACC-000001" in reply and "$20.00" in reply and "$61.18" in reply, reply
    assert isinstance(expected, ExpectedAnswer)
    task = "If the balance of account ACC-000006 is $30 or more, move $20 to ACC-000001."
    setting = setting_of(task, chain.initial_state, chain.final_state)
    assert judge_answer(expected, reply, setting).passed, reply


def test_a_sum_the_user_picks_is_the_round_number_nearest_inside_its_window():
    from envmill.tasks.backends.procedural.scenarios.round_numbers import round_within

    assert round_within(259.64, 10, 500) == 250
    assert round_within(204.59, 10, 3000) == 200
    assert round_within(17.3, 14, 18.5) == 15  # the grid has the halves people say
    assert round_within(17.3, 16, 18.5) == 17  # none on the grid: a whole sum
    assert round_within(17.31, 17.3, 17.32) == 17.31  # no whole number fits: kept


def test_a_marked_reply_says_the_gap_it_closed_and_where_the_number_stands():
    """Round 35: "…, so I added the difference: client X's retainer balance went up by $84.21
    and is now $3,000.00" read as a template; the gap and the new figure are said once each."""
    from types import SimpleNamespace

    from envmill.tasks.backends.procedural.scenarios.chains import Chain
    from envmill.tasks.backends.procedural.scenarios.conditions import branch_answer
    from envmill.tasks.judge.answers import judge_answer
    from envmill.tasks.judge.setting import setting_of

    into, out, record = _branches((178.52, 50.0))
    into.condition = Condition(record, "balance", "<", 3000.0, True, out, {}, target=True)
    accounts = {"ACC-000006": {"account_id": "ACC-000006", "balance": 2821.48}}
    topped = {"ACC-000006": {"account_id": "ACC-000006", "balance": 3000.0}}
    chain = Chain({"accounts": accounts}, {"accounts": topped}, steps=[into])
    expected, reply = branch_answer(
        SimpleNamespace(entity_attrs={"account": "accounts"}, roles={}, acting_role_attr=None),
        chain,
    )
    assert reply.endswith(
        "is $2,821.48, below the $3,000 target, so I added the $178.52 difference, and it is now "
        "$3,000.00."
    ), reply
    task = "The balance of account ACC-000006 is meant to stay at $3,000; please check it."
    setting = setting_of(task, chain.initial_state, chain.final_state)
    assert judge_answer(expected, reply, setting).passed, reply


def test_a_marked_reply_says_where_the_excess_went():
    """Round 38: "took off the $307.99 excess" never said it went to ACC-000005."""
    from types import SimpleNamespace

    from envmill.tasks.backends.procedural.scenarios.chains import Chain
    from envmill.tasks.backends.procedural.scenarios.conditions import branch_answer

    out, into, record = _branches((307.99, 50.0))
    out.condition = Condition(record, "balance", ">=", 3000.0, True, into, {}, target=True)
    out.arguments = {"account_id": "ACC-000006", "to_account_id": "ACC-000005", "amount": 307.99}
    accounts = {
        "ACC-000006": {"account_id": "ACC-000006", "balance": 3307.99},
        "ACC-000005": {"account_id": "ACC-000005", "balance": 100.0},
    }
    moved = {
        "ACC-000006": {**accounts["ACC-000006"], "balance": 3000.0},
        "ACC-000005": {**accounts["ACC-000005"], "balance": 407.99},
    }
    chain = Chain({"accounts": accounts}, {"accounts": moved}, steps=[out])
    _, reply = branch_answer(
        SimpleNamespace(entity_attrs={"account": "accounts"}, roles={}, acting_role_attr=None),
        chain,
    )
    assert "so I moved the $307.99 excess to account ACC-000005, and it is now $3,000.00" in reply


def test_money_a_change_moved_on_the_signed_in_persons_record_is_theirs():
    """Round 41: "…so it is now marked paid; customer CU-00001's store credit went down by
    $78.00", said to customer CU-00001 about their own order."""
    from envmill.tasks.rollout.closing import what_changed

    before = {
        "acting_id": "CU-1",
        "customers": {"CU-1": {"name": "Ann Lee", "store_credit": 100.0}},
        "orders": {"OR-6": {"customer_id": "CU-1", "total": 78.0, "status": "pending"}},
    }
    after = {
        **before,
        "customers": {"CU-1": {"name": "Ann Lee", "store_credit": 22.0}},
        "orders": {"OR-6": {"customer_id": "CU-1", "total": 78.0, "status": "paid"}},
    }
    shown = [
        [{"order_id": "OR-6"}, {"ok": True, "data": before["orders"]["OR-6"]}],
        [{"order_id": "OR-6"}, {"ok": True, "message": "Order OR-6 paid with store credit."}],
    ]
    assert "customer CU-1's store credit went down by $78.00" in what_changed(before, after, shown)
    mine = what_changed(before, after, [*shown, {"acting_id": "CU-1"}])
    assert "your store credit went down by $78.00" in mine and "CU-1" not in mine, mine
