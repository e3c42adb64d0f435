"""Filled records of catalog domains, for the tests of what the catalogs keep together."""

from __future__ import annotations

from functools import cache

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.state.fill import build_initial_state

SEEDS = range(3)


@cache
def filled_states(domain: str) -> list[tuple]:
    """(compiled, state) per seed; filling is the slow part, so it is shared."""
    spec = load_domain(domain)
    states = []
    for seed in SEEDS:
        compiled = compile_environment(spec, seed)
        states.append((compiled, build_initial_state(compiled, seed)))
    return states


def filled_records(domain: str, entity: str) -> list[dict]:
    """The ``entity`` records of ``domain`` filled over a few compile and fill seeds."""
    found: list[dict] = []
    for compiled, state in filled_states(domain):
        attr = compiled.entity_attrs.get(entity)
        if attr is not None:
            found.extend(state[attr].values())
    return found
