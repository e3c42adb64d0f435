"""Semantic checks of one operation: its arguments, preconditions, effects and texts.

A precondition that can never hold (a status outside the machine, a bound contradicting a field's
declared min/max, a transition from no reachable state) is refused here rather than discovered as a
scenario that never certifies.
"""

from __future__ import annotations

import string
from typing import Any

from envmill.tasks.backends.procedural.spec.check_effects import CHECK_EFFECT
from envmill.tasks.backends.procedural.spec.check_roles import check_op_roles, check_owned
from envmill.tasks.backends.procedural.spec.context import (
    OpContext,
    check_complete,
    check_values,
    check_where,
    reachable_states,
    status_machine_of,
)
from envmill.tasks.backends.procedural.spec.domain import (
    DomainSpec,
    EntitySpec,
    OperationSpec,
)
from envmill.tasks.backends.procedural.spec.paths import (
    NUMERIC,
    TIMES,
    OperandRef,
    entity_field,
    find_arg,
)


def check_operation(spec: DomainSpec, entity: EntitySpec, op: OperationSpec) -> None:
    ctx = OpContext(spec, op)
    for arg in op.args:
        check_arg(ctx, spec, arg)
    check_op_roles(ctx, op)
    if op.is_query:
        check_query(ctx, entity, op)
    elif op.kind == "update" and not op.effects:
        ctx.fail("an update needs at least one effect")
    for pre in op.preconditions:
        CHECK_PRE[pre.kind](ctx, pre)
    for effect in op.effects:
        CHECK_EFFECT[effect.kind](ctx, effect)
    if op.kind == "create":
        paths = [getattr(effect, "path", "") for effect in op.effects]
        assigned = {path.split(".", 1)[1] for path in paths if path.startswith("new.")}
        check_complete(ctx, entity, assigned | {a.name for a in op.args})
    check_texts(ctx, op)


def check_arg(ctx: OpContext, spec: DomainSpec, arg: Any) -> None:
    if arg.type == "ref" and arg.entity not in spec.entities:
        ctx.fail(f"argument '{arg.name}' refers to unknown entity '{arg.entity}'")
    if arg.type == "enum" and not arg.values:
        ctx.fail(f"enum argument '{arg.name}' has no values")
    if (arg.per_hour is None) != (arg.since is None):
        ctx.fail(f"argument '{arg.name}' needs both per_hour and since, or neither")
    if arg.since is not None:
        check_time(ctx, arg.since, f"argument '{arg.name}' counts since")
    if arg.share is not None or arg.share_of is not None:
        check_share(ctx, arg)


def check_share(ctx: OpContext, arg: Any) -> None:
    """``share`` of ``share_of``: [low, high] with 0 <= low <= high, or such ranges keyed by
    the values of the enum ``share_by`` names."""
    if arg.share is None or arg.share_of is None:
        ctx.fail(f"argument '{arg.name}' needs both share and share_of, or neither")
    ctx.operand(arg.share_of, f"argument '{arg.name}' is a share of")  # a number field
    if isinstance(arg.share, dict) != (arg.share_by is not None):
        ctx.fail(f"argument '{arg.name}' takes shares by value with share_by, or one share")
    ranges = arg.share if isinstance(arg.share, dict) else {"": arg.share}
    for key, window in ranges.items():
        if len(window) != 2 or not 0 <= window[0] <= window[1]:
            ctx.fail(f"argument '{arg.name}' share {key or ''} {window} is not [low, high] >= 0")
    if arg.share_by is None:
        return
    by = ctx.operand(arg.share_by, f"argument '{arg.name}' picks its share by", numeric=False)
    if by.spec.type != "enum" or by.spec.nullable or not set(ranges) <= set(by.spec.values):
        ctx.fail(f"argument '{arg.name}' shares by '{arg.share_by}': not a set enum of those keys")


def check_query(ctx: OpContext, entity: EntitySpec, op: OperationSpec) -> None:
    if op.preconditions or op.effects:
        ctx.fail("a query has no preconditions or effects")
    if op.kind == "sum":
        field = entity.fields.get(op.field or "")
        if field is None or field.type not in NUMERIC:
            ctx.fail(f"sum over missing or non-numeric field '{op.field}'")
    if op.group_by is not None and op.group_by not in entity.fields:
        ctx.fail(f"group_by missing field '{op.group_by}'")


def check_field_in(ctx: OpContext, pre: Any) -> None:
    resolved = ctx.path(pre.path, "precondition reads")
    check_values(ctx, resolved.spec, pre.values, f"precondition on '{pre.path}':")
    owner = status_machine_of(ctx, resolved)
    if owner is None:
        return
    live = reachable_states(owner)
    if pre.kind == "field_in":
        holds = [value for value in pre.values if value in live]
    else:
        holds = live - set(pre.values)
    if not holds:
        ctx.fail(f"precondition on '{pre.path}' can never hold: no reachable state qualifies")


def interval(ref: OperandRef) -> tuple[float | None, float | None]:
    return ref.spec.min, ref.spec.max


