"""Seeded, realistic initial states for compiled procedural environments.

The state has every attribute the class creates (DESIGN §3.1): one dict per kept entity keyed by
id, the id counters set past the highest id, and ``current_time``, a seeded moment in 2025. Records
are made in reference order, so every ref points at an existing record; statuses are spread over
the reachable states (the initial one weighted double); dates sit around ``current_time`` as the
spec's fill hints say; and after filling, no parent exceeds a ``count_below`` limit of the
environment, so the state starts inside the business rules. Those rules also shape single
records: a number a ``create`` rule bounds (guests up to the property's limit) stays within it,
a time filled ``after`` another one comes later, and enum fields with the same choices in one
record (a flight's origin and destination) differ. Last, the state is brought inside the domain's
invariants (``statefill_repair``): counters derived from the records they mirror, times moved to
agree with statuses and current_time. When the domain has roles, the state also says who is
signed in: a role without an entity (staff) most of the time, otherwise a record of a role's
entity (a customer), drawn by a generator of its own so the records stay as they were.
"""

from __future__ import annotations

import random
import threading
from datetime import datetime, timedelta
from typing import Any

from faker import Faker

from envmill.tasks.backends.procedural.manifest import CompiledEnvironment
from envmill.tasks.backends.procedural.plan import EnvPlan, plan_environment
from envmill.tasks.backends.procedural.spec.check import reachable_states, ref_order
from envmill.tasks.backends.procedural.spec.check_roles import ACTING_ID_ATTR, ACTING_ROLE_ATTR
from envmill.tasks.backends.procedural.spec.domain import DomainSpec, EntitySpec
from envmill.tasks.backends.procedural.state.id_order import ids_in_time_order
from envmill.tasks.backends.procedural.state.repair import repair_round
from envmill.tasks.backends.procedural.state.values import fill_entity, make_record, rederive

Record = dict[str, Any]
REPAIR_ROUNDS = 8
STAFF_SHARE = 0.5


class Filler:
    """Random sources and the records made so far."""

    def __init__(self, plan: EnvPlan, seed: int) -> None:
        self.plan, self.spec = plan, plan.spec
        self.rng = random.Random(f"state:{plan.spec.name}:{plan.seed}:{seed}")
        self.fake = _faker()
        self.fake.seed_instance(self.rng.randrange(2**31))  # its whole stream, from the seed
        rng = self.rng
        # a morning, so times a few hours ahead of it fall in office hours
        self.now = datetime(2025, 1, 1, 8) + timedelta(
            days=rng.randrange(365), hours=rng.randrange(3), minutes=15 * rng.randrange(4)
        )
        while self.now.weekday() >= 5:  # a working day: a bank at work on a Sunday (round 37)
            self.now += timedelta(days=1)
        self.records: dict[str, dict[str, Record]] = {}
        self.unique = unique_fields(plan.spec)
        self.seen: dict[tuple[str, str], set[str]] = {}
        self.claimed: dict[str, set[str]] = {}
        self.bounds = upper_bounds(plan)


_FAKERS = threading.local()


def _faker() -> Faker:
    """This thread's Faker (making one reads its locale's providers: a few milliseconds); each
    state seeds it afresh, so none carries anything into the next."""
    if not hasattr(_FAKERS, "en_US"):
        _FAKERS.en_US = Faker("en_US")
    return _FAKERS.en_US


def build_initial_state(compiled: CompiledEnvironment, seed: int) -> dict[str, Any]:
    """A JSON-ready initial state for ``compiled``; the same seed always gives the same state."""
    plan = plan_environment(compiled.spec, compiled.seed)
    filler = Filler(plan, seed)
    for name in ref_order(plan.spec):
        if name in plan.entities:
            fill_entity(filler, plan.entity(name))
    for _ in range(REPAIR_ROUNDS):
        enforce_count_limits(filler)
        reconcile_claims(filler)
        rederived = rederive(filler)  # a repointed ref's copies follow it
        if not repair_round(filler) and not rederived:
            break
    ids_in_time_order(plan.spec, filler.records)
    state: dict[str, Any] = {plan.entity(n).plural: filler.records[n] for n in plan.entities}
    for name in plan.entities:
        state[plan.entity(name).counter] = len(filler.records[name]) + 1
    state["current_time"] = filler.now.isoformat(timespec="seconds")
    if plan.roles:
        rng = random.Random(f"acting:{plan.spec.name}:{plan.seed}:{seed}")
        state |= acting_identity(plan, filler.records, rng)
    return state


