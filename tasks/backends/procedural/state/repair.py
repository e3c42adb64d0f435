"""Bring a freshly filled state inside its domain's invariants (``invariants.py``).

Records are drawn first; then, in rounds until nothing changes, each record that breaks an
invariant is mended, parents before children:
- ``count``: the field is derived from the records it mirrors (``total`` rises if it must);
- ``compare``: the left operand, when it is the record's own field, is drawn again between the
  bounds every applicable ``compare`` on that field sets (a start time before ``now``, an end
  time between the start and ``now``, a capacity at least the enrolled count);
- ``order``: the times of one parent's children are handed out again in the order of their
  events (booked before delivered);
- ``implies`` / ``filled``: the record's own fields get an allowed value / a fresh one; a path
  through a ref (``reservation_id.status``) moves the ref to a parent that fits;
- otherwise, when the rule applies only in some statuses, the record is made again in a status
  outside them (a graded enrolment of a course that has not started becomes enrolled).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from envmill.tasks.backends.procedural.spec.check import reachable_states, ref_order
from envmill.tasks.backends.procedural.spec.domain import EntitySpec, FieldSpec
from envmill.tasks.backends.procedural.state.invariants import (
    KIND_VIOLATIONS,
    MISSING,
    NOW,
    StateView,
    counted_sum,
    matches,
    operand,
    read_path,
    shifted,
    siblings,
)
from envmill.tasks.backends.procedural.state.values import fill_time, fill_typed, make_record

if TYPE_CHECKING:
    from envmill.tasks.backends.procedural.state.fill import Filler

Record = dict[str, Any]
SPREAD = {"date": 2, "datetime": 16}  # steps a time may move away from its one known bound
NEAR_NOW = timedelta(days=45)  # a time bounded far on both sides stays this close to the clock
STEP = {"date": timedelta(days=1), "datetime": timedelta(minutes=15), "int": 1, "float": 0.01}


def repair_round(filler: Filler) -> bool:
    """Mend every record that breaks an invariant once; True when anything changed."""
    view = filler_view(filler)
    changed = False
    for name in ref_order(filler.spec):
        entity = filler.spec.entities[name]
        for record_id in list(filler.records.get(name, {})):
            for invariant in entity.invariants:
                changed |= repair_record(filler, view, entity, record_id, invariant)
    return changed


def filler_view(filler: Filler) -> StateView:
    """The records made so far as a state (sharing the record dicts, so repairs show at once)."""
    state: dict[str, Any] = {
        filler.spec.entities[name].plural: rows for name, rows in filler.records.items()
    }
    state["current_time"] = filler.now.isoformat(timespec="seconds")
    return StateView(filler.spec, state)


def repair_record(
    filler: Filler, view: StateView, entity: EntitySpec, record_id: str, invariant: Any
) -> bool:
    record = filler.records[entity.name][record_id]
    if KIND_VIOLATIONS[invariant.kind](view, entity, record, invariant) is None:
        return False
    if REPAIRS[invariant.kind](filler, view, entity, record, invariant):
        return True
    return remake_outside(filler, entity, record_id, invariant.when)


def repair_count(
    filler: Filler, view: StateView, entity: EntitySpec, record: Record, inv: Any
) -> bool:
    if inv.field is None:
        return False
    own = record[entity.id_field]
    rows = view.rows(inv.entity) or {}
    if inv.sum_of is not None:
        record[inv.field] = counted_sum(rows, inv, own)
        return True
    count = sum(
        1
        for row in rows.values()
        if row.get(inv.via) == own and all(row.get(k) in v for k, v in inv.where.items())
    )
    if inv.total is None:
        record[inv.field] = count
        return True
    low = entity.fields[inv.field].min or 0
    if record[inv.total] - count < low:
        record[inv.total] = int(count + low)
    record[inv.field] = record[inv.total] - count
    return True


def repair_compare(
    filler: Filler, view: StateView, entity: EntitySpec, record: Record, inv: Any
) -> bool:
    """Draw the left operand again when it is one of the record's own fields; when its bounds
    cannot all hold (a membership start after the member joined, but its end drawn before),
    draw the right operand again too, when it is an own field."""
    if not own_field(inv.left):
        return False
    value = bounded_value(filler, view, entity, record, inv.left)
    if value is None:
        return False
    record[inv.left] = value
    refill_terms(filler, entity, record, inv.left)
    if own_field(inv.right) and KIND_VIOLATIONS["compare"](view, entity, record, inv):
        value = bounded_value(filler, view, entity, record, inv.right)
        record[inv.right] = record[inv.right] if value is None else value
    return True


def refill_terms(filler: Filler, entity: EntitySpec, record: Record, moved: str) -> None:
    """A term of whole months after the field just redrawn (a plan's end after its start) is
    drawn again from it, so the start moving does not leave the plan a month and ten days."""
    status = record.get(entity.status.field) if entity.status else None
    for name, field in entity.fields.items():
        if field.months and field.after == moved and record.get(name) is not None:
            record[name] = fill_time(filler, field, status, record)


def own_field(value: Any) -> bool:
    """An operand naming a field of the record itself (not ``now``, a number or a path)."""
    return isinstance(value, str) and value != NOW and "." not in value


MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def bounds_on(entity: EntitySpec, name: str) -> list[tuple[str, Any, Any, float | None]]:
    """(op, other operand, when, hours) of every compare that bounds field ``name``: as its
    left operand, or as its right one facing an own field (mirrored, and without hours)."""
    found = []
    for inv in entity.invariants:
        if inv.kind != "compare":
            continue
        if inv.left == name:
            found.append((inv.op, inv.right, inv.when, inv.hours))
        elif inv.right == name and own_field(inv.left) and inv.hours is None:
            found.append((MIRROR[inv.op], inv.left, inv.when, None))
    return found


def repair_implies(
    filler: Filler, view: StateView, entity: EntitySpec, record: Record, inv: Any
) -> bool:
    """A record whose own enum puts it under the rule (an event saying delivered) takes another
    value first; otherwise each path of ``then`` gets an allowed value (through a ref: another
    parent that fits)."""
    status = entity.status.field if entity.status else None
    own = [name for name in inv.when if "." not in name and name != status]
    if own and entity.fields[own[0]].type == "enum":
        if redraw_own(filler, view, entity, record, own[0], inv.when[own[0]]):
            return True
    for path, values in inv.then.items():
        if read_path(view, entity, record, path) in values:
            continue
        if "." in path:
            return repoint(filler, view, entity, record, path, values)
        if path == status:
            return remake_in(filler, entity, record, values)
        record[path] = filler.rng.choice(values)
    return True


def repoint(
    filler: Filler, view: StateView, entity: EntitySpec, record: Record, path: str, values: list
) -> bool:
    """Make the record's ref name another parent whose field at the rest of ``path`` has one of
    ``values`` (a folio charge moves to a reservation that is checked in); with none, make its
    own parent again in such a status. A ref whose status claims or follows its parent keeps
    its parent as it is: the status fill chose the pair together."""
    ref, rest = path.split(".", 1)
    field = entity.fields[ref]
    if field.claims or field.follows or field.entity is None:
        return False
    parent = filler.spec.entities[field.entity]
    rows = view.rows(parent.name) or {}
    fitting = sorted(
        key for key, row in rows.items() if read_path(view, parent, row, rest) in values
    )
    if fitting:
        record[ref] = filler.rng.choice(fitting)
        return True
    own_id = record.get(ref)
    own_parent = rows.get(own_id) if own_id is not None else None
    status = parent.status.field if parent.status else None
    return (
        own_parent is not None and rest == status and remake_in(filler, parent, own_parent, values)
    )


def repair_filled(
    filler: Filler, view: StateView, entity: EntitySpec, record: Record, inv: Any
) -> bool:
    record[inv.field] = fill_typed(filler, entity, inv.field, record)
    return record[inv.field] is not None


def repair_order(
    filler: Filler, view: StateView, entity: EntitySpec, record: Record, inv: Any
) -> bool:
    """A value that happened already takes another (one no sibling has, that every ``implies``
    allows), or the record moves to another parent; otherwise the times of the record and its
    siblings are handed out again in ``by``'s order: the same moments, so every other bound on
    them (after the booking, not after now) still holds."""
    group = [record, *siblings(view, entity, record, inv.via)]
    if inv.distinct and any(row[inv.by] == record[inv.by] for row in group[1:]):
        parents = sorted(view.rows(entity.fields[inv.via].entity or "") or {})
        filler.rng.shuffle(parents)
        for parent in [record[inv.via], *parents]:
            record[inv.via] = parent
            taken = [row[inv.by] for row in siblings(view, entity, record, inv.via)]
            if redraw_own(filler, view, entity, record, inv.by, taken):
                break
        return True
    values = entity.fields[inv.by].values
    timed = [row for row in group if row.get(inv.time) is not None]

    def rank(row: Record) -> int:
        return values.index(row[inv.by]) if row[inv.by] in values else 0

    ranked = sorted(timed, key=rank)
    for row, moment in zip(ranked, sorted((row[inv.time] for row in timed), key=str), strict=True):
        row[inv.time] = moment
    return True


def redraw_own(
    filler: Filler, view: StateView, entity: EntitySpec, record: Record, name: str, avoid: list
) -> bool:
    """Give the record's enum field ``name`` a value outside ``avoid`` that every ``implies`` of
    the entity accepts (a tracking event that fits its shipment's status); False with none."""
    rules = [inv for inv in entity.invariants if inv.kind == "implies"]

    def fits(value: Any) -> bool:
        trial = {**record, name: value}
        return not any(KIND_VIOLATIONS["implies"](view, entity, trial, inv) for inv in rules)

    fitting = [value for value in entity.fields[name].values if value not in avoid and fits(value)]
    if not fitting:
        return False
    record[name] = filler.rng.choice(fitting)
    return True


REPAIRS = {
    "count": repair_count,
    "compare": repair_compare,
    "implies": repair_implies,
    "filled": repair_filled,
    "order": repair_order,
}


def remake_in(filler: Filler, entity: EntitySpec, record: Record, statuses: list) -> bool:
    """Make the record again in one of ``statuses`` (the reachable ones, in machine order)."""
    live = [s for s in entity.machine.states if s in statuses and s in reachable_states(entity)]
    if not live:
        return False
    remake(filler, entity, record[entity.id_field], live[0])
    return True


def remake_outside(filler: Filler, entity: EntitySpec, record_id: str, when: dict) -> bool:
    """Make the record again in a reachable status the rule's ``when`` does not cover."""
    machine = entity.status
    if machine is None or machine.field not in when:
        return False
    others = [s for s in machine.states if s not in when[machine.field]]
    return remake_in(filler, entity, filler.records[entity.name][record_id], others)


def remake(filler: Filler, entity: EntitySpec, record_id: str, status: str) -> None:
    """A new record with the same id and refs, except refs the new status claims afresh."""
    old = filler.records[entity.name][record_id]
    fixed = {
        name: old[name]
        for name, field in entity.fields.items()
        if field.type == "ref" and status not in field.claims
    }
    filler.records[entity.name][record_id] = make_record(filler, entity, record_id, status, fixed)


def bounded_value(
    filler: Filler, view: StateView, entity: EntitySpec, record: Record, name: str
) -> Any:
    """A value for field ``name`` inside the bounds of every ``compare`` (applying to this record)
    that bounds it; None when no bound is known."""
    field = entity.fields[name]
    kind = field.type if field.type in STEP else "float"
    lows: list[Any] = []
    highs: list[Any] = []
    for op, other, when, hours in bounds_on(entity, name):
        if matches(view, entity, record, when) is not True:
            continue
        value, right_kind = operand(view, entity, record, other)
        bound = to_bound(shifted(value, right_kind, hours), kind)
        if bound is None:
            continue
        if op == "==":
            return from_bound(bound, kind)
        low, high = edge(bound, op, kind, right_kind)
        lows += [low] if low is not None else []
        highs += [high] if high is not None else []
    return pick_between(filler, field, kind, max(lows, default=None), min(highs, default=None))


def to_bound(value: Any, kind: str) -> Any:
    """A bound in the field's terms: a number, or a datetime (a date at midnight)."""
    if value is None or value is MISSING:
        return None
    if kind in ("int", "float"):
        return value if isinstance(value, int | float) else None
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None


def edge(bound: Any, op: str, kind: str, bound_kind: str) -> tuple[Any, Any]:
    """The (lowest, highest) value ``field op bound`` admits; times compare by day when either
    side is a date."""
    by_day = "date" in (kind, bound_kind)
    if by_day:
        bound = datetime.combine(bound.date(), datetime.min.time())
    step = timedelta(days=1) if by_day else STEP[kind]
    if kind == "date":
        bound = bound.date()
    if op in ("<", "<="):
        if by_day and kind == "datetime":  # before the day (<) or within it (<=)
            return None, bound - STEP[kind] if op == "<" else bound + step - STEP[kind]
        return None, bound - step if op == "<" else bound
    if op in (">", ">="):
        return (bound + step if op == ">" else bound), None
    return None, None


def pick_between(filler: Filler, field: FieldSpec, kind: str, low: Any, high: Any) -> Any:
    """A random value in [low, high]; near the bound when only one is known."""
    if kind in ("int", "float"):
        return pick_number(filler, field, kind, low, high)
    if low is None and high is None:
        return None
    step = STEP[kind]
    if low is not None and high is not None:  # a birth date to now: a time near now
        low, high = _near_now(filler, kind, low, high)
    if low is None:
        low = high - SPREAD[kind] * step
    if high is None or high < low:
        high = low + SPREAD[kind] * step if high is None else low
    return from_bound(low + filler.rng.randint(0, int((high - low) / step)) * step, kind)


def _near_now(filler: Filler, kind: str, low: Any, high: Any) -> tuple[Any, Any]:
    """[low, high] narrowed to within ``NEAR_NOW`` of the state's clock where the two overlap:
    a checked-in appointment bounded by the patient's birth and now starts today, not in 1994."""
    now = filler.now.date() if kind == "date" else filler.now
    near_low, near_high = max(low, now - NEAR_NOW), min(high, now + NEAR_NOW)
    return (near_low, near_high) if near_low <= near_high else (low, high)


def pick_number(filler: Filler, field: FieldSpec, kind: str, low: Any, high: Any) -> Any:
    """A number within the bounds, inside the field's fill range where the two overlap."""
    fill_low, fill_high = field.range or [field.min, field.max]
    lo, hi = extreme(max, low, fill_low), extreme(min, high, fill_high)
    lo, hi = (hi if lo is None else lo), (lo if hi is None else hi)
    if lo is None:
        return None
    if lo > hi:  # the fill range misses the bounds: stay on a bound
        lo = hi = low if low is not None else high
    if kind == "float":
        return round(filler.rng.uniform(lo, hi), 2)
    return filler.rng.randint(int(lo), int(hi))


def extreme(pick: Any, *values: Any) -> Any:
    """``pick`` (min or max) of the values that are not None; None when all are."""
    known = [value for value in values if value is not None]
    return pick(known) if known else None


def from_bound(value: Any, kind: str) -> Any:
    if kind == "date":
        return (value.date() if isinstance(value, datetime) else value).isoformat()
    if kind == "datetime":
        return value.isoformat(timespec="seconds")
    return float(value) if kind == "float" else int(value)
