"""Records and field values of a seeded state (see ``statefill``): statuses spread over the
reachable states, parents linked by ``claims`` / ``follows``, and each field filled from its type
and fill hints.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from envmill.tasks.backends.procedural.scenarios.round_numbers import round_within
from envmill.tasks.backends.procedural.spec.check import reachable_states
from envmill.tasks.backends.procedural.spec.domain import (
    DERIVE,
    DIFFERENCE,
    EntitySpec,
    FieldSpec,
    SpecError,
)
from envmill.tasks.backends.procedural.state.contact import (
    email_for,
    fake_text,
    is_email_provider,
    person_name,
)

if TYPE_CHECKING:
    from envmill.tasks.backends.procedural.state.fill import Filler

Record = dict[str, Any]


def bound_value(filler: Filler, entity: EntitySpec, operand: str, values: Record) -> Any:
    """The number ``operand`` names for the record being filled, or None when unknown."""
    if operand.startswith("$"):
        return filler.plan.limits.get(operand[1:])
    ref, _, name = operand.partition(".")
    field = entity.fields.get(ref)
    if not name or "." in name or field is None or field.type != "ref" or ref not in values:
        return None
    return filler.records.get(field.entity or "", {}).get(values[ref], {}).get(name)


def status_pool(filler: Filler, entity: EntitySpec, count: int) -> list[str | None]:
    if entity.status is None:
        return [None] * count
    live = [s for s in entity.machine.states if s in reachable_states(entity)]
    weighted: list[str | None] = [entity.machine.initial, *live]
    pool = [weighted[i % len(weighted)] for i in range(count)]
    filler.rng.shuffle(pool)
    return pool


def fill_entity(filler: Filler, entity: EntitySpec) -> None:
    count = filler.rng.randint(*filler.plan.fill_counts.get(entity.name, entity.count))
    rows: dict[str, Record] = {}
    for index, status in enumerate(status_pool(filler, entity, count), start=1):
        record_id = entity.id_format.format(n=index)
        rows[record_id] = make_record(filler, entity, record_id, status, {})
    filler.records[entity.name] = rows


def field_order(entity: EntitySpec) -> list[str]:
    """Fields with their fill bases (``after``, ``at_most``; a name before its email) first."""
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        field = entity.fields[name]
        match, less = DERIVE.match(field.derive or ""), DIFFERENCE.match(field.derive or "")
        derived = [match.group(1), match.group(3)] if match else list(less.groups()) if less else []
        names = [n for n, f in entity.fields.items() if f.faker == "name"]
        named = names if is_email_provider(field.faker) else []
        scaled = [field.scale.by] if field.scale else []
        for base in (field.after, field.at_most, *derived, *scaled, *named):
            if base:
                visit(base)
        order.append(name)

    for name in entity.fields:
        visit(name)
    return order


def make_record(
    filler: Filler, entity: EntitySpec, record_id: str, status: str | None, fixed: Record
) -> Record:
    record: Record = {entity.id_field: record_id}
    values: Record = dict(fixed)
    if entity.status is not None:
        values[entity.status.field] = status
        link_parents(filler, entity, values)
    values |= example_values(filler, entity, values)
    for name in field_order(entity):
        if name not in values:
            values[name] = fill_value(filler, entity, name, values)
    record.update({name: values[name] for name in entity.fields})
    return record


def example_values(filler: Filler, entity: EntitySpec, values: Record) -> Record:
    """One of the entity's ``examples`` (a Brake Pad Set is in brakes), fields its status does
    not blank or fix; one whose unique values are not taken yet, else none."""
    if not entity.examples:
        return {}
    status = values.get(entity.status.field) if entity.status else None

    def taken(example: Record) -> bool:
        return any(
            str(value) in filler.seen.get((entity.name, name), set())
            for name, value in example.items()
            if (entity.name, name) in filler.unique
        )

    free = [example for example in entity.examples if not taken(example)]
    if not free:  # the plain fill keeps labels unique
        return {}
    example = filler.rng.choice(free)
    chosen: Record = {}
    for name, value in example.items():
        field = entity.fields.get(name)
        if field is None or name in values or status in field.value_when:
            continue
        if field.set_when and status not in field.set_when:
            continue
        chosen[name] = value
        filler.seen.setdefault((entity.name, name), set()).add(str(value))
    return chosen


def link_parents(filler: Filler, entity: EntitySpec, values: Record) -> None:
    """Apply ``claims`` (an ongoing trip puts its vehicle on_trip, one parent per claim) and
    ``follows`` (a booking on a cancelled flight is cancelled) before the other fields."""
    machine = entity.status
    if machine is None:  # claims and follows name statuses: the spec check wants a machine
        return
    for name, field in entity.fields.items():
        if not (field.claims or field.follows):
            continue
        status = values[machine.field]
        if status in field.claims and name not in values:
            parent = claim_parent(filler, field, field.claims[status])
            if parent is None:
                values[machine.field] = next(
                    s
                    for s in machine.states
                    if s not in field.claims and s in reachable_states(entity)
                )
            else:
                values[name] = parent
        if name not in values:
            values[name] = filler.rng.choice(sorted(filler.records[field.entity or ""]))
        parent_status = filler.records[field.entity or ""][values[name]].get(
            filler.spec.entities[field.entity or ""].machine.field
        )
        if parent_status in field.follows:
            values[machine.field] = field.follows[parent_status]


def claim_parent(filler: Filler, field: FieldSpec, target: str) -> str | None:
    """A parent not claimed yet, in its initial state or already in ``target``; it moves there."""
    parent_spec = filler.spec.entities[field.entity or ""]
    machine = parent_spec.machine
    claimed = filler.claimed.setdefault(parent_spec.name, set())
    rows = filler.records[parent_spec.name]
    free = [
        pid
        for pid in sorted(rows)
        if pid not in claimed and rows[pid][machine.field] in (target, machine.initial)
    ]
    if not free:
        return None
    parent = filler.rng.choice(free)
    claimed.add(parent)
    rows[parent][machine.field] = target
    return parent


def fill_value(filler: Filler, entity: EntitySpec, name: str, values: Record) -> Any:
    """One field's value: per-status rules first, then by type."""
    field = entity.fields[name]
    status = values.get(entity.status.field) if entity.status else None
    if field.set_when and status not in field.set_when:
        return None
    if status in field.value_when:
        return field.value_when[status]
    return fill_typed(filler, entity, name, values)


