"""Roles in the generated code: the acting identity's state attributes, the role check at the top
of a restricted tool, the ``owned`` precondition, the session tool, and their rules in words."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envmill.tasks.backends.procedural.codegen.scope import to_single_quotes
from envmill.tasks.backends.procedural.codegen.text import docstring, error_return, lit
from envmill.tasks.backends.procedural.spec.check_roles import ACTING_ID_ATTR, ACTING_ROLE_ATTR
from envmill.tasks.backends.procedural.spec.paths import resolve_operand
from envmill.tasks.core.facts import join_words
from envmill.tasks.core.instructions import tool_clause

if TYPE_CHECKING:
    from envmill.tasks.backends.procedural.codegen.scope import OpScope
    from envmill.tasks.backends.procedural.plan import EnvPlan, ToolPlan


def default_role(plan: EnvPlan) -> str:
    """The role an empty state acts as: the first role without an entity (staff), else the first."""
    free = [name for name, role in plan.roles.items() if not role.entity]
    return (free or list(plan.roles))[0]


def acting_init_lines(plan: EnvPlan) -> list[str]:
    """``__init__`` lines creating the acting identity (DESIGN §3.1: no hidden state)."""
    if not plan.roles:
        return []
    return [
        f"self.{ACTING_ROLE_ATTR}: str = {lit(default_role(plan))}",
        f"self.{ACTING_ID_ATTR}: str | None = None",
    ]


def words_of_roles(names: list[str]) -> str:
    said = [name.replace("_", " ") for name in names]
    if len(said) <= 1:
        return "".join(said)
    return ", ".join(said[:-1]) + f" and {said[-1]}"


def role_rule(plan: EnvPlan, tool: ToolPlan) -> str | None:
    """ "Only agents may dispatch a booked shipment." for a restricted tool, in the words of
    what it does, not its name ("hand to network"); else None."""
    parts = role_parts(plan, tool)
    return f"Only {parts[0]} may {parts[1]}." if parts else None


def role_parts(plan: EnvPlan, tool: ToolPlan) -> tuple[str, str] | None:
    """Who may use a restricted tool and what it does: ("agents", "dispatch a booked
    shipment"); None for a tool every role may use."""
    allowed = plan.allowed_roles(tool.op)
    if not tool.op.roles or allowed == list(plan.roles):
        return None
    return words_of_roles([_people(name) for name in allowed]), tool_clause(tool.name, tool.op.doc)


def who_may_rules(plan: EnvPlan) -> list[str]:
    """One rule per group of roles for all the tools only they may use: "Only staff may open
    an account, dispatch a booked shipment or record a delivery." A line per tool read as a
    flat list of "Only staff may …" (round 49)."""
    acts: dict[str, list[str]] = {}
    for tool in plan.tools:
        parts = role_parts(plan, tool)
        if parts and parts[1] not in acts.get(parts[0], []):
            acts.setdefault(parts[0], []).append(parts[1])
    return [f"Only {people} may {join_words(clauses, 'or')}." for people, clauses in acts.items()]


def _people(role: str) -> str:
    """ "agents", "dispatchers", "staff", "the front desk": a role as people are named."""
    words = role.replace("_", " ")
    if words.endswith(("staff", "desk", "office", "team")):
        return words if words.endswith("staff") else f"the {words}"
    return words if words.endswith("s") else f"{words}s"


def role_check_lines(plan: EnvPlan, tool: ToolPlan) -> list[str]:
    """The permission check that opens a restricted tool: other roles get an error naming them."""
    if role_rule(plan, tool) is None:
        return []
    allowed = plan.allowed_roles(tool.op)
    text = (
        f"Permission denied: the signed-in role '{{self.{ACTING_ROLE_ATTR}}}' may not use "
        f"{tool.name}; only {words_of_roles(allowed)} may"
    )
    return [
        f"if self.{ACTING_ROLE_ATTR} not in {lit(tuple(allowed))}:",
        f"    {error_return('f' + lit(text))}",
    ]


def pre_owned(scope: OpScope, pre: Any) -> list[str]:
    """A role acting as a record (a customer) may act only on what that record owns."""
    ref = resolve_operand(scope.spec, scope.op, pre.path)
    expr = scope.operand(pre.path)
    owner = scope.plan.entity(ref.spec.entity or "").title
    roles = tuple(scope.plan.entity_roles)
    text = (
        f"Permission denied: {{self.{ACTING_ROLE_ATTR}}} {{self.{ACTING_ID_ATTR}}} may act only "
        f"on their own records; this one belongs to {owner} {{{to_single_quotes(expr)}}}"
    )
    return [
        f"if self.{ACTING_ROLE_ATTR} in {lit(roles)} and {expr} != self.{ACTING_ID_ATTR}:",
        f"    {error_return('f' + lit(text))}",
    ]


def owned_words(scope: OpScope, pre: Any) -> str:
    ref = resolve_operand(scope.spec, scope.op, pre.path)
    owner = scope.plan.entity(ref.spec.entity or "").title
    roles = words_of_roles(scope.plan.entity_roles)
    return f"A signed-in {roles} may act only on their own records (the {owner} must be them)"


def roles_rules(plan: EnvPlan) -> list[str]:
    """The business rules saying who may act and where the acting identity is kept."""
    if not plan.roles:
        return []
    parts = [
        words_of_roles([name]) + (f" ({role.doc})" if role.doc else "")
        for name, role in plan.roles.items()
    ]
    return [
        "Who may act: " + "; ".join(parts) + ".",
        "Check who is signed in before acting for them: a signed-in person acts as their own "
        "record, and staff act for anyone.",
    ]


def session_tool_lines(plan: EnvPlan) -> list[str]:
    """The query tool reporting the acting identity."""
    if plan.session_tool is None:
        return []
    summary = "Show who is signed in: the acting role and the id of the record it acts as."
    body = [" ".join(roles_rules(plan)[:1])]
    data = f'{{"role": self.{ACTING_ROLE_ATTR}, "acting_id": self.{ACTING_ID_ATTR}}}'
    return [
        f"def {plan.session_tool}(self) -> dict:",
        *["    " + line if line else "" for line in docstring(summary, body, [], 1)],
        f'    return {{"success": True, "data": {data}}}',
    ]
