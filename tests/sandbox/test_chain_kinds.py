"""Scenario kinds of the procedural sampler: each built scenario is certified by every gate, and
the wrong solution a careless agent would try (the other same-named record, a sibling of the
record a filter or aggregate names, an old record instead of the new one, the other branch)
loses full reward."""

from __future__ import annotations

import random
import re

import pytest
from faker import Faker

from envmill.schemas.scenario import ScenarioSpec, SolutionStep
from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.checks.derive import (
    derive_absence_check,
    derive_checks,
    words_of,
)
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.scenarios import chain_kinds
from envmill.tasks.backends.procedural.scenarios import generate as scenarios
from envmill.tasks.backends.procedural.scenarios.chains import Chain
from envmill.tasks.backends.procedural.scenarios.conditions import CAUTIOUS
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.certify.core import certify_scenario
from envmill.tasks.certify.scoring import score_final_state
from envmill.tasks.envs import admit_environment

MAX_INDICES = 24


def build_of_kind(
    domain: str, kind: str, sandbox, monkeypatch, seed: int = 7, conversational_share=0.0
):
    """The first scenario of ``domain`` whose chain was built as ``kind``, with its chain."""
    compiled = compile_environment(load_domain(domain), seed)
    env = admit_environment(compiled.source, sandbox)
    built: list[Chain] = []

    def spy(*args, **kwargs):
        chain = chain_kinds.sample_kind_chain(*args, **kwargs)
        built.append(chain)
        return chain

    monkeypatch.setattr(scenarios, "choose_kind", lambda rng: kind)
    monkeypatch.setattr(scenarios, "sample_kind_chain", spy)
    for index in range(MAX_INDICES):
        try:
            spec = scenarios.build_scenario(
                compiled,
                env.env_id,
                index,
                3,
                sandbox,
                faker=Faker("en_US"),
                conversational_share=conversational_share,
                state_builder=build_initial_state,
            )
        except scenarios.ScenarioSkipped:
            continue
        if spec.kind == kind:
            assert built[-1].kind == kind
            return compiled, env, spec, built[-1]
    pytest.fail(f"no {kind} scenario in {MAX_INDICES} tries on {domain}")


def final_of(compiled, sandbox, spec: ScenarioSpec, steps: list[SolutionStep]) -> dict:
    state = spec.initial_state
    with sandbox.episode(compiled.source, compiled.class_name, state) as episode:
        outcome = episode.replay(state, [(s.tool, s.arguments) for s in steps])
    assert outcome.state is not None
    return outcome.state


def reward_of(compiled, sandbox, spec, steps):
    return score_final_state(spec, final_of(compiled, sandbox, spec, steps), sandbox).reward.reward


def assert_certified(spec, env, sandbox):
    report = certify_scenario(spec, env, sandbox)
    assert report.status == "certified", [g for g in report.gates if not g.passed]


def swapped(steps: list[SolutionStep], old, new) -> list[SolutionStep]:
    """The solution with every state-changing use of ``old`` pointing at ``new`` instead."""
    return [
        SolutionStep(
            tool=s.tool, arguments={k: new if v == old else v for k, v in s.arguments.items()}
        )
        for s in steps
    ]


def test_fallback_order_ends_in_a_plain_change():
    assert chain_kinds.fallbacks("filtered_lookup") == [
        "filtered_lookup",
        "created_chain",
        "conditional",
        "disambiguation",
        "change",
    ]
    assert chain_kinds.fallbacks("change") == ["change"]
    rng = random.Random(1)
    drawn = {chain_kinds.choose_kind(rng) for _ in range(300)}
    assert drawn == set(chain_kinds.KINDS)


def test_a_plain_change_without_a_step_loses_reward(sandbox, monkeypatch):
    compiled, env, spec, chain = build_of_kind("banking", "change", sandbox, monkeypatch)
    assert_certified(spec, env, sandbox)
    last = max(
        i for i, s in enumerate(spec.reference_solution) if s.tool == chain.steps[-1].manifest.tool
    )
    dropped = spec.reference_solution[:last] + spec.reference_solution[last + 1 :]
    assert reward_of(compiled, sandbox, spec, spec.reference_solution) == 1.0
    assert reward_of(compiled, sandbox, spec, dropped) < 1.0


