"""Trajectories in Chat Completions form (DESIGN §3.4).

For now the reference policy: a certified solution replayed as one tool call per assistant
message, with the tool results the certification run produced.
"""

from __future__ import annotations

import json
from typing import Any

from envmill.schemas.ids import canonical_json, content_id
from envmill.schemas.scenario import CertificationReport, ScenarioSpec
from envmill.schemas.trajectory import TrajectoryRecord

REFERENCE_POLICY = "reference"


def system_prompt(introduction: str, business_rules: list[str]) -> str:
    rules = "\n".join(f"- {rule}" for rule in business_rules)
    text = introduction.strip() or "You are an assistant that operates a system through its tools."
    return f"{text}\n\nBusiness rules:\n{rules}" if rules else text


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
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(introduction, business_rules or [])},
        {"role": "user", "content": scenario.task},
    ]
    for index, (step, result) in enumerate(
        zip(scenario.reference_solution, report.step_results, strict=True)
    ):
        call_id = f"call_{index + 1}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": step.tool,
                            "arguments": json.dumps(step.arguments, ensure_ascii=False),
                        },
                    }
                ],
            }
        )
        messages.append(
            {"role": "tool", "tool_call_id": call_id, "content": canonical_json(result)}
        )
    messages.append({"role": "assistant", "content": "Done: everything you asked for is complete."})
    reward = sum(report.check_results) / len(report.check_results) if report.check_results else 0.0
    return TrajectoryRecord(
        trajectory_id=content_id(
            {"scenario_id": report.scenario_id, "policy": REFERENCE_POLICY, "messages": messages}
        ),
        scenario_id=report.scenario_id,
        env_id=scenario.env_id,
        policy=REFERENCE_POLICY,
        messages=messages,
        check_results=report.check_results,
        reward=reward,
        steps=len(scenario.reference_solution),
        termination="finished",
    )
