"""``scale``: a multiple per enum value on an assign or a derive. Airline's fare is the economy
one; premium and business seats cost more, in the filled state, when booked and when moved."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from envmill.tasks.backends.procedural.catalog import load_domain, parse_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.spec.domain import SpecError
from envmill.tasks.backends.procedural.state.fill import build_initial_state

FACTORS = {"economy": 1.0, "premium": 1.6, "business": 2.5}
NOW = "2025-06-10T10:15:00"


def test_filled_bookings_cost_their_cabin_multiple():
    """No "507 for 3 business seats equals the 169 base fare"."""
    compiled = compile_environment(load_domain("airline"), 0)
    for seed in range(2):
        state = build_initial_state(compiled, seed)
        for booking in state["bookings"].values():
            fare = state["flights"][booking["flight_id"]]["fare"]
            expected = round(fare * booking["seats"] * FACTORS[booking["cabin"]], 2)
            assert booking["price"] == expected, booking


def _env(seed: int) -> tuple[Any, Any]:
    compiled = compile_environment(load_domain("airline"), seed)
    namespace: dict[str, Any] = {}
    exec(compile(compiled.source, "airline", "exec"), namespace)  # noqa: S102 - our own code
    env = namespace[compiled.class_name]()
    state = build_initial_state(compiled, 0)
    for key, value in state.items():
        setattr(env, key, copy.deepcopy(value))
    env.acting_role, env.acting_id = "staff", None
    return compiled, env


def _tool(compiled: Any, names: tuple[str, ...]) -> str:
    return next(t.tool for t in compiled.tools if t.tool in names)


def test_a_business_booking_costs_more_than_the_fare():
    compiled, env = _env(0)
    book = _tool(compiled, ("book_flight", "create_booking", "reserve_seats"))
    flight_id, flight = next(
        (k, f) for k, f in env.flights.items() if f["status"] in ("scheduled", "delayed")
    )
    flight["departs_at"], flight["seats_available"] = "2099-01-01T10:00:00", 50
    passenger = next(iter(env.passengers))
    result = getattr(env, book)(passenger, flight_id, "business", 2)
    assert "error" not in result, result
    new = max(env.bookings, key=str)
    assert env.bookings[new]["price"] == round(flight["fare"] * 2 * 2.5, 2)


def test_moving_cabin_reprices_the_booking():
    seed = next(
        s
        for s in range(20)
        if any(t.tool in ("change_cabin", "change_seat_class", "switch_cabin")
               for t in compile_environment(load_domain("airline"), s).tools)
    )  # fmt: skip
    compiled, env = _env(seed)
    move = _tool(compiled, ("change_cabin", "change_seat_class", "switch_cabin"))
    booking_id, booking = next(
        (k, b) for k, b in env.bookings.items() if b["status"] == "confirmed"
    )
    result = getattr(env, move)(booking_id, "premium")
    assert "error" not in result, result
    fare = env.flights[booking["flight_id"]]["fare"]
    assert env.bookings[booking_id]["price"] == round(fare * booking["seats"] * 1.6, 2)


def test_a_scale_needs_a_factor_for_each_value():
    spec = load_domain("airline").model_dump(by_alias=True, exclude_none=True)
    del spec["entities"]["booking"]["fields"]["price"]["scale"]["factors"]["business"]
    with pytest.raises(SpecError, match="scales"):
        parse_domain(spec)


def test_a_payslips_net_pay_is_its_gross_pay_less_its_deductions():
    """Rounds 38–39: "gross_pay 2509.55 − deductions 271.98 should be 2237.57, but the record
    shows net_pay 770.4"."""
    compiled = compile_environment(load_domain("payroll"), 0)
    for seed in range(3):
        for slip in build_initial_state(compiled, seed)["payslips"].values():
            assert slip["net_pay"] == round(slip["gross_pay"] - slip["deductions"], 2), slip


def test_a_difference_derive_names_two_own_number_fields():
    spec = load_domain("payroll").model_dump(by_alias=True)
    spec["entities"]["payslip"]["fields"]["net_pay"]["derive"] = "gross_pay - employee_id"
    with pytest.raises(SpecError, match="derives a number"):
        parse_domain(spec)


@pytest.mark.parametrize("derive", ["net_pay - deductions", "gross_pay - net_pay"])
def test_a_difference_derive_never_names_itself_or_another_derived_field(derive):
    """Round 41's breaker: a derive naming itself recursed until Python gave up."""
    spec = load_domain("payroll").model_dump(by_alias=True)
    spec["entities"]["payslip"]["fields"]["net_pay"]["derive"] = derive
    with pytest.raises(SpecError, match="derives a number"):
        parse_domain(spec)
