"""Certification (DESIGN §3.3) on the golden clinic scenarios, and reference trajectories (§3.4)."""

from __future__ import annotations

import json

import pytest

from envmill.schemas.ids import canonical_json
from envmill.schemas.scenario import GATES, ScenarioSpec
from envmill.tasks.certify import certify_scenario
from envmill.tasks.rollout import reference_trajectory


def _spec(clinic, raw: dict) -> ScenarioSpec:
    return ScenarioSpec(env_id=clinic.env_id, **raw)


@pytest.fixture(scope="module")
def certified_reports(clinic, clinic_scenarios, sandbox):
    specs = [_spec(clinic, raw) for raw in clinic_scenarios["certified"]]
    return [(spec, certify_scenario(spec, clinic, sandbox)) for spec in specs]


def test_golden_scenarios_certify(certified_reports):
    assert len(certified_reports) >= 4
    for spec, report in certified_reports:
        assert report.status == "certified", [g for g in report.gates if not g.passed]
        assert [g.gate for g in report.gates] == list(GATES)
        assert report.scenario_id == spec.scenario_id
        assert report.check_results == [True] * len(spec.checks)


@pytest.mark.parametrize("gate", GATES)
def test_each_gate_rejects_its_own_scenario(clinic, clinic_scenarios, sandbox, gate):
    report = certify_scenario(_spec(clinic, clinic_scenarios["fail"][gate]), clinic, sandbox)
    assert report.status == "rejected"
    assert report.rejected_gate == gate
    failing = next(g for g in report.gates if g.gate == gate)
    assert not failing.passed and failing.reason
    # every gate is still evaluated and recorded, in order
    assert [g.gate for g in report.gates] == list(GATES)


def test_a_check_refused_by_the_policy_counts_as_false(clinic, clinic_scenarios, sandbox):
    raw = dict(clinic_scenarios["certified"][0])
    sneaky = "import os\ndef check(initial_state, final_state):\n    return True\n"
    raw["checks"] = [*raw["checks"], {"description": "Has nothing to do with os", "code": sneaky}]
    report = certify_scenario(_spec(clinic, raw), clinic, sandbox)
    assert report.rejected_gate == "checks_pass"
    assert "policy" in next(g.reason for g in report.gates if g.gate == "checks_pass")


def test_a_check_that_raises_counts_as_false(clinic, clinic_scenarios, sandbox):
    raw = dict(clinic_scenarios["certified"][0])
    broken = "def check(initial_state, final_state):\n    return final_state['nothing']['x'] == 1\n"
    raw["checks"] = [{"description": "Has a broken check", "code": broken}]
    report = certify_scenario(_spec(clinic, raw), clinic, sandbox)
    assert report.rejected_gate == "checks_pass"
    assert "KeyError" in next(g.reason for g in report.gates if g.gate == "checks_pass")


def test_scenario_id_is_a_content_hash(clinic, clinic_scenarios):
    raw = clinic_scenarios["certified"][0]
    first, again = _spec(clinic, raw), _spec(clinic, json.loads(json.dumps(raw)))
    assert first.scenario_id == again.scenario_id and len(first.scenario_id) == 16
    changed = _spec(clinic, {**raw, "task": raw["task"] + " Thanks!"})
    assert changed.scenario_id != first.scenario_id


def test_reference_trajectory_is_chat_completions(certified_reports, clinic):
    spec, report = certified_reports[0]
    trajectory = reference_trajectory(spec, report, introduction="Clinic front desk.")
    roles = [m["role"] for m in trajectory.messages]
    assert roles[:2] == ["system", "user"] and roles[-1] == "assistant"
    calls = [m for m in trajectory.messages if m.get("tool_calls")]
    results = [m for m in trajectory.messages if m["role"] == "tool"]
    assert len(calls) == len(results) == len(spec.reference_solution) == trajectory.steps
    for call, result, step, outcome in zip(  # noqa: B905 - equal lengths asserted above
        calls, results, spec.reference_solution, report.step_results
    ):
        assert len(call["tool_calls"]) == 1  # one tool call per assistant message
        function = call["tool_calls"][0]["function"]
        assert function["name"] == step.tool and json.loads(function["arguments"]) == step.arguments
        assert result["tool_call_id"] == call["tool_calls"][0]["id"]
        assert result["content"] == canonical_json(outcome)
    assert trajectory.reward == 1.0 and trajectory.termination == "finished"
    assert trajectory.policy == "reference" and len(trajectory.trajectory_id) == 16


def test_rejected_scenarios_make_no_trajectory(clinic, clinic_scenarios, sandbox):
    spec = _spec(clinic, clinic_scenarios["fail"]["checks_pass"])
    with pytest.raises(ValueError, match="not certified"):
        reference_trajectory(spec, certify_scenario(spec, clinic, sandbox))


def test_certify_takes_a_module_source(clinic_source, clinic_scenarios, sandbox):
    from envmill.tasks.certify import certify

    spec = ScenarioSpec(env_id="0" * 16, **clinic_scenarios["certified"][1])
    assert certify(spec, clinic_source, sandbox).status == "certified"
