"""A change is drawn on a record in its usual state: a premium goes on the active policy, not
the lapsed one the tool also allows, and a deduction on a payslip of an employee who has not
left (rounds 65 to 67: "takes $80 on a lapsed policy", "deducts from a terminated employee")."""

from __future__ import annotations

import random
from typing import Any

from faker import Faker

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.scenarios.chains import ArgumentDrawer
from envmill.tasks.backends.procedural.scenarios.usual import (
    live_states,
    parents_live,
    usual_prefer,
)

NOW = "2025-06-10T10:15:00"


def _drawn(domain: str, tool: str, arg: str, state: dict[str, Any], acting: str | None = None):
    compiled = compile_environment(load_domain(domain), 0)
    manifest = next(t for t in compiled.tools if t.tool == tool)
    argument = next(a for a in manifest.args if a.name == arg)
    drawer = ArgumentDrawer(compiled, random.Random(3), Faker())
    drawer.acting_id = acting
    full = {"current_time": NOW, "acting_id": acting, **state}
    if acting is None:
        return [drawer.draw_value(argument, full, {}) for _ in range(100)]
    return [drawer._own_id(argument, full, {}) for _ in range(100)]


def test_the_live_states_are_those_a_record_can_still_leave():
    machine = load_domain("payroll").entities["employee"].status
    assert machine is not None
    assert live_states(machine) == {"active", "on_leave"}
    policy = load_domain("insurance_claims").entities["policy"]
    assert usual_prefer(policy, {"status": ["active", "lapsed"]}) == {"status": ["active"]}
    assert usual_prefer(policy, {"status": ["lapsed"]}) == {"status": ["lapsed"]}
    assert usual_prefer(policy, {})["status"] == sorted(live_states(policy.status))  # type: ignore[arg-type]


def test_staff_take_a_premium_on_the_active_policy_mostly():
    policies = {
        "POL-1": {"policy_id": "POL-1", "policyholder_id": "PH-1", "status": "lapsed"},
        "POL-2": {"policy_id": "POL-2", "policyholder_id": "PH-1", "status": "active"},
        "POL-3": {"policy_id": "POL-3", "policyholder_id": "PH-1", "status": "cancelled"},
    }
    state = {"policies": policies}
    drawn = _drawn("insurance_claims", "record_premium_payment", "policy_id", state)
    assert drawn.count("POL-2") >= 80  # the rest at random: a refusal's near miss


def test_a_policyholder_pays_on_their_active_policy_and_never_a_lapsed_one():
    policies = {
        "POL-1": {"policy_id": "POL-1", "policyholder_id": "PH-1", "status": "lapsed"},
        "POL-2": {"policy_id": "POL-2", "policyholder_id": "PH-1", "status": "active"},
    }
    state = {"policies": policies, "policyholders": {"PH-1": {"policyholder_id": "PH-1"}}}
    drawn = _drawn("insurance_claims", "record_premium_payment", "policy_id", state, "PH-1")
    assert set(drawn) == {"POL-2"}
    only_lapsed = {"POL-1": policies["POL-1"]}
    state = {**state, "policies": only_lapsed}
    drawn = _drawn("insurance_claims", "record_premium_payment", "policy_id", state, "PH-1")
    assert set(drawn) == {None}  # no such request is drawn for them


def test_a_payslip_of_a_terminated_employee_is_not_the_usual_one():
    spec = load_domain("payroll")
    compiled = compile_environment(spec, 0)
    employees = {"E-1": {"status": "terminated"}, "E-2": {"status": "active"}}
    state = {"employees": employees}
    attrs = compiled.entity_attrs
    assert not parents_live(spec, attrs, "payslip", {"employee_id": "E-1"}, state)
    assert parents_live(spec, attrs, "payslip", {"employee_id": "E-2"}, state)
    assert parents_live(spec, attrs, "payslip", {"employee_id": "E-9"}, state)  # not on file
    payslips = {
        "PS-1": {"payslip_id": "PS-1", "employee_id": "E-1", "status": "pending"},
        "PS-2": {"payslip_id": "PS-2", "employee_id": "E-2", "status": "pending"},
    }
    drawn = _drawn("payroll", "apply_deduction", "payslip_id", {**state, "payslips": payslips})
    assert drawn.count("PS-2") >= 80


def test_a_question_is_asked_of_a_live_record_under_live_parents():
    """Round 68: the price of a cancelled booking "to plan my spending", and a parcel "shows as
    delivered" under a disputed shipment."""
    from envmill.tasks.backends.procedural.scenarios.usual import is_usual

    spec = load_domain("parcel_shipping")
    attrs = compile_environment(spec, 0).entity_attrs
    shipments = {"S-1": {"status": "disputed"}, "S-2": {"status": "delivered"}}
    state = {attrs["shipment"]: shipments}
    assert not is_usual(spec, attrs, "parcel", {"shipment_id": "S-1", "status": "packed"}, state)
    assert is_usual(spec, attrs, "parcel", {"shipment_id": "S-2", "status": "packed"}, state)
    assert not is_usual(spec, attrs, "parcel", {"shipment_id": "S-2", "status": "removed"}, state)
    assert not is_usual(spec, attrs, "shipment", shipments["S-1"], state)
    assert is_usual(spec, attrs, "shipment", {"status": "in_transit"}, state)