def fill_typed(filler: Filler, entity: EntitySpec, name: str, values: Record) -> Any:
    """A value for the field's type and fill hints, whatever the record's status says."""
    field = entity.fields[name]
    status = values.get(entity.status.field) if entity.status else None
    if field.type in ("int", "float"):
        return fill_number(filler, entity, name, values)
    if field.type in ("date", "datetime"):
        return fill_time(filler, field, status, values)
    if field.type == "str":
        return fill_text(filler, entity, name, field, values)
    return fill_choice(filler, entity, field, values)


def fill_choice(filler: Filler, entity: EntitySpec, field: FieldSpec, values: Record) -> Any:
    """A ref to an existing record, an enum value (one that an earlier field with the same
    choices did not take: origin and destination differ) or a bool."""
    if field.type == "ref" and field.derive:  # the policyholder of the claim's policy
        return _along(filler, entity, field.derive, values)
    if field.type == "ref":
        return filler.rng.choice(sorted(filler.records[field.entity or ""]))
    if field.type == "enum":
        taken = {
            values.get(name)
            for name, other in entity.fields.items()
            if other is not field and other.type == "enum" and other.values == field.values
        }
        return filler.rng.choice([v for v in field.values if v not in taken] or field.values)
    return filler.rng.random() < 0.5


def derive_value(filler: Filler, entity: EntitySpec, field: FieldSpec, values: Record) -> Any:
    """``product_id.price * quantity``: copy a field of a referenced record, times a local one."""
    less = DIFFERENCE.match(field.derive or "")
    if less is not None:  # "gross_pay - deductions"
        return round(values[less.group(1)] - values[less.group(2)], 2)
    matched = DERIVE.match(field.derive or "")
    if matched is None:  # the spec check refuses a derive it cannot read
        raise SpecError(f"unreadable derive '{field.derive}' of '{entity.name}'")
    ref, copied, factor = matched.groups()
    source = filler.records[entity.fields[ref].entity or ""][values[ref]]
    value = source[copied]
    if factor is not None:
        value = value * values[factor]
    if field.scale is not None:  # a business seat costs more than the economy fare
        value = value * field.scale.factors.get(values[field.scale.by], 1)
    return round(value, 2) if isinstance(value, float) else value


def _along(filler: Filler, entity: EntitySpec, path: str, values: Record) -> Any:
    """The id at the end of a path of refs (``claim_id.policy_id.policyholder_id``), read from
    the records filled so far: a payout is to the holder of the claim's policy (round 71)."""
    first, *rest = path.split(".")
    value, at = values.get(first), entity.fields[first].entity or ""
    for step in rest:
        record = filler.records.get(at, {}).get(str(value)) or {}
        value = record.get(step)
        at = filler.plan.spec.entities[at].fields[step].entity or ""
    return value


def rederive(filler: Filler) -> bool:
    """Derived fields read again from the records they copy, once repairs have moved refs (a
    payout repointed to a paid claim pays what that claim was approved for); whether any
    changed."""
    changed = False
    for name, records in filler.records.items():
        entity = filler.plan.spec.entities[name]
        derived = [(n, f) for n, f in entity.fields.items() if f.derive and not f.nullable]
        for record in records.values():
            for field_name, field in derived:
                try:
                    value = (
                        _along(filler, entity, field.derive or "", record)
                        if field.type == "ref"
                        else derive_value(filler, entity, field, record)
                    )
                except (KeyError, TypeError):  # a ref not on file, a copied value not set
                    continue
                if value is not None and value != record.get(field_name):
                    record[field_name], changed = value, True
    return changed


