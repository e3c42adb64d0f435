"""Ids rise with the time a record was made (round 42: "LR-00004 submitted before LR-00001"
under "her oldest leave request"), and every reference follows a renumbered record."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.backends.procedural.state.id_order import _id_order, made_at
from envmill.tasks.backends.procedural.state.invariants import check_invariants


@pytest.mark.parametrize("domain", list_domains())
def test_ids_rise_with_the_time_records_were_made(domain):
    compiled = compile_environment(load_domain(domain), 0)
    spec = compiled.spec
    for seed in range(3):
        state = build_initial_state(compiled, seed)
        assert check_invariants(spec, state) == [], domain
        for name, entity in spec.entities.items():
            field = made_at(spec, name)
            rows = state.get(entity.plural) or {}
            if field is None or not rows:
                continue
            times = [str(rows[i].get(field) or "") for i in sorted(rows, key=_id_order)]
            assert times == sorted(times), (domain, name, times)
            assert all(r[entity.id_field] == i for i, r in rows.items()), (domain, name)
            for other in spec.entities.values():  # every reference still names a record
                for ref, kind in other.fields.items():
                    if kind.entity == name:
                        for record in (state.get(other.plural) or {}).values():
                            assert record.get(ref) in (None, *rows), (domain, other.name, ref)