@pytest.mark.parametrize(
    ("kind", "domain"),
    [("filtered_lookup", "library"), ("filtered_lookup", "ecommerce")],
)
def test_a_record_named_by_a_query_is_that_one_and_no_sibling(kind, domain, sandbox, monkeypatch):
    compiled, env, spec, chain = build_of_kind(domain, kind, sandbox, monkeypatch)
    assert_certified(spec, env, sandbox)
    (mention,) = [m for m in chain.steps[0].mentions if m.described]
    assert mention.described.lower() in spec.task.lower() and str(mention.value) not in spec.task
    queries = {t.tool for t in compiled.tools if t.kind == "query"}
    used = [s for s in spec.reference_solution if s.tool in queries]
    assert any(not any(v == mention.value for v in s.arguments.values()) for s in used)
    attr = compiled.entity_attrs[mention.entity]
    records = spec.initial_state[attr]
    others = [k for k in sorted(records) if k != mention.value]
    wrong = swapped(spec.reference_solution, mention.value, others[0])
    assert reward_of(compiled, sandbox, spec, wrong) < 1.0


@pytest.mark.parametrize("domain", ["hotel", "food_delivery", "ecommerce"])
def test_a_filtered_record_is_named_by_its_person_never_by_luck(domain, sandbox, monkeypatch):
    """Rounds 53 to 55: "Mark the occupied room as clean", "Mark the preparing order ready",
    "Cancel the active permit at Airport Economy Lot": the one there is by chance, which no
    one says, nor "the oldest work order of 1FGH582" (round 56). A filtered record is a
    person's: "Mary Andrews's oldest order", "my booking that's checked in"."""
    _, _, spec, chain = build_of_kind(domain, "filtered_lookup", sandbox, monkeypatch)
    (mention,) = [m for m in chain.steps[0].mentions if m.described]
    said = mention.described
    assert re.search(r"\b(?:my|\w+'s|oldest|newest|earliest|latest|most recent)", said), said


def test_two_namesakes_are_told_apart_by_a_second_attribute(sandbox, monkeypatch):
    compiled, env, spec, chain = build_of_kind("clinic", "disambiguation", sandbox, monkeypatch)
    assert_certified(spec, env, sandbox)
    (mention, *_) = [m for s in chain.steps for m in s.mentions if m.hint]
    attr = compiled.entity_attrs[mention.entity]
    namesakes = [
        k for k, r in spec.initial_state[attr].items() if r[mention.label_field] == mention.label
    ]
    assert mention.value in namesakes and len(namesakes) >= 2
    assert mention.hint in spec.task
    twin = next(k for k in namesakes if k != mention.value)
    wrong = swapped(spec.reference_solution, mention.value, twin)
    assert reward_of(compiled, sandbox, spec, wrong) < 1.0


def test_a_person_just_registered_is_called_by_their_first_name(sandbox, monkeypatch):
    """Round 62: "book them with doctor Joshua Hall" read as a template; a colleague says
    "book Jack with doctor Joshua Hall"."""
    compiled, env, spec, chain = build_of_kind("clinic", "created_chain", sandbox, monkeypatch)
    (mention, *_) = [m for s in chain.steps for m in s.mentions if m.made]
    name = chain.steps[0].arguments[compiled.label_fields[mention.entity]]
    assert mention.described == name.split()[0]
    assert re.search(rf"\b{mention.described}\b", spec.task.split(name)[1]), spec.task
    assert_certified(spec, env, sandbox)


def test_a_step_on_the_new_record_is_not_a_step_on_an_old_one(sandbox, monkeypatch):
    compiled, env, spec, chain = build_of_kind("banking", "created_chain", sandbox, monkeypatch)
    assert_certified(spec, env, sandbox)
    (mention, *_) = [m for s in chain.steps for m in s.mentions if m.described]
    attr = compiled.entity_attrs[mention.entity]
    assert mention.value not in spec.initial_state[attr]  # created by the first step
    assert mention.described.lower() in spec.task.lower() and str(mention.value) not in spec.task
    old = sorted(spec.initial_state[attr])[0]
    wrong = swapped(spec.reference_solution, mention.value, old)
    assert reward_of(compiled, sandbox, spec, wrong) < 1.0