def fill_number(filler: Filler, entity: EntitySpec, name: str, values: Record) -> int | float:
    field = entity.fields[name]
    if field.derive is not None:
        return derive_value(filler, entity, field, values)
    low, high = field.range or [field.min or 0, field.max if field.max is not None else 100]
    if field.at_most is not None:
        high = min(high, values[field.at_most])
    low = min(low, high)
    for operand, strict in filler.bounds.get((entity.name, name), []):
        cap = bound_value(filler, entity, operand, values)
        if isinstance(cap, int | float) and not isinstance(cap, bool):
            cap = cap - 1 if strict and field.type == "int" else cap
            if cap >= max(low, field.min if field.min is not None else low):
                high = min(high, cap)
    if field.type == "int":
        return filler.rng.randint(int(low), int(high))
    value = round(filler.rng.uniform(low, high), 2)
    chosen = CHOSEN_SUM.match(name) and CHOSEN_BY.search(entity.name)
    if chosen and high - low >= 1:  # a pledge of $2,500, not $2,267.67
        return round_within(value, low, high)
    return value


# a sum someone chose (a pledge, a gift, a deposit): a round figure (round 35: "pledges of
# 2267.67 and 388.02 look synthetic"); a bill, an invoice or a fee is worked out, and stays so
CHOSEN_SUM = re.compile(r"^(?:amount|.+_amount)$")
CHOSEN_BY = re.compile(r"(?:^|_)(?:pledge|donation|gift|contribution|deposit|top_up)(?:_|$)")


def fill_time(filler: Filler, field: FieldSpec, status: str | None, values: Record) -> str:
    if field.months and field.after and values.get(field.after):
        term = whole_months(filler, field, status, date.fromisoformat(values[field.after][:10]))
        if term is not None:
            return term.isoformat()
    base = filler.now
    days = field.by_status.get(status or "") if status else None
    if days is None:
        days = field.days or [-60, 60]
        if field.after is not None and values.get(field.after):
            base = datetime.fromisoformat(values[field.after])
    moment = base + timedelta(days=filler.rng.randint(*days))
    if field.type == "date":
        day = moment.date()
        if field.working_day:  # away from today, so a future date stays in the future
            step = timedelta(days=1 if day > filler.now.date() else -1)
            while day.weekday() >= 5:
                day += step
        return day.isoformat()
    moment = moment.replace(hour=filler.rng.randint(8, 19), minute=15 * filler.rng.randrange(4))
    if base is not filler.now and moment <= base:  # `after` on the same day, at an earlier hour
        moment = base + timedelta(hours=filler.rng.randint(1, 4))
    return moment.isoformat(timespec="seconds")


def whole_months(filler: Filler, field: FieldSpec, status: str | None, start: date) -> date | None:
    """``start`` plus a whole number of ``months`` (the same day of the month, or the month's
    last day); in a status with its own day range (an ended plan), only a count of months that
    lands in that range from now; None when none does."""
    low, high = field.months or [1, 1]
    window = field.by_status.get(status or "") if status else None
    ends = [plus_months(start, n) for n in range(low, high + 1)]
    if window is not None:
        today = filler.now.date()
        ends = [end for end in ends if window[0] <= (end - today).days <= window[1]]
    return filler.rng.choice(ends) if ends else None


def plus_months(start: date, months: int) -> date:
    """The same day ``months`` later; the 31st of a shorter month is its last day."""
    year, month = divmod(start.month - 1 + months, 12)
    year, month = start.year + year, month + 1
    return date(year, month, min(start.day, calendar.monthrange(year, month)[1]))


def fill_text(
    filler: Filler, entity: EntitySpec, name: str, field: FieldSpec, values: Record
) -> str:
    """A sample or faker value, unique where the entity's label or a rule needs it; an email
    made from the record's own name when it has one."""
    person = person_name(entity, values)  # drawn first: see field_order
    if field.default is not None and filler.rng.random() < 0.2:
        return str(field.default)
    key = (entity.name, name)
    seen = filler.seen.setdefault(key, set())
    text = ""  # thirty attempts: the loop always sets it
    for attempt in range(30):
        if field.sample:
            text = filler.rng.choice(field.sample)
        elif person and is_email_provider(field.faker):
            text = email_for(person, filler.rng, attempt)
        elif field.faker:
            text = fake_text(filler.fake, field.faker)
        else:
            text = filler.fake.word().capitalize()
        if key not in filler.unique or text not in seen:
            break
        if attempt == 29:
            text = f"{text} {len(seen) + 1}"
    seen.add(text)
    return text
