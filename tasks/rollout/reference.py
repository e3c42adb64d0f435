"""Reference trajectories: a certified solution as a Chat Completions conversation (DESIGN §3.4).

One tool call per assistant message, with the tool results the certification run produced; in
conversational mode the user reveals each fact before the agent uses it (``facts.py``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from envmill.schemas.ids import canonical_json, content_id
from envmill.schemas.scenario import CertificationReport, ScenarioSpec, SolutionStep
from envmill.schemas.trajectory import TrajectoryRecord
from envmill.tasks.certify.reward import score_checks
from envmill.tasks.core.facts import FactLedger, ask_and_answer, flatten_facts, opening_message
from envmill.tasks.core.system_message import system_prompt
from envmill.tasks.rollout.closing import closing_message

REFERENCE_POLICY = "reference"


def tool_call_messages(
    index: int, step: SolutionStep, result: dict[str, Any]
) -> list[dict[str, Any]]:
    """One assistant message with exactly one tool call, and the tool's canonical result."""
    call_id = f"call_{index + 1}"
    call = {
        "id": call_id,
        "type": "function",
        "function": {
            "name": step.tool,
            "arguments": json.dumps(step.arguments, ensure_ascii=False),
        },
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": canonical_json(result)},
    ]


def reference_messages(scenario: ScenarioSpec, report: CertificationReport) -> list[dict]:
    """User opening, then per step (in conversational mode, the questions for the facts it
    needs first) the call and its result, then the final answer: the scenario's reference
    answer when it expects a reply, else what the solution changed (``closing.py``)."""
    opening = opening_message(scenario)
    messages: list[dict[str, Any]] = [{"role": "user", "content": opening}]
    conversational = scenario.mode == "conversational"
    ledger = FactLedger(flatten_facts(scenario.user_facts) if conversational else [])
    ledger.hear(opening)
    turn = int(report.scenario_id[:8], 16) if re.match(r"^[0-9a-f]{8}", report.scenario_id) else 0
    steps = zip(scenario.reference_solution, report.step_results, strict=True)
    for index, (step, result) in enumerate(steps):
        needed = ledger.needed_for(step)
        if needed:
            question, answer = ask_and_answer(needed, turn)
            turn += 1
            ledger.hear(answer, [fact for _, fact in needed])
            messages += [
                {"role": "assistant", "content": question},
                {"role": "user", "content": answer},
            ]
        messages += tool_call_messages(index, step, result)
    closing = scenario.reference_answer or closing_message(
        scenario.initial_state, report.final_state or scenario.initial_state, report.scenario_id
    )
    messages.append({"role": "assistant", "content": closing})
    return messages


def reference_trajectory(
    scenario: ScenarioSpec,
    report: CertificationReport,
    *,
    introduction: str = "",
    business_rules: list[str] | None = None,
) -> TrajectoryRecord:
    """The certified solution as a conversation; raises ValueError for an uncertified scenario."""
    if report.status != "certified":
        raise ValueError(f"scenario {report.scenario_id} is not certified ({report.rejected_gate})")
    system = system_prompt(introduction, business_rules or [], scenario.initial_state)
    messages = [{"role": "system", "content": system}, *reference_messages(scenario, report)]
    score = score_checks(report.check_results)
    return TrajectoryRecord(
        trajectory_id=content_id(
            {"scenario_id": report.scenario_id, "policy": REFERENCE_POLICY, "messages": messages}
        ),
        scenario_id=report.scenario_id,
        env_id=scenario.env_id,
        policy=REFERENCE_POLICY,
        messages=messages,
        check_results=report.check_results,
        reward=score.reward,
        success=score.success,
        steps=len(scenario.reference_solution),
        termination="finished",
    )
