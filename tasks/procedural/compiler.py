"""Compile a domain spec and a seed into one environment module (DESIGN §3.1) plus its manifest.

All variation is decided here, by ``random.Random`` seeded from the domain and the seed, before any
code is written: the class name, which optional entities and operations appear, each tool's name
variant, and the value of every limit constant. The generated code itself is deterministic.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass, field

from envmill.schemas.domain import DomainSpec, EntitySpec, OperationSpec, SpecError
from envmill.schemas.domain_paths import op_entities
from envmill.schemas.manifest import CompiledEnvironment

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


def compile_environment(spec: DomainSpec, seed: int) -> CompiledEnvironment:
    """Generate the module for (spec, seed) with the manifest the scenario generator reads."""
    from envmill.tasks.procedural.codegen_manifest import build_manifest, business_rules
    from envmill.tasks.procedural.codegen_module import render_module

    plan = plan_environment(spec, seed)
    source = render_module(plan)
    try:
        ast.parse(source)
    except SyntaxError as exc:  # a compiler bug, not a spec problem, but name the spec
        raise SpecError(f"spec '{spec.name}': generated code does not parse: {exc}") from exc
    return CompiledEnvironment(
        domain=spec.name,
        seed=seed,
        class_name=plan.class_name,
        source=source,
        topic=spec.topic,
        introduction=spec.introduction,
        business_rules=business_rules(plan),
        tools=build_manifest(plan),
        entity_attrs={name: plan.entity(name).plural for name in plan.entities},
        label_fields={
            name: plan.entity(name).label for name in plan.entities if plan.entity(name).label
        },
    )
