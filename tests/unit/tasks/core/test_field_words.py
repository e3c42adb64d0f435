"""Which field names are sums of money, and how a field is said."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.procedural.phrasing.words import is_money
from envmill.tasks.core.field_words import field_noun, is_money_field


@pytest.mark.parametrize(
    ("name", "money"),
    [
        ("goal", True),  # a campaign's goal (round 57: "goal 30000")
        ("raised", True),
        ("steps_goal", False),  # a breaker's: a goal of steps, issues raised, are no sums
        ("issues_raised", False),
        ("leave_balance", False),
    ],
)
def test_a_sum_of_money_by_its_name_in_both_readers(name, money):
    assert is_money_field(name) is money
    assert is_money(name, 100.0) is money


def test_a_campaigns_sums_have_words():
    """A breaker's: "what is the raised of the Youth Sports Kits campaign?"."""
    assert field_noun("raised") == "amount raised" and field_noun("goal") == "fundraising goal"
