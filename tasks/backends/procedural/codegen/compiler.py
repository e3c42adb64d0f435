"""Compile a domain spec and a seed into one environment module (DESIGN §3.1) plus its manifest.

All variation is decided first, by
:func:`~envmill.tasks.backends.procedural.plan.plan_environment`; the generated code itself is
deterministic.
"""

from __future__ import annotations

import ast

from envmill.tasks.backends.procedural.codegen.module import render_module
from envmill.tasks.backends.procedural.codegen.tool_manifest import build_manifest, business_rules
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment, RoleManifest
from envmill.tasks.backends.procedural.plan import plan_environment
from envmill.tasks.backends.procedural.spec.check_roles import ACTING_ID_ATTR, ACTING_ROLE_ATTR
from envmill.tasks.backends.procedural.spec.domain import DomainSpec, SpecError


def compile_environment(spec: DomainSpec, seed: int) -> CompiledEnvironment:
    """Generate the module for (spec, seed) with the manifest the scenario generator reads."""
    plan = plan_environment(spec, seed)
    source = render_module(plan)
    try:
        ast.parse(source)
    except SyntaxError as exc:  # a compiler bug, not a spec problem, but name the spec
        raise SpecError(f"spec '{spec.name}': generated code does not parse: {exc}") from exc
    return CompiledEnvironment(
        spec=spec,
        domain=spec.name,
        seed=seed,
        class_name=plan.class_name,
        source=source,
        topic=spec.topic,
        introduction=spec.introduction,
        business_rules=business_rules(plan),
        tools=build_manifest(plan),
        entity_attrs={name: plan.entity(name).plural for name in plan.entities},
        label_fields={name: label for name in plan.entities if (label := plan.entity(name).label)},
        roles={name: RoleManifest(entity=r.entity, doc=r.doc) for name, r in plan.roles.items()},
        acting_role_attr=ACTING_ROLE_ATTR if plan.roles else None,
        acting_id_attr=ACTING_ID_ATTR if plan.roles else None,
        session_tool=plan.session_tool,
    )
