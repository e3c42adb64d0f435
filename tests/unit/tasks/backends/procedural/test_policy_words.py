"""The policy an agent reads, in plain words (issue 29, item 5): no state attribute or tool
names, no "requires …" field-speak, round limits a business would set, "one day" not "1 days"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.tool_manifest import business_rules
from envmill.tasks.backends.procedural.plan import plan_environment, round_limit

CATALOG = Path(__file__).resolve().parents[5] / "tasks" / "backends" / "procedural" / "catalog"
DOMAINS = sorted(path.stem for path in CATALOG.glob("*.yaml"))


def _problems(rule: str) -> list[str]:
    found = []
    if re.search(r"\b[a-z]+_[a-z_]+\b", rule):
        found.append("a name with underscores")
    if re.search(r"\brequires\b", rule):
        found.append("'requires'")
    if re.search(r"\b1 (?:[a-z]+ )?[a-z]+[^s]s\b", rule):
        found.append("'1' before a plural")
    return found


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_rule_of_every_domain_reads_as_a_policy(domain):
    assert len(DOMAINS) >= 40
    for seed in range(3):
        plan = plan_environment(load_domain(domain), seed)
        bad = [(rule, _problems(rule)) for rule in business_rules(plan) if _problems(rule)]
        assert bad == [], bad
        for name, value in plan.limits.items():
            low, high = load_domain(domain).limits[name].range
            assert low <= value <= high
            if high - low >= 100:
                assert value % 5 == 0, (name, value)


def test_a_limit_is_the_roundest_step_with_three_choices():
    import random

    rng = random.Random(0)
    assert {round_limit(rng, 1000, 2000) for _ in range(50)} <= {1000, 1250, 1500, 1750, 2000}
    assert {round_limit(rng, 2, 4) for _ in range(50)} == {2, 3, 4}
    assert round_limit(rng, 7, 7) == 7
