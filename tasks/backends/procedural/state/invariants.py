"""Check a state against its domain's invariants (the ``invariants:`` of each entity in the spec,
plus the implied one that every ref names an existing record).

A plain function of (spec, state), no sandbox: :func:`check_invariants` returns one readable line
per violation (``"loan LN-00003: ..."``), empty when the state is consistent. An entity the state
does not hold (an optional one the compiled environment dropped) is skipped, with every invariant
that would read it. A domain with roles also needs a declared ``acting_role`` whose ``acting_id``
names a record of the role's entity (None for a role without one).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from envmill.tasks.backends.procedural.spec.check_roles import ACTING_ID_ATTR, ACTING_ROLE_ATTR
from envmill.tasks.backends.procedural.spec.domain import DomainSpec, EntitySpec
from envmill.tasks.backends.procedural.spec.paths import TIMES, resolve_record_path

Record = dict[str, Any]
MISSING: Any = object()  # a value the state cannot give (a dropped entity, a dangling ref)
NOW = "now"
OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
OP_WORDS = {"<": "less than", "<=": "at most", ">": "more than", ">=": "at least"}
OP_WORDS |= {"==": "equal to", "!=": "different from"}
TIME_WORDS = {"<": "before", "<=": "at or before", ">": "after", ">=": "at or after"}


@dataclass(frozen=True)
class StateView:
    """A state read through its spec: records by entity name, and current_time."""

    spec: DomainSpec
    state: dict[str, Any]

    def rows(self, entity: str) -> dict[str, Record] | None:
        spec = self.spec.entities.get(entity)
        rows = self.state.get(spec.plural) if spec is not None else None
        return rows if isinstance(rows, dict) else None


def check_invariants(spec: DomainSpec, state: dict[str, Any]) -> list[str]:
    """Every violation of ``spec``'s invariants in ``state``, one readable line each.

    Args:
        spec: the domain spec (``compiled.spec`` for a compiled environment).
        state: a state of an environment compiled from it (DESIGN §3.1).
    """
    view = StateView(spec, state)
    problems: list[str] = []
    for entity in spec.entities.values():
        for record_id, record in (view.rows(entity.name) or {}).items():
            found = ref_violations(view, entity, record)
            for invariant in entity.invariants:
                message = KIND_VIOLATIONS[invariant.kind](view, entity, record, invariant)
                if message:
                    found.append(f"{message} ({invariant.rule})" if invariant.rule else message)
            problems += [f"{entity.name} {record_id}: {message}" for message in found]
    return problems + acting_violations(view)


def acting_violations(view: StateView) -> list[str]:
    """The acting identity names a declared role and, for a role with an entity, its record."""
    if not view.spec.roles or ACTING_ROLE_ATTR not in view.state:
        return []
    role_name, acting_id = view.state[ACTING_ROLE_ATTR], view.state.get(ACTING_ID_ATTR)
    role = view.spec.roles.get(role_name) if isinstance(role_name, str) else None
    if role is None:
        return [f"{ACTING_ROLE_ATTR} {role_name!r} is not a declared role"]
    if role.entity is None:
        return [] if acting_id is None else [f"{ACTING_ID_ATTR} {acting_id!r} for role {role_name}"]
    rows = view.rows(role.entity)
    if rows is not None and acting_id not in rows:
        return [f"{ACTING_ID_ATTR} {acting_id!r} names no {role.entity} (role {role_name})"]
    return []


def read_path(view: StateView, entity: EntitySpec, record: Record, path: str) -> Any:
    """The value at ``ref*.field`` from ``record``: None past an empty ref, MISSING when the
    state cannot say."""
    parts = path.split(".")
    for hop in parts[:-1]:
        value = record.get(hop, MISSING)
        if value is None or value is MISSING:
            return value
        target = entity.fields[hop].entity or ""
        record = (view.rows(target) or {}).get(value, MISSING)
        if record is MISSING:
            return MISSING
        entity = view.spec.entities[target]
    return record.get(parts[-1], MISSING)


def matches(view: StateView, entity: EntitySpec, record: Record, condition: dict) -> bool | None:
    """Whether ``record`` meets ``{path: [values]}``; None when a path cannot be read."""
    for path, values in condition.items():
        value = read_path(view, entity, record, path)
        if value is MISSING:
            return None
        if value not in values:
            return False
    return True


def describe_condition(view: StateView, entity: EntitySpec, record: Record, condition: dict) -> str:
    """``status is 'returned'``: the values that made ``condition`` apply."""
    parts = [f"{path} is {read_path(view, entity, record, path)!r}" for path in condition]
    return " and ".join(parts)


def ref_violations(view: StateView, entity: EntitySpec, record: Record) -> list[str]:
    """Implied for every ref field: a value names an existing record of the entity it refers to."""
    found = []
    for name, field in entity.fields.items():
        value, rows = record.get(name), view.rows(field.entity or "")
        if field.type == "ref" and value is not None and rows is not None and value not in rows:
            found.append(f"{name} names {value!r}, which is not an existing {field.entity}")
    return found


def counted_sum(rows: dict[Any, Record], inv: Any, own: Any) -> float:
    """The sum of ``inv.sum_of`` over the records a count invariant counts, to the cent."""
    return round(
        sum(
            float(row.get(inv.sum_of) or 0)
            for row in rows.values()
            if row.get(inv.via) == own and all(row.get(k) in v for k, v in inv.where.items())
        ),
        2,
    )


def count_violation(view: StateView, entity: EntitySpec, record: Record, inv: Any) -> str | None:
    rows = view.rows(inv.entity)
    if rows is None or matches(view, entity, record, inv.when) is not True:
        return None
    own = record.get(entity.id_field)
    count = sum(
        1
        for row in rows.values()
        if row.get(inv.via) == own and all(row.get(k) in v for k, v in inv.where.items())
    )
    where = " with " + " and ".join(
        f"{name} {' or '.join(map(str, values))}" for name, values in inv.where.items()
    )
    counted = f"{count} {view.spec.entities[inv.entity].plural}{where if inv.where else ''}"
    if inv.exactly is not None and count != inv.exactly:
        return f"{counted} refer to it; expected exactly {inv.exactly}"
    if inv.at_least is not None and count < inv.at_least:
        return f"{counted} refer to it; expected at least {inv.at_least}"
    if inv.at_most is not None and count > inv.at_most:
        return f"{counted} refer to it; expected at most {inv.at_most}"
    if inv.field is None:
        return None
    actual = record.get(inv.field)
    if inv.sum_of is not None:
        total = counted_sum(rows, inv, own)
        if isinstance(actual, int | float) and round(actual - total, 2) == 0:
            return None
        return f"{inv.field} is {actual!r}, but the {inv.sum_of} of {counted} adds up to {total}"
    if inv.total is None:
        return None if actual == count else f"{inv.field} is {actual!r}, but {counted} refer to it"
    total = record.get(inv.total)
    if isinstance(total, int | float) and actual == total - count:
        return None
    expected = total - count if isinstance(total, int | float) else "unknown"
    return f"{inv.field} is {actual!r}, but {inv.total} ({total!r}) minus {counted} is {expected}"


def operand(view: StateView, entity: EntitySpec, record: Record, value: Any) -> tuple[Any, str]:
    """An operand's value and its type (``number``, ``date``, ``datetime``)."""
    if isinstance(value, int | float):
        return value, "number"
    if value == NOW:
        return view.state.get("current_time", MISSING), "datetime"
    kind = resolve_record_path(view.spec, entity, value).spec.type
    return read_path(view, entity, record, value), kind if kind in TIMES else "number"


