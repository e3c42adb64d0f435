"""Semantic checks of one operation: its arguments, preconditions, effects and texts.

A precondition that can never hold (a status outside the machine, a bound contradicting a field's
declared min/max, a transition from no reachable state) is refused here rather than discovered as a
scenario that never certifies.
"""

from __future__ import annotations

import string
from typing import Any

from envmill.schemas.domain import (
    DomainSpec,
    EntitySpec,
    OperationSpec,
    SpecError,
    ValueSpec,
)
from envmill.schemas.domain_check import reachable_states, where
from envmill.schemas.domain_paths import (
    NUMERIC,
    TIMES,
    OperandRef,
    PathError,
    Resolved,
    entity_field,
    find_arg,
    resolve_operand,
    resolve_path,
)


class _Op:
    """Error context of one operation: formats paths and operands into SpecErrors."""

    def __init__(self, spec: DomainSpec, op: OperationSpec) -> None:
        self.spec, self.op = spec, op

    def fail(self, message: str) -> None:
        raise SpecError(f"{where(self.spec, self.op.entity, self.op.name)}: {message}")

    def path(self, path: str, role: str) -> Resolved:
        if path.startswith("new.") and not role.startswith("effect sets"):
            self.fail(f"{role} '{path}': 'new' exists only once the effects run")
        try:
            return resolve_path(self.spec, self.op, path)
        except PathError as exc:
            self.fail(f"{role} {exc}")
            raise  # unreachable; keeps type checkers content

    def operand(self, value: Any, role: str, numeric: bool = True) -> OperandRef:
        try:
            ref = resolve_operand(self.spec, self.op, value)
        except PathError as exc:
            self.fail(f"{role} {exc}")
            raise
        if numeric and ref.spec.type not in NUMERIC:
            self.fail(f"{role} operand '{value}' is not a number")
        if numeric and (ref.spec.nullable or getattr(ref.spec, "optional", False)):
            self.fail(f"{role} operand '{value}' may be missing (nullable or optional)")
        return ref

    def entity(self, name: str, role: str) -> EntitySpec:
        entity = self.spec.entities.get(name)
        if entity is None:
            self.fail(f"{role} names unknown entity '{name}'")
        return entity


def check_operation(spec: DomainSpec, entity: EntitySpec, op: OperationSpec) -> None:
    ctx = _Op(spec, op)
    for arg in op.args:
        if arg.type == "ref" and arg.entity not in spec.entities:
            ctx.fail(f"argument '{arg.name}' refers to unknown entity '{arg.entity}'")
        if arg.type == "enum" and not arg.values:
            ctx.fail(f"enum argument '{arg.name}' has no values")
    if op.is_query:
        check_query(ctx, entity, op)
    elif op.kind == "update" and not op.effects:
        ctx.fail("an update needs at least one effect")
    for pre in op.preconditions:
        CHECK_PRE[pre.kind](ctx, pre)
    from envmill.schemas.domain_check_effects import CHECK_EFFECT

    for effect in op.effects:
        CHECK_EFFECT[effect.kind](ctx, effect)
    if op.kind == "create":
        paths = [getattr(effect, "path", "") for effect in op.effects]
        assigned = {path.split(".", 1)[1] for path in paths if path.startswith("new.")}
        check_complete(ctx, entity, assigned | {a.name for a in op.args})
    check_texts(ctx, op)


def check_query(ctx: _Op, entity: EntitySpec, op: OperationSpec) -> None:
    if op.preconditions or op.effects:
        ctx.fail("a query has no preconditions or effects")
    if op.kind == "sum":
        field = entity.fields.get(op.field or "")
        if field is None or field.type not in NUMERIC:
            ctx.fail(f"sum over missing or non-numeric field '{op.field}'")
    if op.group_by is not None and op.group_by not in entity.fields:
        ctx.fail(f"group_by missing field '{op.group_by}'")


