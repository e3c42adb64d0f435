"""Every state-changing tool of the catalog says what it does in its description's words: the
policy ("Only staff may …"), the agent's confirmations, refusals and closings all use them, and
a tool's name instead reads as code ("Only dispatchers may start preparing order.")."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain
from envmill.tasks.core.instructions import described_clause

READS = frozenset({"get", "find", "list", "count", "sum"})


@pytest.mark.parametrize("domain", list_domains())
def test_every_change_is_said_in_its_descriptions_words(domain):
    spec = load_domain(domain)
    fallen = [
        f"{op.name}: {op.doc}"
        for entity in spec.entities.values()
        for op in entity.operations
        if op.kind not in READS and op.doc and described_clause(op.name, op.doc) is None
    ]
    assert fallen == [], fallen