def as_comparable(value: Any, kind: str, by_day: bool) -> Any:
    """A number, or a time parsed from ISO text (its date when comparing by day); MISSING when
    the text is not a time."""
    if kind == "number":
        return value if isinstance(value, int | float) else MISSING
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else MISSING
    except ValueError:
        return MISSING
    return moment.date() if by_day and isinstance(moment, datetime) else moment


def shifted(value: Any, kind: str, hours: float | None) -> Any:
    """A datetime operand moved by ``hours`` (as ISO text); anything else as it is."""
    if not hours or kind != "datetime" or not isinstance(value, str):
        return value
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    return (moment + timedelta(hours=hours)).isoformat(timespec="seconds")


def compare_violation(view: StateView, entity: EntitySpec, record: Record, inv: Any) -> str | None:
    if matches(view, entity, record, inv.when) is not True:
        return None
    (left, left_kind), (right, right_kind) = (
        operand(view, entity, record, inv.left),
        operand(view, entity, record, inv.right),
    )
    if any(value is None or value is MISSING for value in (left, right)):
        return None
    by_day = "date" in (left_kind, right_kind)
    right = shifted(right, right_kind, inv.hours)
    a, b = as_comparable(left, left_kind, by_day), as_comparable(right, right_kind, by_day)
    if a is not MISSING and b is not MISSING and OPS[inv.op](a, b):
        return None  # the rule holds: no words to make (most records keep most rules)
    words = OP_WORDS if left_kind == "number" else OP_WORDS | TIME_WORDS
    right_name = f"{inv.right} + {inv.hours:g} hours" if inv.hours else inv.right
    shown_left, shown_right = shown_operand(inv.left, left), shown_operand(right_name, right)
    shown = f"{shown_left} must be {words[inv.op]} {shown_right}"
    if a is MISSING or b is MISSING:
        return f"{shown}, but one of them is not a {left_kind}"
    reason = describe_condition(view, entity, record, inv.when)
    return f"{shown} when {reason}" if reason else shown


