"""Resolution of paths and operands in a domain spec, shared by the validator and the compiler.

A path (``target.product_id.stock``) starts at a subject — ``target``, ``new`` or an id argument —
follows ref fields, and ends at a field. An operand is a number, a ``$limit``, an argument or a
path.
Both resolve to a :class:`ValueSpec`-like type so checks and codegen agree on what they denote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from envmill.tasks.backends.procedural.spec.domain import ArgSpec, FieldSpec, ValueSpec

if TYPE_CHECKING:
    from envmill.tasks.backends.procedural.spec.domain import DomainSpec, EntitySpec, OperationSpec

NUMERIC = ("int", "float")
TIMES = ("date", "datetime")


class PathError(ValueError):
    """A path or operand that does not resolve; the message is completed by the caller."""


@dataclass(frozen=True)
class Resolved:
    """A path: its subject, the ref fields followed, and the final entity, field and type."""

    subject: str
    hops: tuple[str, ...]
    entity: str
    field: str
    spec: ValueSpec

    @property
    def handle(self) -> tuple[str, ...]:
        """The key of the entity record the field lives in (subject plus hops)."""
        return (self.subject, *self.hops)


@dataclass(frozen=True)
class OperandRef:
    """An operand: a literal number, a limit, an argument or a path."""

    kind: Literal["const", "limit", "arg", "path"]
    value: float | str
    spec: ValueSpec
    path: Resolved | None = None

    @property
    def at(self) -> Resolved:
        """The resolved path of a ``path`` operand (the only kind that has one)."""
        if self.path is None:
            raise PathError(f"operand {self.value!r} is a {self.kind}, not a path")
        return self.path


def id_spec(entity: str) -> ValueSpec:
    return ValueSpec(type="ref", entity=entity)


def entity_field(entity: EntitySpec, name: str) -> ValueSpec | None:
    """The type of a field, including the implicit ``<entity>_id``."""
    if name == entity.id_field:
        return id_spec(entity.name)
    return entity.fields.get(name)


def find_arg(op: OperationSpec, name: str) -> ArgSpec | None:
    return next((arg for arg in op.args if arg.name == name), None)


def subject_entity(spec: DomainSpec, op: OperationSpec, subject: str) -> str:
    """The entity a path subject denotes, or a PathError."""
    if subject == "target":
        if op.kind != "update":
            raise PathError("'target' is only defined for update operations")
        return op.entity
    if subject == "new":
        if op.kind != "create":
            raise PathError("'new' is only defined for create operations")
        return op.entity
    arg = find_arg(op, subject)
    if arg is None:
        raise PathError(f"unknown argument '{subject}'")
    if arg.type != "ref" or arg.entity not in spec.entities:
        raise PathError(f"argument '{subject}' is not an entity id")
    return arg.entity


def resolve_path(spec: DomainSpec, op: OperationSpec, path: str) -> Resolved:
    """Resolve ``subject.ref*.field``; raises PathError naming the missing piece."""
    parts = path.split(".")
    if len(parts) < 2:
        raise PathError(f"'{path}' is not a path (subject.field)")
    start = spec.entities[subject_entity(spec, op, parts[0])]
    return follow_refs(spec, start, parts[0], parts[1:])


def resolve_record_path(spec: DomainSpec, entity: EntitySpec, path: str) -> Resolved:
    """Resolve ``ref*.field`` from a record of ``entity`` (subject ``record``): ``status``,
    ``flight_id.departs_at``; raises PathError naming the missing piece."""
    return follow_refs(spec, entity, "record", path.split("."))


def follow_refs(spec: DomainSpec, entity: EntitySpec, subject: str, parts: list[str]) -> Resolved:
    """Follow the ref fields ``parts[:-1]`` from ``entity`` and resolve the field ``parts[-1]``."""
    for hop in parts[:-1]:
        field = entity.fields.get(hop)
        if field is None:
            raise PathError(f"missing field '{hop}'")
        if field.type != "ref" or field.entity not in spec.entities:
            raise PathError(f"field '{hop}' of entity '{entity.name}' is not a ref")
        entity = spec.entities[field.entity]
    final = entity_field(entity, parts[-1])
    if final is None:
        raise PathError(f"missing field '{parts[-1]}'")
    return Resolved(subject, tuple(parts[:-1]), entity.name, parts[-1], final)


def resolve_operand(spec: DomainSpec, op: OperationSpec, value: str | int | float) -> OperandRef:
    """Classify an operand and give its type; raises PathError when it names nothing."""
    if isinstance(value, bool):
        raise PathError(f"operand {value!r} is a bool, not a number")
    if isinstance(value, int | float):
        kind = "int" if isinstance(value, int) else "float"
        return OperandRef("const", value, ValueSpec(type=kind, min=value, max=value))
    if value.startswith("$"):
        limit = spec.limits.get(value[1:])
        if limit is None:
            raise PathError(f"unknown limit '{value}'")
        low, high = limit.range
        return OperandRef("limit", value[1:], ValueSpec(type="int", min=low, max=high))
    if "." in value:
        resolved = resolve_path(spec, op, value)
        return OperandRef("path", value, resolved.spec, resolved)
    arg = find_arg(op, value)
    if arg is None:
        raise PathError(f"unknown argument '{value}'")
    return OperandRef("arg", value, arg)


def copy_field_type(field: FieldSpec | ValueSpec) -> dict:
    """The type-related keys of a field, to give an argument the field's type."""
    keys = ("type", "values", "entity", "min", "max", "doc", "faker", "sample")
    return {key: getattr(field, key) for key in keys}


def path_entities(spec: DomainSpec, op: OperationSpec, path: str) -> set[str]:
    """Every entity a path passes through (its subject's and each hop's)."""
    parts = path.split(".")
    entity = spec.entities[subject_entity(spec, op, parts[0])]
    found = {entity.name}
    for hop in parts[1:-1]:
        entity = spec.entities[entity.fields[hop].entity or ""]
        found.add(entity.name)
    return found


def op_entities(spec: DomainSpec, op: OperationSpec) -> set[str]:
    """Every entity an operation touches; a seed that drops one of them drops the operation."""
    found = {op.entity} | {arg.entity for arg in op.args if arg.type == "ref" and arg.entity}
    for item in [*op.preconditions, *op.effects]:
        entity = getattr(item, "entity", None)
        if entity is not None:
            found.add(entity)
        keys = ["path", "left", "right", "of", "by", "times", "limit", "hours", "days"]
        values = [getattr(item, key, None) for key in keys]
        values += list(getattr(item, "assign", {}).values()) if item.kind == "record" else []
        values += [getattr(item, "value", None)] if item.kind != "set" else []
        for value in values:
            if isinstance(value, str) and "." in value:
                found |= path_entities(spec, op, value)
    return found
