"""Semantic checks of operation effects: each effect kind's paths, operands and values, and the
checks an effect implies (a transition needs a reachable source state; a created record needs a
value for every field that is not nullable)."""

from __future__ import annotations

from typing import Any

from envmill.tasks.backends.procedural.spec.context import (
    OpContext,
    check_complete,
    check_values,
    check_where,
    reachable_states,
    status_machine_of,
)
from envmill.tasks.backends.procedural.spec.domain import RecordEffect
from envmill.tasks.backends.procedural.spec.paths import NUMERIC, TIMES, Resolved


def target_field(ctx: OpContext, path: str, kind: str = "set") -> Resolved:
    if path.startswith("new.") and kind not in ("set", "assign", "stamp"):
        ctx.fail(f"effect {kind} cannot act on the new record '{path}'")
    resolved = ctx.path(path, "effect sets")
    if resolved.field == f"{resolved.entity}_id":
        ctx.fail(f"effect sets the id field '{resolved.field}'")
    return resolved


def check_set(ctx: OpContext, effect: Any) -> None:
    field = target_field(ctx, effect.path).spec
    check_values(ctx, field, [effect.value], f"effect on '{effect.path}':")


def check_assign(ctx: OpContext, effect: Any) -> None:
    field = target_field(ctx, effect.path).spec
    scaled = effect.times is not None or effect.scale is not None
    value = ctx.operand(effect.value, "effect reads", numeric=scaled)
    if effect.times is not None:
        ctx.operand(effect.times, "effect reads")
    if effect.scale is not None:
        by = ctx.operand(effect.scale.by, "effect scales by", numeric=False).spec
        if by.type != "enum" or set(effect.scale.factors) != set(by.values):
            ctx.fail(
                f"effect scales by '{effect.scale.by}' without a factor for each of its values"
            )
    if (field.type in NUMERIC) != (value.spec.type in NUMERIC) or (
        field.type == "int" and value.spec.type == "float"
    ):
        ctx.fail(
            f"effect assigns {value.spec.type} '{effect.value}' to {field.type} '{effect.path}'"
        )


def check_stamp(ctx: OpContext, effect: Any) -> None:
    if target_field(ctx, effect.path).spec.type not in TIMES:
        ctx.fail(f"effect stamps non-time field '{effect.path}'")
    for amount in (effect.days, effect.hours):
        if amount is not None:
            ctx.operand(amount, "effect reads")


def check_transition(ctx: OpContext, effect: Any) -> None:
    resolved = target_field(ctx, effect.path, "transition")
    owner = status_machine_of(ctx, resolved)
    if owner is None:
        ctx.fail(f"transition on '{effect.path}', which is not a status field")
    machine = owner.machine
    if effect.to not in machine.states:
        ctx.fail(f"transition to unknown state '{effect.to}'")
    sources = {s for step in machine.transitions if step.to == effect.to for s in step.from_}
    if not sources & reachable_states(owner):
        ctx.fail(f"transition to '{effect.to}' has no reachable from-state")
    for pre in ctx.op.preconditions:
        if pre.kind == "field_in" and pre.path == effect.path and not sources & set(pre.values):
            ctx.fail(
                f"precondition on '{pre.path}' excludes every state that can move to '{effect.to}'"
            )


def check_adjust(ctx: OpContext, effect: Any) -> None:
    field = target_field(ctx, effect.path, effect.kind).spec
    by = ctx.operand(effect.by, "effect reads")
    if field.nullable:
        ctx.fail(f"effect {effect.kind}s nullable field '{effect.path}'")
    if field.type not in NUMERIC or (field.type == "int" and by.spec.type == "float"):
        ctx.fail(
            f"effect {effect.kind}s {field.type} '{effect.path}' by {by.spec.type} '{effect.by}'"
        )


def check_record(ctx: OpContext, effect: RecordEffect) -> None:
    entity = ctx.entity(effect.entity, "effect")
    for name in [*effect.set, *effect.assign, *effect.stamp]:
        if name not in entity.fields:
            ctx.fail(f"effect sets missing field '{name}'")
    for name, value in effect.set.items():
        check_values(ctx, entity.fields[name], [value], f"effect on '{entity.name}.{name}':")
    for name, value in effect.assign.items():
        ctx.operand(value, "effect reads", numeric=entity.fields[name].type in NUMERIC)
    for name in effect.stamp:
        if entity.fields[name].type not in TIMES:
            ctx.fail(f"effect stamps non-time field '{name}'")
    check_complete(ctx, entity, {*effect.set, *effect.assign, *effect.stamp})


def check_update_related(ctx: OpContext, effect: Any) -> None:
    entity = ctx.entity(effect.entity, "effect")
    via = entity.fields.get(effect.via)
    if ctx.op.kind != "update" or via is None or via.entity != ctx.op.entity:
        ctx.fail(f"effect needs '{effect.entity}.{effect.via}' to refer to the target")
    check_where(ctx, entity, effect.where, "effect")
    for name, value in effect.set.items():
        field = entity.fields.get(name)
        if field is None:
            ctx.fail(f"effect sets missing field '{name}'")
        check_values(ctx, field, [value], f"effect on '{entity.name}.{name}':")


CHECK_EFFECT = {
    "set": check_set,
    "assign": check_assign,
    "stamp": check_stamp,
    "transition": check_transition,
    "increment": check_adjust,
    "decrement": check_adjust,
    "record": check_record,
    "update_related": check_update_related,
}