@pytest.mark.parametrize("domain", ["hotel", "parking", "payroll"])
def test_a_record_made_for_the_next_step_is_one_goal(domain, sandbox, monkeypatch):
    """Round 59: "Please register a guest, and then I need to reserve a room for them" read as
    a list of steps; a person says "reserve a room for a new guest" and leaves the steps to
    the agent."""
    compiled, env, spec, chain = build_of_kind(
        domain, "created_chain", sandbox, monkeypatch, conversational_share=1.0
    )
    assert spec.mode == "conversational"
    made = words_of(chain.steps[0].manifest.entity)
    assert f"a new {made}" in spec.task, spec.task
    assert not re.search(r"\b(?:and then|Next|Then|Also)\b", spec.task), spec.task
    assert_certified(spec, env, sandbox)


def test_a_conditional_follows_the_true_branch_and_the_other_loses(sandbox, monkeypatch):
    compiled, env, spec, chain = build_of_kind("tax_filing", "conditional", sandbox, monkeypatch)
    assert_certified(spec, env, sandbox)
    step = chain.steps[0]
    condition = step.condition
    assert condition is not None and "if" in spec.task.lower()
    record = spec.initial_state[compiled.entity_attrs[condition.record.entity]]
    value = record[condition.record.value][condition.field]
    holds = value >= condition.threshold if condition.op == ">=" else value < condition.threshold
    assert holds == condition.holds
    # both branches act on the record the condition reads ("if its fee …, cancel it; otherwise …")
    assert condition.record.value in step.arguments.values()
    assert condition.record.value in condition.otherwise.arguments.values()
    # …and they make sense together: both decide the record's status ("if the parts cost is
    # below $150, close it out; otherwise, cancel it") or move the tested number opposite ways
    # (a balance: add to it when low, return some of it when high)
    path = [compiled.entity_attrs[condition.record.entity], condition.record.value]
    own = [[c for c in b.changes if c["path"][:2] == path] for b in (step, condition.otherwise)]
    statuses = [{c["path"][-1]: c["new"] for c in cs if isinstance(c["new"], str)} for cs in own]
    decides = any(statuses[1].get(f, v) != v for f, v in statuses[0].items())
    moves = [c["new"] > c["old"] for cs in own for c in cs if c["path"][-1] == condition.field]
    assert (decides and not moves) or sorted(moves) == [False, True], own
    if decides:  # as a policy: the large sums get the second look ("flag it for audit")
        large = step if (condition.op == ">=") == condition.holds else condition.otherwise
        assert CAUTIOUS.match(large.manifest.tool), (large.manifest.tool, spec.task)
    taken = SolutionStep(tool=step.manifest.tool, arguments=step.arguments)
    other = SolutionStep(
        tool=condition.otherwise.manifest.tool, arguments=condition.otherwise.arguments
    )
    index = spec.reference_solution.index(taken)
    branch_swapped = [*spec.reference_solution]
    branch_swapped[index] = other
    both = [*spec.reference_solution, other]
    assert reward_of(compiled, sandbox, spec, branch_swapped) < 1.0
    (absent,) = [i for i, c in enumerate(spec.checks) if c.description.startswith("Has not")]
    swapped = score_final_state(spec, final_of(compiled, sandbox, spec, branch_swapped), sandbox)
    assert swapped.check_results[absent] is False  # the other branch's changes are caught
    final_both = final_of(compiled, sandbox, spec, both)
    if final_both != final_of(compiled, sandbox, spec, spec.reference_solution):
        done_both = score_final_state(spec, final_both, sandbox)  # (else refused once A is done)
        assert done_both.check_results[absent] is False and not done_both.reward.success


def run_check(code: str, initial: dict, final: dict) -> bool:
    namespace: dict = {}
    exec(code, namespace)  # our own derived check, in a test
    return namespace["check"](initial, final)


def test_records_created_alike_are_counted_not_found_once():
    initial = {"tickets": {}, "next_ticket_number": 1}
    ticket = {"event_id": "EV-1", "customer_id": "CS-4", "quantity": 4}
    final = {
        "tickets": {f"TK-{n}": {"ticket_id": f"TK-{n}", **ticket} for n in (1, 2)},
        "next_ticket_number": 3,
    }
    (check,) = derive_checks(initial, final)
    assert run_check(check.code, initial, final) is True
    one = {**final, "tickets": {"TK-1": final["tickets"]["TK-1"]}}
    other = {**final["tickets"]["TK-2"], "customer_id": "CS-1"}
    assert run_check(check.code, initial, one) is False
    assert (
        run_check(check.code, initial, {**final, "tickets": {**one["tickets"], "x": other}})
        is False
    )


