"""The records a request is usually about: live ones, in the earliest state the tool allows.

The tools allow a premium on a lapsed policy and a deduction on a terminated employee's payslip,
but no one asking for that work has such a record in mind, and raters docked every reference that
did it without a word (rounds 65 to 67); saying the status before or after the act was rated
lower still. So the drawer prefers, for a record a call names: the earliest state (in the
lifecycle order the spec lists) among those the tool's guard allows; a state the record can still
leave when no guard names its status; and parents (the records its references point to) that are
not in a state nothing leaves (a terminated employee, a cancelled order). Refusals look for the
other records on purpose and do not draw through this.
"""

from __future__ import annotations

from typing import Any

from envmill.tasks.backends.procedural.spec.domain import DomainSpec, EntitySpec, StatusMachine


def ended_states(machine: StatusMachine) -> set[str]:
    """The states no transition leaves (completed, cancelled, closed)."""
    return set(machine.states) - {state for t in machine.transitions for state in t.from_}


def live_states(machine: StatusMachine) -> set[str]:
    """The states a record can still leave, and the initial one; every state of a machine
    without transitions (nothing says which end)."""
    if not machine.transitions:
        return set(machine.states)
    return set(machine.states) - ended_states(machine) | {machine.initial}


def usual_prefer(entity: EntitySpec | None, prefer: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """``prefer`` (field -> values under which the call succeeds) narrowed to the usual case:
    a guard's several states to the earliest listed, no guard to the live states."""
    machine = entity.status if entity else None
    if machine is None:
        return prefer
    allowed = prefer.get(machine.field)
    if allowed is None:
        return prefer | {machine.field: sorted(live_states(machine))}
    known = [state for state in allowed if state in machine.states]
    if len(known) < 2:
        return prefer
    return prefer | {machine.field: [min(known, key=machine.states.index)]}


def parents_live(
    spec: DomainSpec, attrs: dict[str, str], entity: str | None, record: Any, state: dict[str, Any]
) -> bool:
    """No record this one refers to is in a state nothing leaves (the payslip of a terminated
    employee); ``attrs`` maps an entity to the state attribute that holds its records."""
    owner = spec.entities.get(entity or "")
    if owner is None or not isinstance(record, dict):
        return True
    for name, field in owner.fields.items():
        parent = spec.entities.get(field.entity or "") if field.type == "ref" else None
        if parent is None or parent.status is None or not parent.status.transitions:
            continue
        records = state.get(attrs.get(field.entity or "", "")) or {}
        found = records.get(record.get(name)) if isinstance(records, dict) else None
        status = found.get(parent.status.field) if isinstance(found, dict) else None
        if status is not None and status not in live_states(parent.status):
            return False
    return True


def is_usual(
    spec: DomainSpec, attrs: dict[str, str], entity: str, record: Any, state: dict[str, Any]
) -> bool:
    """A record a person would ask about as it is: in a live state, under live parents (not
    the price of a cancelled booking, nor a parcel of a disputed shipment: round 68)."""
    owner = spec.entities.get(entity)
    machine = owner.status if owner else None
    if machine is not None and machine.transitions and isinstance(record, dict):
        if record.get(machine.field) not in live_states(machine):
            return False
    return parents_live(spec, attrs, entity, record, state)
