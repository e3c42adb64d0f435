"""What every semantic check of a spec shares: the error prefix, an operation's error context,
and the helpers both precondition and effect checks use."""

from __future__ import annotations

from collections import deque
from typing import Any, NoReturn

from envmill.tasks.backends.procedural.spec.domain import (
    DomainSpec,
    EntitySpec,
    OperationSpec,
    SpecError,
    ValueSpec,
)
from envmill.tasks.backends.procedural.spec.paths import (
    NUMERIC,
    OperandRef,
    PathError,
    Resolved,
    entity_field,
    resolve_operand,
    resolve_path,
)


def where(spec: DomainSpec, entity: str | None = None, op: str | None = None) -> str:
    """The ``spec 'x', entity 'y', operation 'z'`` prefix of every error message."""
    text = f"spec '{spec.name}'"
    if entity:
        text += f", entity '{entity}'"
    if op:
        text += f", operation '{op}'"
    return text


def reachable_states(entity: EntitySpec) -> set[str]:
    """States reachable from the initial state along the transitions."""
    machine = entity.status
    if machine is None:
        return set()
    seen, queue = {machine.initial}, deque([machine.initial])
    while queue:
        state = queue.popleft()
        for step in machine.transitions:
            if state in step.from_ and step.to not in seen:
                seen.add(step.to)
                queue.append(step.to)
    return seen


class OpContext:
    """Error context of one operation: formats paths and operands into SpecErrors."""

    def __init__(self, spec: DomainSpec, op: OperationSpec) -> None:
        self.spec, self.op = spec, op

    def fail(self, message: str) -> NoReturn:
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


def check_complete(ctx: OpContext, entity: EntitySpec, assigned: set[str]) -> None:
    """A created record needs a value for every field that is not nullable."""
    status = entity.status.field if entity.status else None
    for name, field in entity.fields.items():
        if name in assigned or name == status or field.nullable or field.default is not None:
            continue
        ctx.fail(f"creates '{entity.name}' without a value for field '{name}'")


def check_values(ctx: OpContext, spec: ValueSpec, values: list[Any], role: str) -> None:
    for value in values:
        if value is None and spec.nullable:
            continue
        if spec.type == "enum" and value not in spec.values:
            ctx.fail(f"{role} value '{value}' is not one of {spec.values}; it can never hold")
        if spec.type in NUMERIC and (isinstance(value, bool) or not isinstance(value, int | float)):
            ctx.fail(f"{role} value {value!r} is not a number")
        if spec.type in ("str", "date", "datetime") and not isinstance(value, str):
            ctx.fail(f"{role} value {value!r} is not text")


def status_machine_of(ctx: OpContext, resolved: Resolved) -> EntitySpec | None:
    entity = ctx.spec.entities[resolved.entity]
    if entity.status is not None and entity.status.field == resolved.field:
        return entity
    return None


def check_where(ctx: OpContext, entity: EntitySpec, clauses: dict, role: str) -> None:
    for name, values in clauses.items():
        field = entity_field(entity, name)
        if field is None:
            ctx.fail(f"{role} filters '{entity.name}' on missing field '{name}'")
        check_values(ctx, field, values, f"{role} on '{entity.name}.{name}':")
