"""Checks of the state-fill hints on entity fields (``after``, ``at_most``, ``derive``, per-status
values, ``claims`` and ``follows``): a hint that names nothing would only fail at fill time."""

from __future__ import annotations

from envmill.tasks.backends.procedural.spec.domain import (
    DERIVE,
    DIFFERENCE,
    DomainSpec,
    EntitySpec,
    FieldSpec,
    SpecError,
)
from envmill.tasks.backends.procedural.spec.paths import NUMERIC, TIMES


def check_fill_hints(spec: DomainSpec, entity: EntitySpec, name: str, field: FieldSpec) -> None:
    """Raise SpecError (naming spec, entity and field) for a fill hint that cannot apply."""
    where = f"spec '{spec.name}', entity '{entity.name}': field '{name}'"
    problem = _hint_problem(spec, entity, field)
    if problem:
        raise SpecError(f"{where} {problem}")


def _hint_problem(spec: DomainSpec, entity: EntitySpec, field: FieldSpec) -> str | None:
    base = entity.fields.get(field.after or "")
    if field.after is not None and (base is None or base.type not in TIMES):
        return f"fills after missing date field '{field.after}'"
    if field.months is not None and (field.after is None or field.type != "date"):
        return "counts whole months but is not a date filled after another"
    cap = entity.fields.get(field.at_most or "")
    if field.at_most is not None and (
        cap is None or cap.type not in NUMERIC or field.type not in NUMERIC
    ):
        return f"is capped by missing numeric field '{field.at_most}'"
    if field.derive is not None and (problem := _derive_problem(spec, entity, field)):
        return problem
    by = entity.fields.get(field.scale.by) if field.scale else None
    if field.scale is not None and (
        field.derive is None or by is None or set(field.scale.factors) != set(by.values)
    ):
        return f"scales a derive by '{field.scale.by}', not an own enum with a factor each"
    states = entity.status.states if entity.status else []
    for status in [*field.by_status, *field.set_when, *field.value_when, *field.claims]:
        if status not in states:
            return f"names unknown status '{status}'"
    if field.set_when and not field.nullable:
        return "has set_when but is not nullable"
    return _link_problem(spec, field, states)


def _derive_problem(spec: DomainSpec, entity: EntitySpec, field: FieldSpec) -> str | None:
    """A number from a ref's field (or two own ones), a ref from a path of refs to its entity."""
    text = field.derive or ""
    if field.type == "ref" and ref_path_entity(spec, entity, text) != field.entity:
        return f"derives a {field.entity} from '{text}', not a path of refs to one"
    if field.type != "ref" and (field.type not in NUMERIC or not _derive_ok(spec, entity, text)):
        return f"derives a number from unknown '{text}'"
    return None


def ref_path_entity(spec: DomainSpec, entity: EntitySpec, path: str) -> str | None:
    """The entity ``claim_id.policy_id.policyholder_id`` ends at, each step a ref field of the
    record before it; None when a step is not one."""
    at: EntitySpec | None = entity
    name = None
    for step in path.split("."):
        field = at.fields.get(step) if at is not None else None
        if field is None or field.type != "ref":
            return None
        name, at = field.entity, spec.entities.get(field.entity or "")
    return name


def _derive_ok(spec: DomainSpec, entity: EntitySpec, text: str) -> bool:
    """``product_id.price * quantity``: a ref field, a field of its entity, a local number."""
    less = DIFFERENCE.match(text)
    if less is not None:  # two own number fields, neither derived itself (no cycle, no self)
        own = [entity.fields.get(name) for name in less.groups()]
        return all(f is not None and f.type in NUMERIC and f.derive is None for f in own)
    match = DERIVE.match(text)
    if match is None:
        return False
    ref = entity.fields.get(match.group(1))
    source = spec.entities.get(ref.entity or "") if ref is not None else None
    if source is None or match.group(2) not in source.fields:
        return False
    factor = entity.fields.get(match.group(3) or "")
    return match.group(3) is None or (factor is not None and factor.type in NUMERIC)


def _link_problem(spec: DomainSpec, field: FieldSpec, states: list[str]) -> str | None:
    """``claims`` / ``follows`` need a ref to an entity with a status machine and real states."""
    if not field.claims and not field.follows:
        return None
    parent = spec.entities.get(field.entity or "")
    if field.type != "ref" or parent is None or parent.status is None:
        return "links statuses but does not refer to an entity with a status machine"
    parent_states = parent.status.states
    for value in [*field.claims.values(), *field.follows]:
        if value not in parent_states:
            return f"names unknown status '{value}' of entity '{parent.name}'"
    for value in field.follows.values():
        if value not in states:
            return f"names unknown status '{value}'"
    return None
