"""The environment check's chains and gate without a sandbox or a model: ``$N`` references, the
clock, the probe state's merge, and the gate on state-changing tools that never succeeded (a
finding below the settable share, a refusal above it) and on warnings counted as failures."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from envmill.schemas.environment import FunctionSpec, ToolSchema
from envmill.schemas.skeleton import ProbeJudgement, ProposedCall, SkeletonSettings
from envmill.tasks.backends.llm.skelbuilder.chain import (
    NOT_RUN,
    RanProbe,
    move_clock,
)
from envmill.tasks.backends.llm.skelbuilder.gate import env_warnings, score_probes
from envmill.tasks.backends.llm.skelbuilder.probe_state import merged_state
from envmill.tasks.core.references import resolve_references

RESULTS = {1: {"success": True, "data": {"loan_id": "LN-7", "items": [{"id": "X-1"}]}}}


def test_a_reference_takes_what_an_earlier_call_returned():
    arguments = {"loan_id": "$1.data.loan_id", "item": "$1.data.items.0.id", "note": "$5 fee"}
    assert resolve_references(arguments, RESULTS, "call") == {
        "loan_id": "LN-7",
        "item": "X-1",
        "note": "$5 fee",  # not a reference: left as written
    }
    with pytest.raises(LookupError, match="names call 2, which has not run yet"):
        resolve_references({"loan_id": "$2.data.loan_id"}, RESULTS, "call")
    with pytest.raises(LookupError, match="has nothing at 'member_id'"):
        resolve_references({"member_id": "$1.data.member_id"}, RESULTS, "call")


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


def _env(changes: int, queries: int = 9) -> SimpleNamespace:
    names = [f"change_{i}" for i in range(changes)] + [f"get_{i}" for i in range(queries)]
    tools = [
        ToolSchema(function=FunctionSpec(name=name, description="", parameters={}))
        for name in names
    ]
    kinds = {name: "state_change" if name.startswith("change") else "query" for name in names}
    return SimpleNamespace(tools=tools, tool_kinds=kinds)


def _probes(env, refused: set[str]) -> list[RanProbe]:
    """One positive probe per tool; those of ``refused`` tools were refused."""
    probes = []
    for index, tool in enumerate(env.tools, 1):
        name = tool.function.name
        result = {"success": name not in refused, "error": "not checked in" * (name in refused)}
        call = ProposedCall(tool=name, kind="positive")
        probes.append(RanProbe(index, 0, call, env.tool_kinds[name], result, []))
    return probes


def _passing(probes, warned: frozenset[int] = frozenset()) -> dict[int, ProbeJudgement]:
    return {
        p.index: ProbeJudgement(
            probe=p.index,
            verdict="warning" if p.index in warned else "pass",
            reason="plasma allocated with the red-cell table" if p.index in warned else "ok",
        )
        for p in probes
    }


def test_one_tool_never_succeeding_of_an_18_tool_environment_is_a_finding_not_a_refusal():
    env = _env(changes=9)
    probes = _probes(env, refused={"change_3"})
    report = score_probes(env, probes, _passing(probes), SkeletonSettings())
    assert report.accepted and report.never_succeeded == ["change_3"]
    (found,) = env_warnings(probes, _passing(probes), report)
    assert found.kind == "never_succeeded" and found.tool == "change_3" and found.probes == [4]
    assert found.message == (
        "change_3 never succeeded in 1 probe (last positive call: not checked in)"
    )


def test_a_third_of_the_state_changing_tools_never_succeeding_fails_the_gate():
    env = _env(changes=9)
    probes = _probes(env, refused={"change_0", "change_4", "change_8"})
    report = score_probes(env, probes, _passing(probes), SkeletonSettings())
    assert not report.accepted and report.code == "untested_success"
    assert report.reason == (
        "3 of 9 state-changing tools never succeeded (0.33 > 0.25): change_0, change_4, change_8"
    )
    lenient = SkeletonSettings(untested_success_share=0.5)
    assert score_probes(env, probes, _passing(probes), lenient).accepted


def test_warnings_are_kept_and_count_as_failures_when_set():
    env = _env(changes=2, queries=2)
    probes = _probes(env, refused=set())
    verdicts = _passing(probes, warned=frozenset({1}))
    report = score_probes(env, probes, verdicts, SkeletonSettings())
    assert report.accepted and report.pass_rate == 1.0 and report.warnings == 1
    (warned,) = env_warnings(probes, verdicts, report)
    assert (warned.kind, warned.tool, warned.probes) == ("judge_warning", "change_0", [1])
    assert "red-cell table" in warned.message
    strict = SkeletonSettings(warnings_fail=True)
    refused = score_probes(env, probes, verdicts, strict)
    assert not refused.accepted and refused.code == "pass_rate_below_threshold"
    assert refused.pass_rate == 0.75 and "1 warned (warnings count as failures)" in refused.reason
    assert "first: probe 1, change_0: plasma" in refused.reason


def test_a_call_that_never_ran_is_the_testers_slip_not_the_environments():
    env = _env(changes=1, queries=1)
    probes = _probes(env, refused=set())
    slip = RanProbe(3, 0, ProposedCall(tool="get_0", kind="negative"), "query", {}, [])
    slip.result = {"success": False, "error": f"{NOT_RUN}'$9.data.id' names call 9"}
    verdicts = _passing([*probes, slip], warned=frozenset({3}))
    report = score_probes(env, [*probes, slip], verdicts, SkeletonSettings(warnings_fail=True))
    assert report.accepted and report.probes == 2  # the slip is not a probe of the tool
    assert env_warnings([*probes, slip], verdicts, report) == []
