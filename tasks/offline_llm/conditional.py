"""The fake model's conditional, made from a change: "if booking BK-2's status is still
confirmed, cancel it; otherwise just tell me what it is". The procedural generator seldom builds
a conditional of its own, and a model asked for one writes it round a change it could make.

The record the change acts on is read first, by a query tool that takes only its id, just before
the step that names it (so the id is as grounded as it was); the condition is that record's
status as the read shows it, which the reply states.
"""

from __future__ import annotations

from typing import Any

from envmill.schemas.answers import ExpectedAnswer
from envmill.schemas.scenario import ScenarioSpec, SolutionStep
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment, ToolManifest

STATUS = "status"


def as_conditional(spec: ScenarioSpec, compiled: CompiledEnvironment) -> ScenarioSpec | None:
    """``spec`` (a change) told as a conditional on its record's status, or None when no step
    names a record with a status that a one-argument query can read."""
    readers = {_read_arg(tool): tool for tool in compiled.tools if _read_arg(tool)}
    for index, step in enumerate(spec.reference_solution):
        for name, value in step.arguments.items():
            record = _record(spec.initial_state, value)
            reader = readers.get(name)
            if reader is None or record is None or not isinstance(record.get(STATUS), str):
                continue
            return _told(spec, index, SolutionStep(tool=reader.tool, arguments={name: value}))
    return None


def _read_arg(tool: ToolManifest) -> str | None:
    """The id argument of a query that takes nothing else (a "get one record" tool)."""
    if tool.kind != "query" or len(tool.args) != 1 or tool.args[0].source != "entity_id":
        return None
    return tool.args[0].name


def _record(state: dict[str, Any], key: Any) -> dict[str, Any] | None:
    for records in state.values():
        if isinstance(records, dict) and isinstance(records.get(key), dict):
            return records[key]
    return None


def _told(spec: ScenarioSpec, index: int, read: SolutionStep) -> ScenarioSpec:
    (value,) = read.arguments.values()
    status = _record(spec.initial_state, value)[STATUS]  # type: ignore[index]
    steps = [*spec.reference_solution[:index], read, *spec.reference_solution[index:]]
    condition = f"Please check {value} first: if its status is still {status.replace('_', ' ')}"
    request = spec.task[:1].lower() + spec.task[1:]
    return spec.model_copy(
        update={
            "task": f"{condition}, go ahead: {request} Otherwise just tell me its status.",
            "reference_solution": steps,
            "expected_answer": ExpectedAnswer(type="enum", value=status),
            "reference_answer": f"{value} was still {status.replace('_', ' ')}, so I went ahead.",
            "kind": "conditional",
        }
    )
