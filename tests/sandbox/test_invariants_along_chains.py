"""The compiled tools of every catalog domain keep the domain's invariants along chains sampled
in the sandbox (the checker itself: tests/unit/.../procedural/test_state_invariants.py)."""

from __future__ import annotations

import random

import pytest
from faker import Faker

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.scenarios import chains
from envmill.tasks.backends.procedural.scenarios.chains import makes_new, sample_chain
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.backends.procedural.state.invariants import check_invariants

DOMAINS = list_domains()


@pytest.mark.parametrize("domain", DOMAINS)
def test_tools_keep_invariants_along_sampled_chains(domain, sandbox, monkeypatch):
    # the tools themselves, not the sampler's redraw of a step that breaks the domain (a breaker)
    monkeypatch.setattr(chains._ChainSampler, "_breaks_its_domain", lambda *_: False)
    spec = load_domain(domain)
    sampled = 0
    for compile_seed in (0, 1):
        compiled = compile_environment(spec, compile_seed)
        for fill_seed in range(4):
            state = build_initial_state(compiled, fill_seed)
            assert check_invariants(spec, state) == [], "the initial state is already broken"
            with sandbox.episode(compiled.source, compiled.class_name, state) as episode:
                assert episode.loaded, episode.load_outcome
                rng = random.Random(fill_seed)
                chain = sample_chain(compiled, episode, rng, Faker(), 8)
            if chain is None:
                continue
            sampled += 1
            tools = [step.tool for step in chain.solution]
            assert check_invariants(spec, chain.final_state) == [], tools
    assert sampled >= 4


def test_a_drawn_claim_fits_the_cover_it_is_filed_under(sandbox):
    """Round 74: "File a collision claim … on Rebecca Sanders's travel policy". The tool takes
    any claim type on any policy; a step whose new record breaks the domain is drawn again."""
    spec = load_domain("insurance_claims")
    compiled = compile_environment(spec, 0)
    files = {t.tool for t in compiled.tools if t.entity == "claim" and makes_new(t)}  # aliased
    filed = 0
    for seed in range(30):
        state = build_initial_state(compiled, seed)
        with sandbox.episode(compiled.source, compiled.class_name, state) as episode:
            chain = sample_chain(compiled, episode, random.Random(seed), Faker(), 8)
        steps = chain.solution if chain else []
        filed += sum(step.tool in files for step in steps)
        assert chain is None or check_invariants(spec, chain.final_state) == []
    assert filed >= 3
