"""Wrong solutions built from the reference one, and reorderings of it (DESIGN §3.3).

Mutants are generic: they use only the reference run, the tool schemas, the tool kinds and the
states the run passed through, so they work for any backend and any hand-written environment.
Each plan starts from a state the reference run already reached (the prefix before the mutation
is the reference's own), which keeps a mutant to a few calls.

- ``extra``: after the reference solution, one more state-changing call on records the task does
  not touch (another patient's appointment, the customer's other account);
- ``drop``: the solution without one of its state-changing steps;
- ``swap``: one entity argument of a state-changing step replaced by another id of its kind;
- ``alter``: one value argument of a state-changing step (an amount, a time, a flag, a name)
  changed: a little either way, to an edge of its type (a zero, every digit of a code's last
  group zeroed), or to the value the same field has in another record, so checks must pin the
  values the task fixes (``phone == A or phone == B`` loses), not only that a change happened;
- ``reorder``: two state-changing steps swapped (for the reorder gate, not a wrong solution).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Literal

from envmill.schemas.environment import ToolSchema
from envmill.schemas.scenario import SolutionStep
from envmill.tasks.core.statekit import diff_states
from envmill.tasks.sandbox import ToolOutcome

MAX_SWAPS = 6
MAX_EXTRAS = 12
MAX_REORDERS = 6
MAX_ALTERS = 24
MAX_FIELD_VALUES = 2  # values of the same field in other records, per argument
PlanKind = Literal["extra", "drop", "swap", "alter", "reorder"]
_DIGIT = re.compile(r"\d(?=\D*$)")  # the last digit of a text
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?![\d])")
_LAST_DIGITS = re.compile(r"\d+(?=\D*$)")  # the last group of digits of a text
_FIRST_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class ReferenceRun:
    """The reference solution as it ran: ``states[i]`` is the state before step i (and
    ``states[-1]`` the final state); ``outcomes[i]`` what step i returned; ``changed_at`` the
    steps after which the state differed."""

    solution: list[SolutionStep]
    states: list[dict[str, Any]]
    outcomes: list[ToolOutcome]
    changed_at: list[int]
    cut_short: str | None = None  # why the later steps did not run (a timeout, the budget)


@dataclass(frozen=True)
class Plan:
    """Run ``steps`` from ``run.states[start]``; ``label`` says what was changed, for reasons."""

    kind: PlanKind
    label: str
    start: int
    steps: list[SolutionStep]


def plan_mutants(
    run: ReferenceRun, tools: list[ToolSchema], kinds: Mapping[str, str]
) -> list[Plan]:
    """Every wrong solution the mutation gate tries: drops, swaps, alters, then extras."""
    entities = _Entities(run, tools)
    return [
        *_drops(run),
        *_swaps(run, entities),
        *_alters(run),
        *_extras(run, tools, kinds, entities),
    ]


def plan_reorders(run: ReferenceRun, turn_of: Callable[[int], int] = lambda _: 0) -> list[Plan]:
    """Pairs of state-changing steps swapped, nearest pairs first; only steps of one user
    message (``turn_of``: a step's message), since a later message's work cannot come before
    the user asked for it."""
    changed = run.changed_at
    pairs = sorted(
        (
            (a, b)
            for i, a in enumerate(changed)
            for b in changed[i + 1 :]
            if turn_of(a) == turn_of(b)
        ),
        key=lambda pair: (pair[1] - pair[0], pair),
    )
    plans = []
    for first, second in pairs[:MAX_REORDERS]:
        steps = list(run.solution[first:])
        steps[0], steps[second - first] = steps[second - first], steps[0]
        label = f"steps {first + 1} and {second + 1} swapped"
        plans.append(Plan("reorder", label, first, steps))
    return plans


def _drops(run: ReferenceRun) -> list[Plan]:
    return [plan_drop(run, i) for i in run.changed_at]


def plan_drop(run: ReferenceRun, index: int) -> Plan:
    """The solution without step ``index``."""
    label = f"without step {index + 1} ({run.solution[index].tool})"
    return Plan("drop", label, index, run.solution[index + 1 :])


def _swaps(run: ReferenceRun, entities: _Entities) -> list[Plan]:
    plans = []
    for index in run.changed_at:
        step = run.solution[index]
        for name, value in step.arguments.items():
            kind = _holder(value, run.states[index])
            other = entities.replacement(kind, value, run.states[index]) if kind else None
            if other is None:
                continue
            swapped = SolutionStep(tool=step.tool, arguments={**step.arguments, name: other})
            label = f"step {index + 1} ({step.tool}) with {name}={other!r} instead of {value!r}"
            plans.append(Plan("swap", label, index, [swapped, *run.solution[index + 1 :]]))
    return plans[:MAX_SWAPS]


def _alters(run: ReferenceRun) -> list[Plan]:
    plans = []
    for index in run.changed_at:
        step = run.solution[index]
        for name, value in step.arguments.items():
            if _holder(value, run.states[index]) is not None:
                continue  # an entity argument: swaps cover it
            others = _alterations(value) + _same_field(name, value, run.states[index])
            for other in _distinct(others):
                altered = SolutionStep(tool=step.tool, arguments={**step.arguments, name: other})
                label = f"step {index + 1} ({step.tool}) with {name}={other!r} instead of {value!r}"
                plans.append(Plan("alter", label, index, [altered, *run.solution[index + 1 :]]))
    return plans[:MAX_ALTERS]


def _alterations(value: Any) -> list[Any]:
    """Values near ``value`` a careless agent might pass, either way where there are two ways:
    a flag flipped, a number one off, a date or time a day off, a text's last digit changed (a
    phone number, a code), a word added to other text, one leaf of a structure altered."""
    if type(value) is bool:
        return [not value]
    if type(value) in (int, float):
        return [value + 1, value - 1, *([0] if value else [])]
    if isinstance(value, str) and _DATE.match(value):
        return [shifted for days in (1, -1) if (shifted := _shift_days(value, days))]
    group = _LAST_DIGITS.search(value) if isinstance(value, str) else None
    if isinstance(value, str) and (digit := _DIGIT.search(value)) and group is not None:
        number = int(digit.group())
        changed = str(number - 1 if number else 1)
        one_off = value[: digit.start()] + changed + value[digit.end() :]
        zeroed = value[: group.start()] + "0" * len(group.group()) + value[group.end() :]
        first = _FIRST_DIGIT.search(value)  # "+9 555 0199": a check of the last digits only
        head = str((int(first.group()) + 1) % 10) if first else ""
        led = value[: first.start()] + head + value[first.end() :] if first else value
        return [one_off, *(v for v in dict.fromkeys([zeroed, led]) if v not in (value, one_off))]
    if isinstance(value, str):
        return [f"{value} (other)"]
    if isinstance(value, dict):
        for key in sorted(value):
            if found := _alterations(value[key]):
                return [{**value, key: found[0]}]
    if isinstance(value, list) and value and (found := _alterations(value[0])):
        return [[found[0], *value[1:]]]
    return []


def _same_field(name: str, value: Any, state: dict[str, Any]) -> list[Any]:
    """Values the field named like the argument has in other records of the state: the
    answer a careless agent copies from the wrong row."""
    if isinstance(value, dict | list) or type(value) is bool:
        return []
    field = name.removeprefix("new_")
    found: list[Any] = []
    for records in _collections(state).values():
        for record in records.values():
            other = record.get(field) if isinstance(record, dict) else None
            if type(other) is type(value) and other != value and other not in found:
                found.append(other)
    return found[:MAX_FIELD_VALUES]


def _distinct(values: list[Any]) -> list[Any]:
    """Each value once, in order (``1`` and ``1.0`` and ``True`` kept apart)."""
    seen: dict[tuple[str, str], Any] = {}
    for value in values:
        seen.setdefault((type(value).__name__, repr(value)), value)
    return list(seen.values())


def _shift_days(text: str, days: int) -> str | None:
    try:
        day = date.fromisoformat(text[:10]) + timedelta(days=days)
    except (ValueError, OverflowError):
        return None
    return day.isoformat() + text[10:]


def _extras(
    run: ReferenceRun, tools: list[ToolSchema], kinds: Mapping[str, str], entities: _Entities
) -> list[Plan]:
    plans = []
    used = [step.tool for step in run.solution]
    changers = sorted(
        (t for t in tools if kinds.get(t.function.name) == "state_change"),
        key=lambda t: (t.function.name not in used, t.function.name),
    )
    for tool in changers:
        for choice in range(2 if tool.function.name in used else 1):
            arguments = _extra_arguments(tool, run, entities, choice)
            if arguments is not None:
                label = f"an extra call {_call_text(tool.function.name, arguments)}"
                step = SolutionStep(tool=tool.function.name, arguments=arguments)
                plans.append(Plan("extra", label, len(run.solution), [step]))
    return plans[:MAX_EXTRAS]


def _extra_arguments(
    tool: ToolSchema, run: ReferenceRun, entities: _Entities, choice: int
) -> dict[str, Any] | None:
    """Arguments naming records the task does not touch; None when the schema cannot be met."""
    parameters = tool.function.parameters
    required = set(parameters.get("required", []))
    same_tool = next((s.arguments for s in run.solution if s.tool == tool.function.name), {})
    arguments: dict[str, Any] = {}
    record: dict[str, Any] = {}
    for name in parameters.get("properties", {}):
        kind = entities.kind_for_name(name)
        if kind is not None:
            key = entities.untouched(kind, run.states[-1], choice)
            if key is None:
                return None
            arguments[name] = key
            record = run.states[-1][kind][key]
    for name in parameters.get("properties", {}):
        if name in arguments:
            continue
        value = _fill(name, same_tool, run, record)
        if value is not None:
            arguments[name] = value
        elif name in required:
            return None
    return arguments if any(entities.kind_for_name(n) for n in arguments) or same_tool else None


def _fill(name: str, same_tool: dict[str, Any], run: ReferenceRun, record: dict[str, Any]):
    """A value for a non-entity parameter: the reference's own, else the record's field."""
    if name in same_tool:
        return same_tool[name]
    for step in run.solution:
        if name in step.arguments:
            return step.arguments[name]
    return record.get(name)


def _call_text(tool: str, arguments: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in list(arguments.items())[:3])
    return f"{tool}({shown})"


class _Entities:
    """Which collections of the state hold records, and which parameters name them."""

    def __init__(self, run: ReferenceRun, tools: list[ToolSchema]) -> None:
        self.collections = _collections(run.states[0]) | _collections(run.states[-1])
        self.by_name: dict[str, str] = {}
        for index, step in enumerate(run.solution):
            for name, value in step.arguments.items():
                kind = _holder(value, run.states[index]) or _holder(value, run.states[-1])
                if kind is not None:
                    self.by_name.setdefault(name, kind)
        for tool in tools:
            for name in tool.function.parameters.get("properties", {}):
                if name not in self.by_name and (kind := self._kind_by_name(name)):
                    self.by_name[name] = kind
        self.touched = _touched(run, self.collections)

    def kind_for_name(self, name: str) -> str | None:
        return self.by_name.get(name)

    def replacement(self, kind: str, value: Any, state: dict[str, Any]) -> str | None:
        keys = [k for k in sorted(state.get(kind, {})) if k != value]
        untouched = [k for k in keys if (kind, k) not in self.touched]
        return (untouched or keys or [None])[0]

    def untouched(self, kind: str, state: dict[str, Any], choice: int) -> str | None:
        keys = [k for k in sorted(state.get(kind, {})) if (kind, k) not in self.touched]
        return keys[choice] if choice < len(keys) else None

    def _kind_by_name(self, name: str) -> str | None:
        for kind, records in sorted(self.collections.items()):
            stems = {kind, kind.rstrip("s"), kind[:-3] + "y" if kind.endswith("ies") else kind}
            if name in {f"{stem}_id" for stem in stems}:
                return kind
            key, first = next(iter(records.items()))
            if name.endswith("id") and first.get(name) == key:
                return kind
        return None


def _collections(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Top-level attributes that map ids to records (dicts)."""
    return {
        name: value
        for name, value in state.items()
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values())
    }


def _holder(value: Any, state: dict[str, Any]) -> str | None:
    """The collection whose records include the key ``value``, if exactly one does."""
    if not isinstance(value, str):
        return None
    holders = [name for name, records in _collections(state).items() if value in records]
    return holders[0] if len(holders) == 1 else None


def _touched(run: ReferenceRun, collections: dict[str, Any]) -> set[tuple[str, str]]:
    """Records the task names in an argument or changes: extras must leave them alone."""
    touched = set()
    for step in run.solution:
        for value in step.arguments.values():
            for kind, records in collections.items():
                if isinstance(value, str) and value in records:
                    touched.add((kind, value))
    for change in diff_states(run.states[0], run.states[-1]):
        path = change["path"]
        if len(path) >= 2 and path[0] in collections:
            touched.add((path[0], path[1]))
    return touched