def shown_operand(name: Any, value: Any) -> str:
    """``due_on ('2025-03-01')``, ``now ('2025-03-02T09:00:00')`` or a bare number."""
    return str(name) if isinstance(name, int | float) else f"{name} ({value!r})"


def implies_violation(view: StateView, entity: EntitySpec, record: Record, inv: Any) -> str | None:
    if matches(view, entity, record, inv.when) is not True:
        return None
    for path, values in inv.then.items():
        value = read_path(view, entity, record, path)
        if value is not MISSING and value not in values:
            allowed = " or ".join("empty" if v is None else repr(v) for v in values)
            reason = describe_condition(view, entity, record, inv.when)
            return f"{path} is {value!r}, expected {allowed}" + (f" as {reason}" if reason else "")
    return None


def filled_violation(view: StateView, entity: EntitySpec, record: Record, inv: Any) -> str | None:
    if matches(view, entity, record, inv.when) is not True or record.get(inv.field) is not None:
        return None
    reason = describe_condition(view, entity, record, inv.when)
    return f"{inv.field} is empty" + (f" although {reason}" if reason else "")


def order_violation(view: StateView, entity: EntitySpec, record: Record, inv: Any) -> str | None:
    """A sibling (same parent through ``via``) earlier in ``by``'s order but later in time."""
    if matches(view, entity, record, inv.when) is not True:
        return None
    rank, moment = ordered_key(entity, record, inv)
    if rank is None or moment is None:
        return None
    for other in siblings(view, entity, record, inv.via):
        other_rank, other_moment = ordered_key(entity, other, inv)
        if other_rank is None or other_moment is None:
            continue
        shown = f"{inv.by} {other[inv.by]!r} at {other[inv.time]!r}"
        if other_rank < rank and other_moment > moment:
            return f"{inv.time} ({record[inv.time]!r}) is before the {shown}"
        earlier = str(other[entity.id_field]) < str(record[entity.id_field])
        if inv.distinct and other_rank == rank and earlier:
            return f"{inv.by} {record[inv.by]!r} happened already: the {shown}"
    return None


def siblings(view: StateView, entity: EntitySpec, record: Record, via: str) -> list[Record]:
    """The other records of ``entity`` that name the same parent through ``via``."""
    own = record.get(entity.id_field)
    return [
        row
        for row in (view.rows(entity.name) or {}).values()
        if row.get(via) == record.get(via) and row.get(entity.id_field) != own
    ]


def ordered_key(entity: EntitySpec, record: Record, inv: Any) -> tuple[int | None, Any]:
    """(position of the record's ``by`` value among the enum's, its time), None when unknown."""
    values = entity.fields[inv.by].values
    rank = values.index(record[inv.by]) if record.get(inv.by) in values else None
    moment = as_comparable(record.get(inv.time), "datetime", False)
    return rank, None if moment is MISSING else moment


KIND_VIOLATIONS: dict[str, Callable[[StateView, EntitySpec, Record, Any], str | None]] = {
    "count": count_violation,
    "compare": compare_violation,
    "implies": implies_violation,
    "filled": filled_violation,
    "order": order_violation,
}
