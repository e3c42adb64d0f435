"""An argument drawn as a share of a record's number (a payslip's gross of the salary, by the pay
run's period): the spec check refuses a share it cannot use, and a created record that replaces
the one the number was drawn against gets its own (breaker: a new $185,000 hire paid $3,347 a
month)."""

from __future__ import annotations

import copy
import random

import pytest
from faker import Faker

from envmill.tasks.backends.procedural.catalog import load_domain, parse_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.scenarios.chains import ArgumentDrawer
from envmill.tasks.backends.procedural.spec.domain import SpecError


def _payroll_with(**share) -> dict:
    raw = copy.deepcopy(load_domain("payroll").model_dump(by_alias=True, mode="json"))
    for op in raw["entities"]["payslip"]["operations"]:
        for arg in op.get("args", []):
            if isinstance(arg, dict) and arg.get("name") == "gross_pay":
                arg.update(share)
    return raw


@pytest.mark.parametrize(
    ("share", "message"),
    [
        ({"share": {"weekly": [0.02]}}, "is not \\[low, high\\]"),
        ({"share": {"weekly": [0.03, 0.01]}}, "is not \\[low, high\\]"),
        ({"share": {"weekly": [-0.1, 0.1]}}, "is not \\[low, high\\]"),
        ({"share": {"daily": [0.01, 0.02]}}, "not a set enum of those keys"),
        ({"share": [0.02, 0.03], "share_by": None}, None),
        ({"share": {"weekly": [0.01, 0.02]}, "share_by": None}, "share_by, or one share"),
        ({"share_of": "pay_run_id.period"}, "is not a number"),
    ],
)
def test_a_share_the_spec_cannot_use_is_one_line(share, message):
    raw = _payroll_with(**share)
    if message is None:
        parse_domain(raw)  # one share for every period is a share too
        return
    with pytest.raises(SpecError, match=message):
        parse_domain(raw)


def test_a_number_is_drawn_again_against_the_record_that_replaced_its_own():
    compiled = compile_environment(load_domain("payroll"), 0)
    tool = next(t for t in compiled.tools if "gross_pay" in {a.name for a in t.args})
    drawer = ArgumentDrawer(compiled, random.Random(4), Faker())
    state = {
        "current_time": "2025-06-10T10:00:00",
        "employees": {"E-1": {"annual_salary": 40000.0}, "E-2": {"annual_salary": 185000.0}},
        "pay_runs": {"R-1": {"period": "monthly"}},
    }
    arguments = {"employee_id": "E-1", "pay_run_id": "R-1", "gross_pay": 3400.0}
    arguments["employee_id"] = "E-2"  # the new hire the request made
    drawer.redraw_readers(tool, arguments, "employee_id", state)
    assert 185000 * 0.08 <= arguments["gross_pay"] <= 185000 * 0.085 or (
        arguments["gross_pay"] <= 10000  # unless the one-payslip cap holds it under
    ), arguments
    assert arguments["gross_pay"] != 3400.0