def check_complete(ctx: _Op, entity: EntitySpec, assigned: set[str]) -> None:
    """A created record needs a value for every field that is not nullable."""
    status = entity.status.field if entity.status else None
    for name, field in entity.fields.items():
        if name in assigned or name == status or field.nullable or field.default is not None:
            continue
        ctx.fail(f"creates '{entity.name}' without a value for field '{name}'")


def check_values(ctx: _Op, spec: ValueSpec, values: list[Any], role: str) -> None:
    for value in values:
        if value is None and spec.nullable:
            continue
        if spec.type == "enum" and value not in spec.values:
            ctx.fail(f"{role} value '{value}' is not one of {spec.values}; it can never hold")
        if spec.type in NUMERIC and (isinstance(value, bool) or not isinstance(value, int | float)):
            ctx.fail(f"{role} value {value!r} is not a number")
        if spec.type in ("str", "date", "datetime") and not isinstance(value, str):
            ctx.fail(f"{role} value {value!r} is not text")


def status_machine_of(ctx: _Op, resolved: Resolved) -> EntitySpec | None:
    entity = ctx.spec.entities[resolved.entity]
    if entity.status is not None and entity.status.field == resolved.field:
        return entity
    return None


def check_field_in(ctx: _Op, pre: Any) -> None:
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


def check_compare(ctx: _Op, pre: Any) -> None:
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


def check_count_below(ctx: _Op, pre: Any) -> None:
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


def check_where(ctx: _Op, entity: EntitySpec, clauses: dict, role: str) -> None:
    for name, values in clauses.items():
        field = entity_field(entity, name)
        if field is None:
            ctx.fail(f"{role} filters '{entity.name}' on missing field '{name}'")
        check_values(ctx, field, values, f"{role} on '{entity.name}.{name}':")


def check_unique(ctx: _Op, pre: Any) -> None:
    entity = ctx.entity(pre.entity, "precondition")
    if entity_field(entity, pre.field) is None:
        ctx.fail(f"precondition reads missing field '{pre.field}'")
    if find_arg(ctx.op, pre.arg) is None:
        ctx.fail(f"precondition reads unknown argument '{pre.arg}'")


def check_distinct(ctx: _Op, pre: Any) -> None:
    for name in (pre.left, pre.right):
        if find_arg(ctx.op, name) is None:
            ctx.fail(f"precondition reads unknown argument '{name}'")


def check_time(ctx: _Op, value: str, role: str) -> None:
    ref = ctx.operand(value, role, numeric=False)
    if ref.spec.type not in TIMES:
        ctx.fail(f"{role} '{value}' is not a date or datetime")


def check_window(ctx: _Op, pre: Any) -> None:
    check_time(ctx, pre.path, "precondition reads")
    amount = pre.hours if pre.kind == "hours_before" else pre.days
    ctx.operand(amount, "precondition reads")


def check_exists(ctx: _Op, pre: Any) -> None:
    arg = find_arg(ctx.op, pre.arg)
    if arg is None or arg.type != "ref":
        ctx.fail(f"precondition 'exists' needs an id argument, not '{pre.arg}'")


CHECK_PRE = {
    "exists": check_exists,
    "field_in": check_field_in,
    "field_not_in": check_field_in,
    "compare": check_compare,
    "count_below": check_count_below,
    "unique": check_unique,
    "distinct": check_distinct,
    "hours_before": check_window,
    "within_days": check_window,
    "in_future": lambda ctx, pre: check_time(ctx, pre.value, "precondition reads"),
    "in_past": lambda ctx, pre: check_time(ctx, pre.value, "precondition reads"),
}


def check_texts(ctx: _Op, op: OperationSpec) -> None:
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
                or ctx.spec.entities[arg.entity].label is None
            ):
                ctx.fail(f"text placeholder '{{{field}}}' has no label")
    if not op.is_query and len(op.phrases) < 2:
        ctx.fail("a state change needs at least two phrases")
