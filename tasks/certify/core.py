"""Certification (DESIGN §3.3): a scenario is kept only if executing it proves it sound.

Evidence first (``evidence.py``: the solution, its mutants and reorderings, the checks in two
process images), then every gate judged in a fixed order with a reason (``gates.py``), so a
rejection rate by gate is a SQL query.
"""

from __future__ import annotations

from typing import Any

from envmill.schemas.scenario import GATES, CertificationReport, ScenarioSpec
from envmill.schemas.settings import SandboxLimits
from envmill.tasks.certify.evidence import FINAL, Evidence, collect_evidence
from envmill.tasks.certify.gates import judge
from envmill.tasks.core.system_message import NO_BRIEFING, Briefing, system_prompt
from envmill.tasks.envs import AdmittedEnvironment, admit_environment
from envmill.tasks.judge import ReplyJudge, judge_reply
from envmill.tasks.sandbox import Sandbox
from envmill.tasks.sandbox.shared import process_sandbox


def certify(
    scenario: ScenarioSpec,
    source: str,
    sandbox: Sandbox | None = None,
    reply_judge: ReplyJudge = judge_reply,
    briefing: Briefing = NO_BRIEFING,
) -> CertificationReport:
    """Certify a scenario against an environment module's source (prepared here, in the sandbox);
    ``reply_judge`` judges its replies (envmill's rules unless an LLM judge is handed in).

    Raises:
        EnvironmentRejected: the module itself is refused (policy, structure or load).
    """
    box = sandbox or process_sandbox(SandboxLimits())
    env = admit_environment(source, box)
    return certify_scenario(scenario, env, box, reply_judge, briefing)


def certify_scenario(
    scenario: ScenarioSpec,
    env: AdmittedEnvironment,
    sandbox: Sandbox,
    reply_judge: ReplyJudge = judge_reply,
    briefing: Briefing = NO_BRIEFING,
) -> CertificationReport:
    """Every gate's verdict on ``scenario``; ``briefing`` is the environment's introduction and
    business rules, which the agent reads in its system message (what `grounded` counts as
    seen)."""
    system = system_prompt(briefing.introduction, list(briefing.rules), scenario.initial_state)
    evidence = collect_evidence(scenario, env, sandbox, reply_judge, system)
    return CertificationReport(
        scenario_id=scenario.scenario_id,
        gates=[judge(gate, scenario, evidence) for gate in GATES],
        final_state=evidence.final_state,
        step_results=[o.result for o in evidence.run.outcomes] if evidence.run else [],
        check_results=_reference_results(scenario, evidence),
        turn_states=_turn_states(scenario, evidence),
    )


def _reference_results(scenario: ScenarioSpec, evidence: Evidence) -> list[bool]:
    """Each check on the reference's final state, then the judge's verdict on its reply where
    the scenario expects one: what the reference trajectory's reward is made of."""
    if not evidence.cells:
        return []
    results = [cell.value is True for cell in evidence.column(FINAL)]
    verdict = evidence.verdict(scenario, FINAL, scenario.answer)
    held = evidence.results_verdict(scenario, evidence.obtained)
    return results + [v.passed for v in (verdict, held) if v is not None]


def _turn_states(scenario: ScenarioSpec, evidence: Evidence) -> list[dict[str, Any]]:
    """The state when each later user message was sent (none for a single-message one)."""
    if evidence.run is None or not scenario.turns:
        return []
    return [evidence.run.states[turn.first_step] for turn in scenario.turns]
