"""The environment check's chains without a sandbox or a model: ``$N`` references and the clock."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.llm.skelbuilder.chain import move_clock, resolve_references

RESULTS = {1: {"success": True, "data": {"loan_id": "LN-7", "items": [{"id": "X-1"}]}}}


def test_a_reference_takes_what_an_earlier_call_returned():
    arguments = {"loan_id": "$1.data.loan_id", "item": "$1.data.items.0.id", "note": "$5 fee"}
    assert resolve_references(arguments, RESULTS) == {
        "loan_id": "LN-7",
        "item": "X-1",
        "note": "$5 fee",  # not a reference: left as written
    }
    with pytest.raises(LookupError, match="names call 2, which did not run"):
        resolve_references({"loan_id": "$2.data.loan_id"}, RESULTS)
    with pytest.raises(LookupError, match="has nothing at 'member_id'"):
        resolve_references({"member_id": "$1.data.member_id"}, RESULTS)


def test_the_clock_moves_forward_only_and_keeps_its_format():
    state = {"current_time": "2025-03-10T09:00:00", "loans": {}}
    assert move_clock(state, "2025-03-12T08:30:00")["current_time"] == "2025-03-12T08:30:00"
    assert move_clock({"today": "2025-03-10"}, "2025-03-12T08:30:00") == {"today": "2025-03-12"}
    with pytest.raises(LookupError, match="the clock only moves forward"):
        move_clock(state, "2025-03-09T09:00:00")
    with pytest.raises(LookupError, match="not an ISO 8601 time"):
        move_clock(state, "next tuesday")
    with pytest.raises(LookupError, match="the state has no clock"):
        move_clock({"loans": {}}, "2025-03-12T08:30:00")
