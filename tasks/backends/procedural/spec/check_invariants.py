"""Checks of entity invariants (``count``, ``compare``, ``implies``, ``filled``, ``order``): every
path resolves, listed values fit their field, compared operands are both numbers or both times, and
a count names a real reference back to the entity. A malformed invariant raises SpecError naming
spec, entity and invariant (its position and kind)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from envmill.tasks.backends.procedural.spec.domain import (
    DomainSpec,
    EntitySpec,
    SpecError,
    ValueSpec,
)
from envmill.tasks.backends.procedural.spec.paths import (
    NUMERIC,
    TIMES,
    PathError,
    resolve_record_path,
)

NOW = "now"


def check_entity_invariants(spec: DomainSpec, entity: EntitySpec) -> None:
    """Raise SpecError for the first invariant of ``entity`` that cannot be checked."""
    for index, invariant in enumerate(entity.invariants, start=1):
        problem = condition_problem(spec, entity, invariant.when, "when")
        problem = problem or KIND_CHECKS[invariant.kind](spec, entity, invariant)
        if problem:
            raise SpecError(
                f"spec '{spec.name}', entity '{entity.name}', "
                f"invariant {index} ({invariant.kind}): {problem}"
            )


def condition_problem(
    spec: DomainSpec, entity: EntitySpec, condition: dict[str, list[Any]], key: str
) -> str | None:
    """A ``{path: [values]}`` condition: each path resolves and each value fits its field."""
    for path, values in condition.items():
        try:
            field = resolve_record_path(spec, entity, path).spec
        except PathError as exc:
            return f"{key} path '{path}': {exc}"
        problem = values_problem(field, values)
        if problem:
            return f"{key} path '{path}' {problem}"
    return None


def values_problem(field: ValueSpec, values: list[Any]) -> str | None:
    if not values:
        return "lists no values"
    for value in values:
        if value is None:
            if not field.nullable:
                return "allows null, but the field is not nullable"
        elif field.type == "enum" and value not in field.values:
            return f"names '{value}', which is not one of {', '.join(field.values)}"
        elif field.type in NUMERIC and (isinstance(value, bool) or isinstance(value, str)):
            return f"gives {value!r} for a number field"
        elif field.type == "bool" and not isinstance(value, bool):
            return f"gives {value!r} for a bool field"
    return None


def count_problem(spec: DomainSpec, entity: EntitySpec, invariant: Any) -> str | None:
    counted = spec.entities.get(invariant.entity)
    if counted is None:
        return f"counts unknown entity '{invariant.entity}'"
    via = counted.fields.get(invariant.via)
    if via is None or via.type != "ref" or via.entity != entity.name:
        return f"field '{invariant.via}' of '{counted.name}' is not a ref to '{entity.name}'"
    where = {name: values for name, values in invariant.where.items()}
    problem = condition_problem(spec, counted, where, "where")
    if problem:
        return problem
    targets = [invariant.field, invariant.exactly, invariant.at_least, invariant.at_most]
    if sum(target is not None for target in targets) != 1:
        return "needs exactly one of field, exactly, at_least and at_most"
    if (invariant.total is not None or invariant.sum_of is not None) and invariant.field is None:
        return "total and sum_of are only used with field"
    if invariant.total is not None and invariant.sum_of is not None:
        return "a field is a count left (total) or a sum (sum_of), not both"
    summed = counted.fields.get(invariant.sum_of or "")
    if invariant.sum_of is not None and (summed is None or summed.type not in NUMERIC):
        return f"sum_of '{invariant.sum_of}' is not a number field of '{counted.name}'"
    for name in (invariant.field, invariant.total):
        field = entity.fields.get(name or "")
        if name is not None and (field is None or field.type not in NUMERIC):
            return f"'{name}' is not a number field of '{entity.name}'"
    return None


def operand_kind(spec: DomainSpec, entity: EntitySpec, value: Any) -> str:
    """``number`` or ``time`` (``field`` appended when the operand reads a record)."""
    if isinstance(value, bool):
        raise PathError(f"operand {value!r} is a bool")
    if isinstance(value, int | float):
        return "number"
    if value == NOW:
        return "time"
    field = resolve_record_path(spec, entity, value).spec
    if field.type in NUMERIC:
        return "number field"
    if field.type in TIMES:
        return "time field"
    raise PathError(f"'{value}' is neither a number nor a time (it is {field.type})")


def compare_problem(spec: DomainSpec, entity: EntitySpec, invariant: Any) -> str | None:
    try:
        left = operand_kind(spec, entity, invariant.left)
        right = operand_kind(spec, entity, invariant.right)
    except PathError as exc:
        return str(exc)
    if left.split()[0] != right.split()[0]:
        return f"compares a {left.split()[0]} with a {right.split()[0]}"
    if "field" not in left + right:
        return "compares no field"
    if invariant.hours is not None and not right_is_datetime(spec, entity, invariant.right):
        return "hours move only a datetime (or now) on the right"
    return None


def right_is_datetime(spec: DomainSpec, entity: EntitySpec, value: Any) -> bool:
    """``now`` or a datetime field: what an ``hours`` shift can move (a date has no hours)."""
    return value == NOW or resolve_record_path(spec, entity, value).spec.type == "datetime"


def implies_problem(spec: DomainSpec, entity: EntitySpec, invariant: Any) -> str | None:
    if not invariant.then:
        return "then lists no paths"
    return condition_problem(spec, entity, invariant.then, "then")


def filled_problem(spec: DomainSpec, entity: EntitySpec, invariant: Any) -> str | None:
    field = entity.fields.get(invariant.field)
    if field is None:
        return f"missing field '{invariant.field}'"
    if not field.nullable:
        return f"field '{invariant.field}' is not nullable, so it is always filled"
    return None


def order_problem(spec: DomainSpec, entity: EntitySpec, invariant: Any) -> str | None:
    """``via`` is a ref (the parent), ``by`` an enum (the order), ``time`` a date or datetime."""
    wanted = {invariant.via: ("ref",), invariant.by: ("enum",), invariant.time: TIMES}
    for name, types in wanted.items():
        field = entity.fields.get(name)
        if field is None or field.type not in types:
            return f"'{name}' is not a {' or '.join(types)} field of '{entity.name}'"
    return None


KIND_CHECKS: dict[str, Callable[[DomainSpec, EntitySpec, Any], str | None]] = {
    "count": count_problem,
    "compare": compare_problem,
    "implies": implies_problem,
    "filled": filled_problem,
    "order": order_problem,
}
