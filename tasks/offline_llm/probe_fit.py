"""The fake testing agent's probe state: what stood in the way of each tool that never
succeeded, changed on one record per tool, and the call that shows the tool now succeeds.

A careful tester reads the refusals: a role that may not use the tool (the state signs in a
member; the tools are the front desk's) becomes a role that acts for anyone; a record not in
the status the tool takes is given it; a time the tool compares with the clock is put where
the rule lets the tool act (now for a time that must have come, a week on for one still ahead,
a month on for a notice period); a number a rule bounds is put at the bound (no fines due).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from envmill.tasks.backends.procedural.spec.domain import OperationSpec
from envmill.tasks.offline_llm.probe_plan import (
    Planner,
    Unit,
    laid_out,
    operation_of,
    target_arg,
)
from envmill.tasks.offline_llm.probe_values import free_record, parse_time

_STEP = {"<": -1, ">": 1}  # from a strict bound to the nearest whole number it allows
# where a rule on a target's time lets the tool act, as an offset from now
_TIME_RULES = {
    "in_past": timedelta(0),
    "within_days": timedelta(0),
    "in_future": timedelta(days=7),
    "hours_before": timedelta(days=30),
}


def probe_state_answer(planner: Planner, names: list[str]) -> dict[str, Any]:
    """The probe state's changes and the calls on it, for the tools ``names``."""
    changes = role_change(planner, names)
    units = [unit for name in names if (unit := fitted(planner, name, changes)) is not None]
    return {"state": changes, "calls": laid_out(units)}


def role_change(planner: Planner, names: list[str]) -> dict[str, Any]:
    """Sign in a role that acts for anyone (staff), when the role signed in may not use a tool
    listed or may act only on its own records."""
    role, roles = planner.state.get("acting_role"), planner.module.compiled.spec.roles
    tools = [t for name in names if (t := planner.module.tool(name)) is not None]
    if role is None or all(role in t.roles and not t.owned for t in tools if t.roles):
        return {}
    anyone = [name for name, spec in roles.items() if spec.entity is None]
    best = max(anyone, key=lambda r: sum(r in t.roles for t in tools), default=None)
    return {"acting_role": best, "acting_id": None} if best and best != role else {}


def fitted(planner: Planner, name: str, changes: dict[str, Any]) -> Unit | None:
    """The changes (into ``changes``) that let tool ``name`` act, one record per id argument it
    needs in some state, and the call on those records."""
    manifest = planner.module.tool(name)
    operation = operation_of(planner.module, manifest) if manifest else None
    if manifest is None or operation is None:
        return None
    target = target_arg(manifest)
    fixed = {}
    for arg in manifest.args:
        records = planner.state.get(arg.state_attr or "", {})
        if arg.source != "entity_id" or not records:
            continue
        key = free_record(records, {}, planner.claimed) or next(iter(records))
        patch = {field: values[0] for field, values in arg.prefer.items() if values}
        patch |= numbers_for("target" if arg is target else arg.name, operation)
        if arg is target:
            patch |= times_for(records[key], operation, planner.state)
        if not patch and arg is not target:
            continue
        changes.setdefault(arg.state_attr or "", {}).setdefault(key, {}).update(patch)
        planner.claimed.add(key)
        fixed[arg.name] = key
    arguments = planner.arguments_for(manifest, True, fixed)
    return Unit([planner.call_of(manifest, "positive", arguments)])


def numbers_for(path: str, operation: OperationSpec) -> dict[str, Any]:
    """The fields of the record at ``path`` (``target``, or an id argument) that a comparison
    with a number bounds, each set to the nearest number it allows (fines due at most 0: 0)."""
    numbers = {}
    for rule in operation.preconditions:
        left, right = getattr(rule, "left", None), getattr(rule, "right", None)
        if rule.kind != "compare" or not isinstance(left, str) or isinstance(right, str):
            continue
        owner, _, field = left.partition(".")
        if owner == path and field and "." not in field and right is not None:
            numbers[field] = right + _STEP.get(rule.op, 0)
    return numbers


def times_for(
    record: dict[str, Any], operation: OperationSpec, state: dict[str, Any]
) -> dict[str, Any]:
    """The record's times the operation's rules compare with the clock, each put where the rule
    lets the tool act (a date field to its day)."""
    now = parse_time(state.get("current_time"))
    if now is None:
        return {}
    times = {}
    for rule in operation.preconditions:
        where = getattr(rule, "value", None) or getattr(rule, "path", "")
        field = where.removeprefix("target.") if isinstance(where, str) else ""
        if rule.kind not in _TIME_RULES or not where.startswith("target.") or "." in field:
            continue
        value = record.get(field)
        if isinstance(value, str):
            when = (now + _TIME_RULES[rule.kind]).isoformat()
            times[field] = when[:10] if len(value) == 10 else when
    return times
