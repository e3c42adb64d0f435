"""Every seeded decision for one environment, made before any code is written.

``random.Random`` seeded from the domain and the seed chooses the class name, which optional
entities and operations appear, each tool's name variant, and the value of every limit constant.
A second generator, so that adding rules to a spec leaves those choices alone, decides which
``optional: true`` preconditions this environment keeps, the session tool's name, and whether each
entity is filled from the lower or the upper half of its ``count`` range.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from envmill.tasks.backends.procedural.spec.check_roles import SESSION_TOOL_NAMES
from envmill.tasks.backends.procedural.spec.domain import (
    DomainSpec,
    EntitySpec,
    OperationSpec,
    RoleSpec,
)
from envmill.tasks.backends.procedural.spec.paths import op_entities
from envmill.tasks.core.recent import Recent

DROP_OPTIONAL_ENTITY = 0.3
DROP_OPTIONAL_OPERATION = 0.3
DROP_OPTIONAL_RULE = 0.4


@dataclass(frozen=True)
class ToolPlan:
    """One operation as it will appear: the spec (without the optional preconditions this seed
    dropped) and the tool name chosen for it."""

    op: OperationSpec
    name: str


@dataclass
class EnvPlan:
    """Every seeded decision for one environment."""

    spec: DomainSpec
    seed: int
    class_name: str
    entities: list[str]
    tools: list[ToolPlan]
    limits: dict[str, int]
    tool_names: dict[str, str] = field(default_factory=dict)
    roles: dict[str, RoleSpec] = field(default_factory=dict)
    session_tool: str | None = None
    dropped_rules: int = 0
    fill_counts: dict[str, list[int]] = field(default_factory=dict)

    def entity(self, name: str) -> EntitySpec:
        return self.spec.entities[name]

    @property
    def entity_roles(self) -> list[str]:
        """Roles that act as a record of an entity (customers), in spec order."""
        return [name for name, role in self.roles.items() if role.entity]

    def allowed_roles(self, op: OperationSpec) -> list[str]:
        """The roles that may call ``op`` (empty when the domain declares none)."""
        return [name for name in self.roles if not op.roles or name in op.roles]

    def lookup_tool(self, entity: str) -> ToolPlan | None:
        """The find tool of an entity, which turns its label into ids."""
        return next((t for t in self.tools if t.op.kind == "find" and t.op.entity == entity), None)


ROUND_STEPS = (1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000)


def round_limit(rng: random.Random, low: int, high: int) -> int:
    """A limit a business would set: the roundest step with at least three choices in the range
    ("at most 1500 dollars", not 1585), drawn among them."""
    step = max((s for s in ROUND_STEPS if high // s - (low + s - 1) // s >= 2), default=1)
    choices = range((low + step - 1) // step * step, high + 1, step)
    return rng.choice(choices)


def plan_environment(spec: DomainSpec, seed: int) -> EnvPlan:
    """The seeded choices for ``spec``; the same (spec, seed) always gives the same plan, made
    once (state filling and every scenario kind ask for it again; nothing changes a plan)."""
    kept = _PLANS.get((id(spec), seed), lambda: (spec, _plan_environment(spec, seed)))
    return kept[1]  # the entry holds its spec alive, so no other spec can have that id


_PLANS: Recent[tuple[DomainSpec, EnvPlan]] = Recent(64)


def _plan_environment(spec: DomainSpec, seed: int) -> EnvPlan:
    rng = random.Random(f"{spec.name}:{seed}")
    class_name = rng.choice(spec.class_names)
    dropped = {
        name
        for name, entity in spec.entities.items()
        if entity.optional and rng.random() < DROP_OPTIONAL_ENTITY
    }
    limits = {name: round_limit(rng, *limit.range) for name, limit in spec.limits.items()}
    tools: list[ToolPlan] = []
    for op in spec.operations():
        keep = rng.random() >= DROP_OPTIONAL_OPERATION or not op.optional
        name = rng.choice(op.names)
        if keep and not op_entities(spec, op) & dropped:
            tools.append(ToolPlan(op, name))
    entities = [name for name in spec.entities if name not in dropped]
    plan = EnvPlan(spec, seed, class_name, entities, tools, limits)
    plan.tool_names = {tool.op.name: tool.name for tool in tools}
    plan_rules(plan, random.Random(f"{spec.name}:{seed}:rules"))
    return plan


def plan_rules(plan: EnvPlan, rng: random.Random) -> None:
    """Drop some ``optional`` preconditions; name the session tool when there are roles."""
    kept_tools: list[ToolPlan] = []
    for tool in plan.tools:
        kept = [
            pre
            for pre in tool.op.preconditions
            if not pre.optional or rng.random() >= DROP_OPTIONAL_RULE
        ]
        plan.dropped_rules += len(tool.op.preconditions) - len(kept)
        op = tool.op.model_copy(update={"preconditions": kept})
        kept_tools.append(ToolPlan(op, tool.name))
    plan.tools = kept_tools
    plan.roles = dict(plan.spec.roles)
    if plan.roles:
        plan.session_tool = rng.choice(SESSION_TOOL_NAMES)
    for name in plan.entities:
        low, high = plan.entity(name).count
        middle = (low + high) // 2
        plan.fill_counts[name] = [low, middle] if rng.random() < 0.5 else [middle, high]
