"""Certification (DESIGN §3.3): a scenario is kept only if executing it proves it sound.

Gates run in a fixed order and every one is recorded with a reason, so a rejection rate by gate
is a SQL query. Two hosts per scenario: one episode (solution, then the partial replay from a
fresh instance) and one for the checks (run twice, for the determinism gate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jsonschema

from envmill.schemas.scenario import GATES, CertificationReport, GateName, GateResult, ScenarioSpec
from envmill.schemas.settings import SandboxLimits
from envmill.tasks.environment import PreparedEnvironment, prepare_environment
from envmill.tasks.policy import check_check_source
from envmill.tasks.sandbox import Sandbox
from envmill.tasks.sandbox.shared import process_sandbox

Pair = tuple[dict[str, Any], dict[str, Any]]


@dataclass
class _Evidence:
    """What the executions showed; the gates are verdicts over it."""

    load_error: str | None = None
    step_results: list[dict[str, Any]] = field(default_factory=list)
    final_state: dict[str, Any] | None = None
    partial_state: dict[str, Any] | None = None
    partial_note: str = ""
    runs: list[list[list[dict[str, Any]]]] = field(default_factory=list)  # run -> check -> pair


def certify(
    scenario: ScenarioSpec, source: str, sandbox: Sandbox | None = None
) -> CertificationReport:
    """Certify a scenario against an environment module's source (prepared here, in the sandbox).

    Raises:
        EnvironmentRejected: the module itself is refused (policy, structure or load).
    """
    box = sandbox or process_sandbox(SandboxLimits())
    return certify_scenario(scenario, prepare_environment(source, box), box)


def certify_scenario(
    scenario: ScenarioSpec, env: PreparedEnvironment, sandbox: Sandbox
) -> CertificationReport:
    evidence = _Evidence(load_error=_schema_error(scenario.initial_state, env.state_schema))
    if evidence.load_error is None:
        _run_solution(scenario, env, sandbox, evidence)
    if evidence.final_state is not None:
        _run_checks(scenario, sandbox, evidence)
    gates = [_judge(gate, scenario, evidence) for gate in GATES]
    check_results = [row[0]["value"] is True for row in evidence.runs[0]] if evidence.runs else []
    return CertificationReport(
        scenario_id=scenario.scenario_id,
        gates=gates,
        final_state=evidence.final_state,
        step_results=evidence.step_results,
        check_results=check_results,
    )


def _schema_error(state: dict[str, Any], schema: dict[str, Any]) -> str | None:
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(state)
    )
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"initial state does not match the state schema at {where}: {error.message}"


def _run_solution(
    scenario: ScenarioSpec, env: PreparedEnvironment, sandbox: Sandbox, evidence: _Evidence
) -> None:
    """Run the solution, then replay it without its last step that changed the state.

    "State-changing" is what the run showed (the state differs after the step), not what a
    static reading of the tool guessed: exact for this scenario, whatever the tool's kind.
    """
    with sandbox.episode(env.source, env.class_name, scenario.initial_state) as episode:
        if not episode.loaded:
            evidence.load_error = f"initial state does not load: {episode.load_outcome.error}"
            return
        changed_at = []
        for index, step in enumerate(scenario.reference_solution):
            before = episode.state()
            evidence.step_results.append(episode.call(step.tool, step.arguments).result)
            if episode.state() != before:
                changed_at.append(index)
        evidence.final_state = episode.state()
        cut = changed_at[-1] if changed_at else None
        if cut is None:
            evidence.partial_note = "the solution has no state-changing step"
            return
        episode.load_state(scenario.initial_state)
        for index, step in enumerate(scenario.reference_solution):
            if index != cut:
                episode.call(step.tool, step.arguments)
        evidence.partial_state = episode.state()
        evidence.partial_note = f"without step {cut + 1} ({scenario.reference_solution[cut].tool})"


def _run_checks(scenario: ScenarioSpec, sandbox: Sandbox, evidence: _Evidence) -> None:
    """Run every check on (initial, final), (initial, initial) and (initial, partial), twice."""
    initial = scenario.initial_state
    pairs: list[Pair] = [(initial, evidence.final_state), (initial, initial)]
    if evidence.partial_state is not None:
        pairs.append((initial, evidence.partial_state))
    sources, refused = [], {}
    for index, check in enumerate(scenario.checks):
        violations = check_check_source(check.code)
        refused[index] = (
            f"check {index + 1} is refused by the policy: {violations[0]}" if violations else None
        )
        sources.append(
            "def check(initial_state, final_state):\n    return None\n"
            if violations
            else check.code
        )
    for _ in range(2):
        outcome = sandbox.run_checks(sources, pairs)
        rows = outcome.result.get("results") if outcome.ok else None
        if rows is None:
            failed = {
                "value": None,
                "error": f"{outcome.error_class}: {outcome.error}",
                "mutated": False,
            }
            rows = [[dict(failed) for _ in pairs] for _ in sources]
        for index, reason in refused.items():
            if reason:
                rows[index] = [{"value": None, "error": reason, "mutated": False} for _ in pairs]
        evidence.runs.append(rows)


def _judge(gate: GateName, scenario: ScenarioSpec, ev: _Evidence) -> GateResult:
    if gate == "loads":
        return GateResult(gate=gate, passed=ev.load_error is None, reason=ev.load_error or "")
    if ev.final_state is None:
        return GateResult(
            gate=gate, passed=False, reason="not evaluated: the initial state does not load"
        )
    judge = {
        "solution_runs": _judge_solution,
        "checks_pass": _judge_checks_pass,
        "not_trivial": _judge_not_trivial,
        "partial_fails": _judge_partial,
        "deterministic": _judge_deterministic,
    }[gate]
    passed, reason = judge(scenario, ev)
    return GateResult(gate=gate, passed=passed, reason=reason)


def _judge_solution(scenario: ScenarioSpec, ev: _Evidence) -> tuple[bool, str]:
    for index, result in enumerate(ev.step_results):
        if result.get("success") is not True:
            tool = scenario.reference_solution[index].tool
            return False, f"step {index + 1} ({tool}) failed: {result.get('error', result)}"
    return True, f"{len(ev.step_results)} steps succeeded"


def _column(ev: _Evidence, pair: int) -> list[dict[str, Any]]:
    return [row[pair] for row in ev.runs[0]]


def _judge_checks_pass(scenario: ScenarioSpec, ev: _Evidence) -> tuple[bool, str]:
    if not scenario.checks:
        return False, "the scenario has no checks"
    for index, cell in enumerate(_column(ev, 0)):
        if cell["value"] is not True:
            why = cell["error"] or "returned False"
            return (
                False,
                f"check {index + 1} ({scenario.checks[index].description}) "
                f"on the final state: {why}",
            )
    return True, f"all {len(scenario.checks)} checks hold on the final state"


def _judge_not_trivial(scenario: ScenarioSpec, ev: _Evidence) -> tuple[bool, str]:
    failing = sum(cell["value"] is not True for cell in _column(ev, 1))
    if scenario.checks and failing == 0:
        return False, "every check already holds on the initial state"
    return True, f"{failing} of {len(scenario.checks)} checks fail on the initial state"


def _judge_partial(scenario: ScenarioSpec, ev: _Evidence) -> tuple[bool, str]:
    if ev.partial_state is None:
        return False, ev.partial_note
    failing = sum(cell["value"] is not True for cell in _column(ev, 2))
    if failing == 0:
        return False, f"every check still holds {ev.partial_note}"
    return True, f"{failing} checks fail {ev.partial_note}"


def _judge_deterministic(scenario: ScenarioSpec, ev: _Evidence) -> tuple[bool, str]:
    first, second = ev.runs
    for index, (row_a, row_b) in enumerate(zip(first, second, strict=True)):
        if any(cell["mutated"] for cell in row_a + row_b):
            return False, f"check {index + 1} changes the states it is given"
        if [c["value"] for c in row_a] != [c["value"] for c in row_b]:
            return False, f"check {index + 1} gives different results on the same states"
    return True, "checks gave the same results twice and left the states unchanged"
