"""Semantic validation of a DomainSpec: normalize derived parts, then refuse what cannot compile.

Normalization is idempotent (a dumped and re-validated spec comes out the same): entity names,
titles and plurals, the status field, each operation's entity, and the arguments a query kind or an
update implies. The checks refuse missing entities and fields, enum and status values outside their
sets, unreachable transitions, numeric bounds that contradict declared min/max, duplicate tool
names and malformed invariants, with a :class:`SpecError` naming spec, entity and operation.
"""

from __future__ import annotations

from typing import NoReturn

from envmill.tasks.backends.procedural.spec.check_fill import check_fill_hints
from envmill.tasks.backends.procedural.spec.check_invariants import check_entity_invariants
from envmill.tasks.backends.procedural.spec.check_ops import check_operation
from envmill.tasks.backends.procedural.spec.check_roles import check_roles
from envmill.tasks.backends.procedural.spec.context import reachable_states, where
from envmill.tasks.backends.procedural.spec.domain import (
    ArgSpec,
    DomainSpec,
    EntitySpec,
    FieldSpec,
    OperationSpec,
    SpecError,
)
from envmill.tasks.backends.procedural.spec.paths import NUMERIC, copy_field_type, op_entities


def fail(spec: DomainSpec, entity: str | None, op: str | None, message: str) -> NoReturn:
    raise SpecError(f"{where(spec, entity, op)}: {message}")


def check_domain(spec: DomainSpec) -> None:
    """Normalize ``spec`` in place and raise SpecError at the first problem."""
    for name, entity in spec.entities.items():
        normalize_entity(name, entity)
    for name, limit in spec.limits.items():
        if len(limit.range) != 2 or limit.range[0] > limit.range[1]:
            fail(spec, None, None, f"limit '{name}' needs a range [low, high]")
    for entity in spec.entities.values():
        check_entity(spec, entity)
    check_ref_graph(spec)
    check_roles(spec)
    for entity in spec.entities.values():
        check_entity_invariants(spec, entity)
        check_policies(spec, entity)
    seen: dict[str, str] = {}
    for entity in spec.entities.values():
        for op in entity.operations:
            normalize_operation(spec, entity, op)
            for name in op.names:
                if name in seen or not name.isidentifier() or name.startswith("_"):
                    fail(spec, entity.name, op.name, f"duplicate or invalid tool name '{name}'")
                seen[name] = op.name
            check_operation(spec, entity, op)
    check_coverage(spec)


def check_policies(spec: DomainSpec, entity: EntitySpec) -> None:
    """A policy reads a number field of its entity and chooses between two of its operations."""
    ops = {op.name for op in entity.operations if not op.is_query}
    for policy in entity.policies:
        field = entity.fields.get(policy.field)
        if field is None or field.type not in NUMERIC:
            fail(spec, entity.name, None, f"policy reads '{policy.field}', not a number field")
        for name in (policy.high, policy.low):
            if name not in ops:
                fail(spec, entity.name, None, f"policy names '{name}', not one of its changes")
        if policy.high == policy.low or not policy.why.strip():
            fail(spec, entity.name, None, "a policy needs two operations and a reason")
        for name, values in policy.when.items():
            field = entity.fields.get(name)
            if field is None:
                fail(spec, entity.name, None, f"policy applies when '{name}', not a field")
            unknown = sorted(set(values) - set(field.values)) if field.type == "enum" else []
            if not values or unknown or field.type != "enum":
                what = f"{unknown}, not among {field.values}" if unknown else "no enum values"
                fail(spec, entity.name, None, f"policy applies when '{name}' is {what}")


def plural_of(name: str) -> str:
    if name.endswith("y") and name[-2:-1] not in "aeiou":
        return name[:-1] + "ies"
    if name.endswith(("s", "x", "ch", "sh")):
        return name + "es"
    return name + "s"


def normalize_entity(name: str, entity: EntitySpec) -> None:
    entity.name = name
    entity.title = entity.title or name.replace("_", " ")
    entity.plural = entity.plural or plural_of(name)
    machine = entity.status
    if machine is not None and machine.field not in entity.fields:
        entity.fields[machine.field] = FieldSpec(type="enum", values=list(machine.states))
    for op in entity.operations:
        op.entity = name


def check_entity(spec: DomainSpec, entity: EntitySpec) -> None:
    name = entity.name
    try:
        first, second = entity.id_format.format(n=1), entity.id_format.format(n=2)
    except (KeyError, IndexError, ValueError):
        first = second = ""
    if "{n" not in entity.id_format or first == second:
        fail(spec, name, None, f"id_format '{entity.id_format}' must use {{n}} once")
    for field_name, field in entity.fields.items():
        check_field(spec, entity, field_name, field)
    if entity.label is not None:
        label = entity.fields.get(entity.label)
        if label is None or label.type != "str":
            fail(spec, name, None, f"label '{entity.label}' is not a str field")
    check_machine(spec, entity)
    check_examples(spec, entity)
    if len(entity.count) != 2 or not 1 <= entity.count[0] <= entity.count[1]:
        fail(spec, name, None, "count needs [low, high] with 1 <= low <= high")


def check_examples(spec: DomainSpec, entity: EntitySpec) -> None:
    """An example names plain fields (not the id, the status or a ref) with values they allow."""
    banned = {entity.id_field, entity.status.field if entity.status else ""}
    for example in entity.examples:
        for name, value in example.items():
            field = entity.fields.get(name)
            if field is None or name in banned or field.type == "ref":
                fail(spec, entity.name, None, f"example names '{name}', not a plain field")
            elif field.type == "enum" and value not in field.values:
                fail(spec, entity.name, None, f"example value '{value}' is not a '{name}' choice")