def check_compare(ctx: OpContext, pre: Any) -> None:
    sides = [ctx.operand(v, "precondition reads", numeric=False) for v in (pre.left, pre.right)]
    kinds = [side.spec.type for side in sides]
    if any(kind in TIMES for kind in kinds):
        if kinds[0] != kinds[1]:
            ctx.fail(f"precondition compares a {kinds[0]} with a {kinds[1]}")
        if any(side.spec.nullable or getattr(side.spec, "optional", False) for side in sides):
            ctx.fail(
                f"precondition '{pre.left} {pre.op} {pre.right}' reads a time that may be missing"
            )
        return
    left = ctx.operand(pre.left, "precondition reads")
    right = ctx.operand(pre.right, "precondition reads")
    (l_lo, l_hi), (r_lo, r_hi) = interval(left), interval(right)
    never = {
        "<": l_lo is not None and r_hi is not None and l_lo >= r_hi,
        "<=": l_lo is not None and r_hi is not None and l_lo > r_hi,
        ">": l_hi is not None and r_lo is not None and l_hi <= r_lo,
        ">=": l_hi is not None and r_lo is not None and l_hi < r_lo,
        "==": (l_hi is not None and r_lo is not None and l_hi < r_lo)
        or (l_lo is not None and r_hi is not None and l_lo > r_hi),
        "!=": l_lo is not None and l_lo == l_hi == r_lo == r_hi,
    }[pre.op]
    if never:
        ctx.fail(
            f"precondition '{pre.left} {pre.op} {pre.right}' can never hold given the declared "
            f"bounds [{l_lo}, {l_hi}] and [{r_lo}, {r_hi}]"
        )


def check_count_below(ctx: OpContext, pre: Any) -> None:
    counted = ctx.entity(pre.entity, "precondition")
    via = counted.fields.get(pre.via)
    if via is None or via.type != "ref":
        ctx.fail(f"precondition counts '{pre.entity}' by missing ref field '{pre.via}'")
    of = ctx.operand(pre.of, "precondition reads", numeric=False)
    if of.spec.type != "ref" or of.spec.entity != via.entity:
        ctx.fail(f"precondition compares '{pre.via}' with '{pre.of}', not a {via.entity} id")
    check_where(ctx, counted, pre.where, "precondition")
    limit = ctx.operand(pre.limit, "precondition reads")
    if limit.spec.max is not None and limit.spec.max <= 0:
        ctx.fail(f"precondition count below {pre.limit} can never hold")


def check_unique(ctx: OpContext, pre: Any) -> None:
    entity = ctx.entity(pre.entity, "precondition")
    if entity_field(entity, pre.field) is None:
        ctx.fail(f"precondition reads missing field '{pre.field}'")
    if find_arg(ctx.op, pre.arg) is None:
        ctx.fail(f"precondition reads unknown argument '{pre.arg}'")


def check_distinct(ctx: OpContext, pre: Any) -> None:
    for name in (pre.left, pre.right):
        if find_arg(ctx.op, name) is None:
            ctx.fail(f"precondition reads unknown argument '{name}'")


def check_time(ctx: OpContext, value: str, role: str) -> None:
    ref = ctx.operand(value, role, numeric=False)
    if ref.spec.type not in TIMES:
        ctx.fail(f"{role} '{value}' is not a date or datetime")


def check_window(ctx: OpContext, pre: Any) -> None:
    check_time(ctx, pre.path, "precondition reads")
    amount = pre.hours if pre.kind == "hours_before" else pre.days
    ctx.operand(amount, "precondition reads")


def check_time_side(ctx: OpContext, pre: Any) -> None:
    """An ``hours`` allowance is an early start to a moment: ``in_past`` on a datetime only."""
    check_time(ctx, pre.value, "precondition reads")
    if pre.hours is None:
        return
    if pre.kind != "in_past":
        ctx.fail("precondition in_future takes no hours (hours_before says how far ahead)")
    if ctx.operand(pre.value, "precondition reads", numeric=False).spec.type != "datetime":
        ctx.fail(f"precondition in_past allows hours early only on a datetime, not '{pre.value}'")
    ctx.operand(pre.hours, "precondition reads")


def check_exists(ctx: OpContext, pre: Any) -> None:
    arg = find_arg(ctx.op, pre.arg)
    if arg is None or arg.type != "ref":
        ctx.fail(f"precondition 'exists' needs an id argument, not '{pre.arg}'")


CHECK_PRE = {
    "exists": check_exists,
    "owned": check_owned,
    "field_in": check_field_in,
    "field_not_in": check_field_in,
    "compare": check_compare,
    "count_below": check_count_below,
    "unique": check_unique,
    "distinct": check_distinct,
    "hours_before": check_window,
    "within_days": check_window,
    "in_future": check_time_side,
    "in_past": check_time_side,
}


def check_texts(ctx: OpContext, op: OperationSpec) -> None:
    """Placeholders in messages and phrases must name arguments (``.label`` a labelled id)."""
    names = {arg.name for arg in op.args} | ({"new_id"} if op.kind == "create" else set())
    texts = [op.message or "", *op.phrases] + [p.rule or "" for p in op.preconditions]
    limits = {f"{name}" for name in ctx.spec.limits}
    for text in texts:
        for _, field, _, _ in string.Formatter().parse(text):
            if not field:
                continue
            base, _, suffix = field.partition(".")
            if base in limits and not suffix:
                continue
            arg = find_arg(op, base)
            if base not in names:
                ctx.fail(f"text placeholder '{{{field}}}' names no argument")
            if suffix and (
                suffix != "label"
                or arg is None
                or arg.type != "ref"
                or ctx.spec.entities[arg.entity or ""].label is None
            ):
                ctx.fail(f"text placeholder '{{{field}}}' has no label")
    if not op.is_query and len(op.phrases) < 2:
        ctx.fail("a state change needs at least two phrases")