def acting_identity(
    plan: EnvPlan, records: dict[str, dict[str, Record]], rng: random.Random
) -> dict[str, Any]:
    """``acting_role`` and ``acting_id``: staff with ``STAFF_SHARE``, else a record of a role's
    entity that some other record names (a customer with an account has something to ask
    about; one with nothing would leave a scenario no change to make), staff too when there is
    no such record, or no role is staff."""
    staff = [name for name, role in plan.roles.items() if not role.entity]
    named = {
        value
        for entity in records.values()
        for record_id, record in entity.items()
        for value in record.values()
        if isinstance(value, str) and value != record_id
    }
    members = [
        (name, record_id)
        for name, role in plan.roles.items()
        if role.entity
        for record_id in sorted(records.get(role.entity, {}))
        if record_id in named
    ]
    if members and (not staff or rng.random() >= STAFF_SHARE):
        role, record_id = rng.choice(members)
        return {ACTING_ROLE_ATTR: role, ACTING_ID_ATTR: record_id}
    return {ACTING_ROLE_ATTR: (staff or list(plan.roles))[0], ACTING_ID_ATTR: None}


def unique_fields(spec: DomainSpec) -> set[tuple[str, str]]:
    """(entity, field) pairs that must not repeat: labels and fields a ``unique`` rule guards."""
    pairs = {(name, e.label) for name, e in spec.entities.items() if e.label}
    for op in spec.operations():
        pairs |= {(pre.entity, pre.field) for pre in op.preconditions if pre.kind == "unique"}
    return pairs


def upper_bounds(plan: EnvPlan) -> dict[tuple[str, str], list[tuple[str, bool]]]:
    """(entity, field) -> [(operand, strict)]: the ``compare`` rules of this environment's
    ``create`` tools that keep a field of the new record below a limit (``$max_nights``) or a
    parent's field (``property_id.max_guests``)."""
    bounds: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for tool in plan.tools:
        if tool.op.kind != "create":
            continue
        fields = plan.entity(tool.op.entity).fields
        for pre in tool.op.preconditions:
            if pre.kind != "compare" or pre.op not in ("<", "<=", ">", ">="):
                continue
            own, other = (pre.left, pre.right) if pre.op[0] == "<" else (pre.right, pre.left)
            if not isinstance(own, str) or not isinstance(other, str):
                continue
            field = fields.get(own)
            if field is not None and field.type in ("int", "float"):
                key = (tool.op.entity, own)
                bounds.setdefault(key, []).append((other, pre.op in ("<", ">")))
    return bounds


def reconcile_claims(filler: Filler) -> None:
    """A parent keeps a claimed status only while a child still claims it (children may have
    been regenerated by the count limits); others go back to the initial state."""
    for entity_name in filler.records:
        entity = filler.spec.entities[entity_name]
        for name, field in entity.fields.items():
            if not field.claims or field.entity not in filler.records:
                continue
            machine = filler.spec.entities[field.entity].machine
            wanted = {
                row[name]: field.claims[row[entity.machine.field]]
                for row in filler.records[entity_name].values()
                if row[entity.machine.field] in field.claims
            }
            for parent_id, row in filler.records[field.entity].items():
                if parent_id in wanted:
                    row[machine.field] = wanted[parent_id]
                elif row[machine.field] in field.claims.values():
                    row[machine.field] = machine.initial


def enforce_count_limits(filler: Filler) -> None:
    """Move children past a ``count_below`` limit to a state the count ignores."""
    plan = filler.plan
    for tool in plan.tools:
        for pre in tool.op.preconditions:
            if pre.kind != "count_below" or pre.entity not in filler.records:
                continue
            limit = plan.limits.get(str(pre.limit)[1:]) if isinstance(pre.limit, str) else pre.limit
            if isinstance(limit, int | float):
                cap_children(filler, plan.entity(pre.entity), pre, int(limit))


def cap_children(filler: Filler, entity: EntitySpec, pre: Any, limit: int) -> None:
    machine = entity.status
    if machine is None or set(pre.where) - {machine.field}:
        return
    spare = [
        s
        for s in machine.states
        if s in reachable_states(entity) and s not in pre.where.get(machine.field, [])
    ]
    if not spare:
        return
    groups: dict[Any, list[str]] = {}
    rows = filler.records[entity.name]
    for record_id, row in rows.items():
        if all(row[name] in values for name, values in pre.where.items()):
            groups.setdefault(row[pre.via], []).append(record_id)
    for members in groups.values():
        for record_id in members[limit:]:
            fixed = {
                name: value
                for name, value in rows[record_id].items()
                if entity.fields.get(name) is not None and entity.fields[name].type == "ref"
            }
            rows[record_id] = make_record(filler, entity, record_id, spare[0], fixed)