def check_field(spec: DomainSpec, entity: EntitySpec, name: str, field: FieldSpec) -> None:
    ent = entity.name
    if name == entity.id_field:
        fail(spec, ent, None, f"field '{name}' is implicit (the id)")
    if field.type == "ref" and field.entity not in spec.entities:
        fail(spec, ent, None, f"field '{name}' refers to unknown entity '{field.entity}'")
    if field.type == "enum" and not field.values:
        fail(spec, ent, None, f"enum field '{name}' has no values")
    if field.min is not None and field.max is not None and field.min > field.max:
        fail(spec, ent, None, f"field '{name}' has min > max")
    check_fill_hints(spec, entity, name, field)


def check_machine(spec: DomainSpec, entity: EntitySpec) -> None:
    machine = entity.status
    if machine is None:
        return
    name, states = entity.name, set(machine.states)
    field = entity.fields[machine.field]
    if field.type != "enum" or set(field.values) != states:
        fail(spec, name, None, f"status field '{machine.field}' must be enum of the states")
    if machine.initial not in states:
        fail(spec, name, None, f"initial state '{machine.initial}' is not a state")
    reachable = reachable_states(entity)
    for step in machine.transitions:
        for state in [*step.from_, step.to]:
            if state not in states:
                fail(spec, name, None, f"transition names unknown state '{state}'")
        dead = [state for state in step.from_ if state not in reachable]
        if dead:
            fail(
                spec,
                name,
                None,
                f"transition to '{step.to}' starts from state '{dead[0]}', which is unreachable "
                f"from initial state '{machine.initial}'",
            )


def check_ref_graph(spec: DomainSpec) -> None:
    """Refs must form no cycle (the state fill makes referenced entities first), and a
    required entity may not refer to an optional one (which a seed may drop)."""
    for entity in spec.entities.values():
        for name, field in entity.fields.items():
            target = spec.entities.get(field.entity or "")
            if target is not None and target.optional and not entity.optional:
                fail(spec, entity.name, None, f"field '{name}' refers to optional '{target.name}'")
    order = ref_order(spec)
    if len(order) != len(spec.entities):
        stuck = sorted(set(spec.entities) - set(order))
        fail(spec, stuck[0], None, "refs form a cycle")


def ref_order(spec: DomainSpec) -> list[str]:
    """Entities ordered so that every referenced entity comes before its referrers."""
    order: list[str] = []
    pending = dict(spec.entities)
    progress = True
    while pending and progress:
        progress = False
        for name, entity in list(pending.items()):
            deps = {f.entity for f in entity.fields.values() if f.type == "ref"} - {None}
            if deps <= set(order):
                order.append(name)
                del pending[name]
                progress = True
    return order


def normalize_operation(spec: DomainSpec, entity: EntitySpec, op: OperationSpec) -> None:
    """Add the arguments a kind implies and give bare-named arguments their types."""
    implied = implied_args(spec, entity, op)
    given = {arg.name for arg in op.args}
    args = [arg for arg in implied if arg.name not in given] + op.args
    op.args = [arg for arg in args if not arg.optional] + [arg for arg in args if arg.optional]
    for index, arg in enumerate(op.args):
        if arg.type is not None:
            continue
        field = entity.fields.get(arg.name)
        target = arg.name.removesuffix("_id")
        if field is not None:
            keys = copy_field_type(field) | {"nullable": False}
            op.args[index] = ArgSpec.model_validate(
                {"name": arg.name, "optional": arg.optional, **keys}
            )
        elif arg.name.endswith("_id") and target in spec.entities:
            op.args[index] = ArgSpec(
                name=arg.name, type="ref", entity=target, optional=arg.optional
            )
        else:
            fail(spec, entity.name, op.name, f"argument '{arg.name}' has no type")


def implied_args(spec: DomainSpec, entity: EntitySpec, op: OperationSpec) -> list[ArgSpec]:
    args: list[ArgSpec] = []
    if op.kind in ("get", "update"):
        args.append(ArgSpec(name=entity.id_field, type="ref", entity=entity.name))
    if op.kind == "find":
        if entity.label is None:
            fail(spec, entity.name, op.name, "find needs an entity label")
        args.append(ArgSpec(name=entity.label, type="str"))
    if op.kind in ("list", "count", "sum"):
        if op.parent is not None:
            parent = entity.fields.get(op.parent)
            if parent is None or parent.type != "ref":
                fail(spec, entity.name, op.name, f"parent '{op.parent}' is not a ref field")
            args.append(ArgSpec(name=op.parent, type="ref", entity=parent.entity))
        for item in op.filters:
            field = entity.fields.get(item.field)
            if field is None:
                fail(spec, entity.name, op.name, f"filter on missing field '{item.field}'")
            prefix = {"==": "", "<=": "max_", ">=": "min_"}[item.op]
            keys = copy_field_type(field)
            args.append(ArgSpec(name=prefix + item.field, optional=True, **keys))
    return args


def check_coverage(spec: DomainSpec) -> None:
    """Every entity keeps a get tool, a labelled one a find tool; both tool kinds exist."""
    for entity in spec.entities.values():
        kinds = {op.kind for op in entity.operations if not op.optional}
        if "get" not in kinds:
            fail(spec, entity.name, None, "needs a required get operation")
        if entity.label is not None and "find" not in kinds:
            fail(spec, entity.name, None, "has a label but no required find operation")
    optional = {name for name, entity in spec.entities.items() if entity.optional}
    required = [
        op for op in spec.operations() if not op.optional and not op_entities(spec, op) & optional
    ]
    if not any(op.is_query for op in required) or all(op.is_query for op in required):
        fail(spec, None, None, "needs required query and state-change operations")
    if all(entity.optional for entity in spec.entities.values()):
        fail(spec, None, None, "needs at least one required entity")
