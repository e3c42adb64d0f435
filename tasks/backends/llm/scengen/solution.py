"""The model's steps, run as written: each step's ``"$N.path"`` arguments become what step N
returned, so the reference solution is grounded in real tool outputs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envmill.schemas.scenario import SolutionStep
from envmill.schemas.scengen import PlannedStep
from envmill.tasks.core.references import resolve_references
from envmill.tasks.envs import AdmittedEnvironment
from envmill.tasks.sandbox import Sandbox


@dataclass
class RanSolution:
    """The concrete steps, what each returned, and the state they ended in; ``problem`` says
    which step could not run and why (then the rest did not run)."""

    steps: list[SolutionStep] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    final_state: dict[str, Any] | None = None
    problem: str | None = None


def run_steps(
    env: AdmittedEnvironment,
    state: dict[str, Any],
    planned: list[PlannedStep],
    sandbox: Sandbox,
    must_change: bool = True,
) -> RanSolution:
    """The steps run in order from ``state``; ``must_change``: a task that changes nothing is a
    problem (a question or a refusal changes nothing by design)."""
    ran = RanSolution()
    tools = {tool.function.name for tool in env.tools}
    with sandbox.episode(env.source, env.class_name, state) as episode:
        for number, step in enumerate(planned, 1):
            if step.tool not in tools:
                ran.problem = f"step {number}: there is no tool {step.tool!r}"
                return ran
            try:
                arguments = resolve(step.arguments, ran.results)
            except LookupError as exc:
                ran.problem = f"step {number}: {exc}"
                return ran
            outcome = episode.call(step.tool, arguments)
            result = outcome.result if outcome.ok else {"success": False, "error": outcome.error}
            ran.steps.append(SolutionStep(tool=step.tool, arguments=arguments))
            ran.results.append(result)
            if result.get("success") is not True:
                ran.problem = f"step {number}, {step.tool}({arguments}) did not succeed: {result}"
                return ran
        ran.final_state = episode.state()
    if must_change and ran.final_state == state:
        ran.problem = "the steps changed nothing: the task must change the state"
    return ran


def resolve(value: Any, results: list[dict[str, Any]]) -> Any:
    """``value`` with each ``"$N.path"`` string replaced by step N's result at ``path``."""
    return resolve_references(value, dict(enumerate(results, start=1)), "step")


def generated_value_named(text: str, initial: dict[str, Any], final: dict[str, Any]) -> str | None:
    """The id of a record the steps created, when ``text`` (the task, the user's facts) names
    it: the user cannot know it before the agent acts, so the goal must describe it instead."""
    for attr, records in final.items():
        before = initial.get(attr)
        if not isinstance(records, dict) or not isinstance(before, dict):
            continue
        for key in sorted(set(records) - set(before)):
            if len(key) >= 3 and re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", text):
                return (
                    f"the task names {key!r}, the id the system gives the new {attr} record; "
                    "the user cannot know it in advance, so describe the record instead"
                )
    return None
