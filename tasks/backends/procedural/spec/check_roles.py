"""Semantic checks of roles: declared roles name kept entities, operations name declared roles,
and an ``owned`` rule reads an id of a role's entity.

The acting identity's state attributes and the session tool's name variants live here too, so the
checks can refuse a spec whose own tool names would clash with them.
"""

from __future__ import annotations

from typing import Any

from envmill.tasks.backends.procedural.spec.context import OpContext, where
from envmill.tasks.backends.procedural.spec.domain import DomainSpec, OperationSpec, SpecError

ACTING_ROLE_ATTR = "acting_role"
ACTING_ID_ATTR = "acting_id"
SESSION_TOOL_NAMES = ("get_current_session", "get_session_info", "whoami", "get_signed_in_user")


def check_roles(spec: DomainSpec) -> None:
    """Refuse a role with a bad name or an unknown or optional entity, and tool-name clashes."""
    for name, role in spec.roles.items():
        if not name.isidentifier() or not name.islower():
            raise SpecError(f"{where(spec)}: role '{name}' must be a lowercase identifier")
        if role.entity is None:
            continue
        entity = spec.entities.get(role.entity)
        if entity is None:
            raise SpecError(f"{where(spec)}: role '{name}' names unknown entity '{role.entity}'")
        if entity.optional:
            raise SpecError(
                f"{where(spec, role.entity)}: role '{name}' acts as an optional entity, "
                "which a seed may drop"
            )
    if not spec.roles:
        return
    for op in spec.operations():
        if set(op.names) & set(SESSION_TOOL_NAMES):
            raise SpecError(
                f"{where(spec, op.entity, op.name)}: tool names {SESSION_TOOL_NAMES} are kept "
                "for the generated session tool"
            )


def check_op_roles(ctx: OpContext, op: OperationSpec) -> None:
    """Every role an operation names is declared."""
    if len(set(op.roles)) != len(op.roles):
        ctx.fail(f"roles {op.roles} repeat a role")
    for name in op.roles:
        if name not in ctx.spec.roles:
            declared = sorted(ctx.spec.roles) or "none"
            ctx.fail(f"role '{name}' is not declared (declared roles: {declared})")


def role_entities(spec: DomainSpec) -> set[str]:
    """The entities some role acts as."""
    return {role.entity for role in spec.roles.values() if role.entity}


def check_owned(ctx: OpContext, pre: Any) -> None:
    """``owned`` needs a role with an entity and a path or argument holding an id of it."""
    entities = role_entities(ctx.spec)
    if not entities:
        ctx.fail("precondition 'owned' needs a role with an entity (roles: {name: {entity}})")
    ref = ctx.operand(pre.path, "precondition 'owned' reads", numeric=False)
    if ref.spec.type != "ref" or ref.spec.entity not in entities:
        ctx.fail(
            f"precondition 'owned' path '{pre.path}' does not end in an id of a role's entity "
            f"({', '.join(sorted(entities))})"
        )