def test_the_absence_check_fails_only_when_the_untaken_branch_happened():
    initial = {"cards": {"C-1": {"status": "active"}, "C-2": {"status": "active"}}}
    untaken = {"cards": {"C-1": {"status": "blocked"}, "C-2": {"status": "active"}}}
    taken = {"cards": {"C-1": {"status": "active"}, "C-2": {"status": "cancelled"}}}
    check = derive_absence_check(initial, untaken, entity_names={"cards": "card"})
    assert check is not None and check.description.startswith("Has not set the status")
    assert run_check(check.code, initial, taken) is True
    assert run_check(check.code, initial, initial) is True
    both = {"cards": {"C-1": {"status": "blocked"}, "C-2": {"status": "cancelled"}}}
    assert run_check(check.code, initial, both) is False


def test_the_absence_check_leaves_out_what_both_branches_do():
    """Round 41's breaker: card and store credit both mark an order paid, so "has not set the
    status to paid" failed every store-credit conditional."""
    initial = {"orders": {"O-5": {"status": "pending"}}, "customers": {"C-1": {"credit": 50.0}}}
    by_card = {"orders": {"O-5": {"status": "paid"}}, "customers": {"C-1": {"credit": 50.0}}}
    by_credit = {"orders": {"O-5": {"status": "paid"}}, "customers": {"C-1": {"credit": 14.0}}}
    check = derive_absence_check(initial, by_card, taken=by_credit)
    assert check is None  # all the card branch does, the credit branch does too
    check = derive_absence_check(initial, by_credit, taken=by_card)
    assert check is not None and run_check(check.code, initial, by_card) is True
    assert run_check(check.code, initial, by_credit) is False


@pytest.mark.parametrize("domain", ["farm_coop", "ecommerce", "airline"])
def test_no_conditional_is_a_rule_no_business_keeps(domain, sandbox):
    """From the rating: "void the sale if it is $210 or more; if not, ship it", "cancel the
    order if it is $63 or more; if not, mark it paid". Where the only pairs decide a record's
    fate by its size with no second look, no conditional is made at all."""
    compiled = compile_environment(load_domain(domain), 0)
    for seed in range(4):
        state = build_initial_state(compiled, seed)
        faker = Faker("en_US")
        faker.seed_instance(seed)
        with sandbox.episode(compiled.source, compiled.class_name, state) as episode:
            chain = chain_kinds.sample_kind_chain(
                compiled, episode, random.Random(seed), faker, 1, "conditional"
            )
        assert chain is None or chain.kind != "conditional", chain.steps[0].condition


def test_a_conditional_reads_a_number_once_and_names_round_sums(sandbox, monkeypatch):
    """From the rating: "If the retainer balance of Ryan Reed is at least $1,700, return
    $219.06 …", then a get of the client file after the search had shown the balance. The
    search that finds the client shows the number: no second read; the sums are round."""
    compiled, env, spec, chain = build_of_kind(
        "legal_cases", "conditional", sandbox, monkeypatch, seed=0
    )
    assert_certified(spec, env, sandbox)
    condition = chain.steps[0].condition
    reads = [s for s in spec.reference_solution if s.tool in {t.tool for t in compiled.tools
             if t.kind == "query"}]  # fmt: skip
    assert len(reads) == 1, spec.reference_solution  # the search, which shows the balance
    assert condition.threshold == round(condition.threshold, -2), condition.threshold
    # a deposit against a refund aims at the mark: the taken amount is the distance to it,
    # which the agent works out (the task says "the difference"), never a sum from nowhere
    assert condition.target and "the difference" in spec.task, spec.task
    value = chain.initial_state["clients"][condition.record.value][condition.field]
    (amount,) = [v for k, v in chain.steps[0].arguments.items() if k == "amount"]
    assert abs(abs(condition.threshold - value) - amount) < 0.005, (value, amount)
