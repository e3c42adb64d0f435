"""Roles, the acting identity and seeded rules in the procedural backend: the spec refuses bad
role syntax, the compiled tools refuse a role they do not allow and a customer acting on another
customer's record (staff pass), the acting identity is state, and seeds drop optional rules."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain, parse_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.plan import plan_environment
from envmill.tasks.backends.procedural.spec.domain import SpecError
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.backends.procedural.state.invariants import check_invariants

CATALOG = Path(__file__).resolve().parents[2] / "tasks" / "backends" / "procedural" / "catalog"


def banking_data() -> dict:
    return yaml.safe_load((CATALOG / "banking.yaml").read_text(encoding="utf-8"))


def operation(data: dict, entity: str, name: str) -> dict:
    return next(op for op in data["entities"][entity]["operations"] if op["name"] == name)


@pytest.fixture(scope="module")
def banking():
    spec = load_domain("banking")
    compiled = compile_environment(spec, 0)
    plan = plan_environment(spec, 0)
    return compiled, plan.tool_names, build_initial_state(compiled, 0)


def as_role(state: dict, role: str, acting_id: str | None) -> dict:
    return {**copy.deepcopy(state), "acting_role": role, "acting_id": acting_id}


def call(sandbox, compiled, state: dict, tool: str, arguments: dict) -> tuple[dict, dict]:
    """(result, state after) of one call in a fresh episode."""
    with sandbox.episode(compiled.source, compiled.class_name, state) as episode:
        assert episode.loaded, episode.load_outcome
        outcome = episode.call(tool, arguments)
        return outcome.result, episode.state()


# -- spec syntax ---------------------------------------------------------------------------------


def test_catalog_declares_roles_in_most_domains_with_owned_and_optional_rules():
    with_roles = 0
    for name in list_domains():
        spec = load_domain(name)
        pres = [pre for op in spec.operations() for pre in op.preconditions]
        assert any(pre.optional for pre in pres), name
        if spec.roles:
            with_roles += 1
            assert any(op.roles for op in spec.operations()), name
            assert any(pre.kind == "owned" for pre in pres), name
    assert with_roles >= 8


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: operation(d, "account", "close_account").update(roles=["clerk"]),
            "spec 'banking', entity 'account', operation 'close_account': role 'clerk' is not "
            "declared (declared roles: ['customer', 'staff'])",
        ),
        (
            lambda d: d["roles"]["customer"].update(entity="client"),
            "spec 'banking': role 'customer' names unknown entity 'client'",
        ),
        (
            lambda d: d["roles"].update({"Bad Role": {}}),
            "spec 'banking': role 'Bad Role' must be a lowercase identifier",
        ),
        (
            lambda d: d["roles"]["customer"].update(entity="card"),
            "spec 'banking', entity 'card': role 'customer' acts as an optional entity",
        ),
        (
            lambda d: operation(d, "account", "withdraw")["preconditions"][0].update(
                path="target.account_id"
            ),
            "spec 'banking', entity 'account', operation 'withdraw': precondition 'owned' path "
            "'target.account_id' does not end in an id of a role's entity (customer)",
        ),
        (
            lambda d: operation(d, "account", "withdraw")["preconditions"][0].update(
                path="target.owner_id"
            ),
            "operation 'withdraw': precondition 'owned' reads missing field 'owner_id'",
        ),
        (
            lambda d: operation(d, "account", "deposit").update(aliases=["whoami"]),
            "operation 'deposit': tool names",
        ),
        (
            lambda d: d.pop("roles"),
            "operation 'onboard_customer': role 'staff' is not declared (declared roles: none)",
        ),
        (
            lambda d: d["roles"].pop("customer"),
            "operation 'update_customer_address': precondition 'owned' needs a role with an entity",
        ),
    ],
)
def test_bad_role_syntax_is_a_one_line_spec_error(edit, message):
    data = banking_data()
    edit(data)
    with pytest.raises(SpecError) as err:
        parse_domain(data)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_role_key_is_refused():
    data = banking_data()
    data["roles"]["staff"]["entity_id"] = "customer"
    with pytest.raises(SpecError, match="spec 'banking'"):
        parse_domain(data)


# -- manifest, plan and generated text -----------------------------------------------------------


def test_manifest_names_roles_owned_rules_and_the_acting_attributes(banking):
    compiled, names, _ = banking
    assert compiled.acting_role_attr == "acting_role"
    assert compiled.acting_id_attr == "acting_id"
    assert (
        compiled.roles["customer"].entity == "customer" and compiled.roles["staff"].entity is None
    )
    tools = {tool.tool: tool for tool in compiled.tools}
    assert tools[compiled.session_tool].kind == "query" and not tools[compiled.session_tool].args
    assert tools[names["close_account"]].roles == ["staff"]
    assert tools[names["deposit"]].roles == ["staff"]  # cash comes in at the counter
    assert tools[names["withdraw"]].roles == ["staff", "customer"]
    owned = tools[names["withdraw"]].owned
    assert [(o.arg, o.hops, o.entity) for o in owned] == [
        ("account_id", ["customer_id"], "customer")
    ]
    rules = compiled.business_rules  # what it does ("shut an account"), never its name
    # one rule for all that only staff may do (round 49: a flat list of "Only staff may …")
    (staff,) = [rule for rule in rules if rule.startswith("Only staff may ")]
    assert re.search(r"\b(?:or|,) \w+ an account\.$", staff), staff
    named = names["close_account"].replace("_", " ")  # never its name
    assert not any(named in rule for rule in compiled.business_rules)
    assert "Customers withdraw only from their own accounts." in rules


def test_domains_without_roles_have_no_acting_state():
    compiled = compile_environment(load_domain("fleet"), 0)
    assert compiled.roles == {} and compiled.session_tool is None
    assert "acting_role" not in compiled.source
    assert "acting_role" not in build_initial_state(compiled, 0)


def test_seeds_drop_optional_rules_so_rule_sets_differ():
    spec = load_domain("banking")
    kept, sources = {}, {}
    for seed in range(12):
        compiled = compile_environment(spec, seed)
        limit_rule = any("single withdrawal" in rule for rule in compiled.business_rules)
        kept[seed] = frozenset(compiled.business_rules)
        sources[seed] = (limit_rule, "self.WITHDRAWAL_LIMIT" in compiled.source)
    assert len(set(kept.values())) >= 2
    assert {rule for rule, _ in sources.values()} == {True, False}
    assert all(rule == code for rule, code in sources.values())
    plans = [plan_environment(spec, seed) for seed in range(12)]
    assert max(plan.dropped_rules for plan in plans) > 0


def test_required_rules_are_never_dropped():
    spec = load_domain("banking")
    for seed in range(12):
        compiled = compile_environment(spec, seed)
        assert "A withdrawal cannot exceed the balance." in compiled.business_rules


# -- state fill ----------------------------------------------------------------------------------


def test_state_fill_chooses_staff_mostly_and_sometimes_a_customer():
    spec = load_domain("banking")
    compiled = compile_environment(spec, 1)
    picks = [build_initial_state(compiled, seed) for seed in range(40)]
    roles = [state["acting_role"] for state in picks]
    assert 20 <= roles.count("staff") < 40
    for state in picks:
        if state["acting_role"] == "customer":
            assert state["acting_id"] in state["customers"]
        else:
            assert state["acting_id"] is None
        assert check_invariants(spec, state) == []


def test_invariants_report_an_acting_identity_that_names_nothing(banking):
    compiled, _, state = banking
    spec = compiled.spec
    assert check_invariants(spec, as_role(state, "customer", "C-999999")) == [
        "acting_id 'C-999999' names no customer (role customer)"
    ]
    assert check_invariants(spec, as_role(state, "auditor", None)) == [
        "acting_role 'auditor' is not a declared role"
    ]


# -- the generated tools, run in the sandbox -----------------------------------------------------


def test_staff_only_tool_refuses_a_customer_and_names_the_role(banking, sandbox):
    compiled, names, state = banking
    customer = next(iter(state["customers"]))
    account = next(iter(state["accounts"]))
    tool = names["close_account"]
    result, after = call(
        sandbox, compiled, as_role(state, "customer", customer), tool, {"account_id": account}
    )
    assert result["success"] is False
    assert "'customer'" in result["error"] and "only staff" in result["error"]
    assert after == as_role(state, "customer", customer)
    result, _ = call(
        sandbox, compiled, as_role(state, "staff", None), tool, {"account_id": account}
    )
    assert "Permission denied" not in str(result.get("error", ""))


def test_owned_refuses_another_customers_account_and_allows_owner_and_staff(banking, sandbox):
    compiled, names, state = banking
    account_id, account = next(
        (key, row) for key, row in state["accounts"].items() if row["status"] == "active"
    )
    owner = account["customer_id"]
    other = next(key for key in state["customers"] if key != owner)
    tool, arguments = names["freeze_account"], {"account_id": account_id}
    result, after = call(sandbox, compiled, as_role(state, "customer", other), tool, arguments)
    assert result["success"] is False and "Permission denied" in result["error"]
    assert owner in result["error"] and after == as_role(state, "customer", other)
    for role, acting in (("customer", owner), ("staff", None)):
        result, after = call(sandbox, compiled, as_role(state, role, acting), tool, arguments)
        assert result["success"] is True, result
        assert after["accounts"][account_id]["status"] == "frozen"


def test_acting_identity_round_trips_as_state_and_the_session_tool_reports_it(banking, sandbox):
    compiled, _, state = banking
    customer = sorted(state["customers"])[-1]
    loaded = as_role(state, "customer", customer)
    with sandbox.episode(compiled.source, compiled.class_name, loaded) as episode:
        assert episode.loaded, episode.load_outcome
        assert episode.state() == loaded
        outcome = episode.call(compiled.session_tool, {})
        assert outcome.result == {
            "success": True,
            "data": {"role": "customer", "acting_id": customer},
        }
        assert episode.state() == loaded


def test_a_signed_in_customers_arguments_come_from_their_own_records(banking):
    """The chain sampler draws what an ``owned`` rule guards from the customer's own records,
    so a customer's chain asks for what they may do instead of trying others' records."""
    import random

    from faker import Faker

    from envmill.tasks.backends.procedural.scenarios.chains import ArgumentDrawer
    from envmill.tasks.backends.procedural.scenarios.subjects import owned_ids

    compiled, _, state = banking
    customer = sorted({a["customer_id"] for a in state["accounts"].values()})[0]
    signed_in = as_role(state, "customer", customer)
    mine = owned_ids(signed_in, customer) | {customer}
    guarded = [t for t in compiled.tools if t.owned]
    assert guarded
    drawer = ArgumentDrawer(compiled, random.Random(3), Faker())
    drawer.acting_id = customer
    for _ in range(20):
        for tool in guarded:
            arguments = drawer.draw_arguments(tool, signed_in) or {}
            for rule in tool.owned:
                assert arguments.get(rule.arg, customer) in mine, (tool.tool, rule.arg)
