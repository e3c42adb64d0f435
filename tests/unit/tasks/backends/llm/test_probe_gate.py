"""The environment check's chains without a sandbox or a model: ``$N`` references, the clock
and the probe state's merge."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.llm.skelbuilder.chain import move_clock, resolve_references
from envmill.tasks.backends.llm.skelbuilder.probe_state import merged_state

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


def test_a_probe_state_changes_only_the_fields_it_names():
    initial = {
        "loans": {
            "LN-1": {"loan_id": "LN-1", "status": "active", "due_on": "2025-03-20"},
            "LN-2": {"loan_id": "LN-2", "status": "returned", "due_on": "2025-03-01"},
        },
        "current_time": "2025-03-10T09:00:00",
        "acting_role": "member",
    }
    changes = {
        "loans": {
            "LN-2": {"status": "overdue"},
            "LN-3": {"loan_id": "LN-3", "status": "active", "due_on": "2025-04-01"},
        },
        "acting_role": "staff",
    }
    merged = merged_state(initial, changes)
    assert merged["loans"]["LN-1"] == initial["loans"]["LN-1"]
    assert merged["loans"]["LN-2"] == {**initial["loans"]["LN-2"], "status": "overdue"}
    assert merged["loans"]["LN-3"]["due_on"] == "2025-04-01"
    assert merged["acting_role"] == "staff" and merged["current_time"] == initial["current_time"]
    assert initial["loans"]["LN-2"]["status"] == "returned"  # the initial state is left alone
