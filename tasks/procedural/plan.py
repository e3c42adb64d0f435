"""Every seeded decision for one environment, made before any code is written.

``random.Random`` seeded from the domain and the seed chooses the class name, which optional
entities and operations appear, each tool's name variant, and the value of every limit constant.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from envmill.tasks.procedural.spec.domain import DomainSpec, EntitySpec, OperationSpec
from envmill.tasks.procedural.spec.paths import op_entities

DROP_OPTIONAL_ENTITY = 0.3
DROP_OPTIONAL_OPERATION = 0.3


@dataclass(frozen=True)
class ToolPlan:
    """One operation as it will appear: the spec and the tool name chosen for it."""

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

    def entity(self, name: str) -> EntitySpec:
        return self.spec.entities[name]

    def lookup_tool(self, entity: str) -> ToolPlan | None:
        """The find tool of an entity, which turns its label into ids."""
        return next((t for t in self.tools if t.op.kind == "find" and t.op.entity == entity), None)


def plan_environment(spec: DomainSpec, seed: int) -> EnvPlan:
    """The seeded choices for ``spec``; the same (spec, seed) always gives the same plan."""
    rng = random.Random(f"{spec.name}:{seed}")
    class_name = rng.choice(spec.class_names)
    dropped = {
        name
        for name, entity in spec.entities.items()
        if entity.optional and rng.random() < DROP_OPTIONAL_ENTITY
    }
    limits = {name: rng.randint(*limit.range) for name, limit in spec.limits.items()}
    tools: list[ToolPlan] = []
    for op in spec.operations():
        keep = rng.random() >= DROP_OPTIONAL_OPERATION or not op.optional
        name = rng.choice(op.names)
        if keep and not op_entities(spec, op) & dropped:
            tools.append(ToolPlan(op, name))
    entities = [name for name in spec.entities if name not in dropped]
    plan = EnvPlan(spec, seed, class_name, entities, tools, limits)
    plan.tool_names = {tool.op.name: tool.name for tool in tools}
    return plan
