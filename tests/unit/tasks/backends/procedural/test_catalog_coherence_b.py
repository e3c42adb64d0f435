"""Group b's catalog domains fill records whose fields agree (a spin class in the spin room, a
contractor that is a firm, a job title of its department) and business prices that look set by
a business ($49.99, not $64.03); the clashes raters quoted cannot come back."""

from __future__ import annotations

import random
import re

import pytest
from faker import Faker

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.scenarios.chains import ArgumentDrawer
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from tests.catalog_fill import filled_records

DOMAINS = [
    "gym", "hotel", "hr_leave", "insurance_claims", "legal_cases", "library", "loans",
    "manufacturing", "parcel_shipping", "parking", "payroll", "permits", "pharmacy",
    "property_leases",
]  # fmt: skip


def _whole(record: dict, examples: list[dict]) -> bool:
    return any(all(record.get(k) == v for k, v in e.items()) for e in examples)


@pytest.mark.parametrize("domain", [d for d in DOMAINS if d != "hr_leave"])  # titles, not examples
def test_every_record_takes_one_whole_example(domain: str) -> None:
    """A labelled record whose label is an example's agrees with it; an unlabelled record (its
    examples never run out) is one whole example."""
    spec = load_domain(domain)
    checked = 0
    for name, entity in spec.entities.items():
        if not entity.examples:
            continue
        label_keyed = entity.label in entity.examples[0]
        for record in filled_records(domain, name):
            if label_keyed:
                mine = [e for e in entity.examples if e[entity.label] == record[entity.label]]
                assert not mine or _whole(record, mine), (domain, name, record)
            else:
                assert _whole(record, entity.examples), (domain, name, record)
            checked += 1
    assert checked


@pytest.mark.parametrize("domain", DOMAINS)
def test_labelled_examples_outnumber_the_fill(domain: str) -> None:
    """The fill never runs out of examples, so no label falls back to a random partner."""
    for name, entity in load_domain(domain).entities.items():
        if entity.examples and entity.label in entity.examples[0]:
            assert len(entity.examples) >= max(entity.count[1], 12), (domain, name)


def test_class_titles_name_no_time_of_day_and_sit_in_their_room() -> None:
    rooms = {"Spin Express": "spin_room", "Aqua Fit": "pool", "Power Lifting": "weights_floor"}
    for record in filled_records("gym", "gym_class"):
        assert not re.search(r"Morning|Evening|Afternoon|Night|Sunrise", record["title"])
        assert rooms.get(record["title"], record["room"]) == record["room"], record


def test_payroll_job_titles_belong_to_their_department() -> None:
    examples = load_domain("payroll").entities["employee"].examples
    pairs = {(e["department"], e["job_title"]) for e in examples}
    records = filled_records("payroll", "employee")
    assert records and all((r["department"], r["job_title"]) in pairs for r in records)
    assert all(r["annual_salary"] % 1000 == 0 for r in records)


def test_hr_leave_titles_fit_any_team() -> None:
    for record in filled_records("hr_leave", "employee"):
        assert not re.search(r"Engineer|Recruit|Design|Marketing|Financ", record["job_title"])


@pytest.mark.parametrize(("domain", "entity", "kind"), [
    ("legal_cases", "client", "client_type"), ("permits", "applicant", "applicant_type"),
])  # fmt: skip
def test_firms_are_not_named_like_people(domain: str, entity: str, kind: str) -> None:
    """A business, corporation, nonprofit or contractor carries a firm's name from the examples,
    never a faker person's name ("a business client Bethany Velasquez")."""
    examples = load_domain(domain).entities[entity].examples
    firms = {e["name"] for e in examples if e[kind] != "individual"}
    for record in filled_records(domain, entity):
        if record[kind] != "individual":
            assert record["name"] in firms, record


@pytest.mark.parametrize(("domain", "entity", "field"), [
    ("gym", "membership", "monthly_fee"), ("hotel", "room", "nightly_rate"),
    ("legal_cases", "matter", "hourly_rate"), ("parking", "lot", "hourly_rate"),
    ("pharmacy", "medication", "pack_price"), ("property_leases", "unit", "monthly_rent"),
    ("insurance_claims", "policy", "annual_premium"), ("parking", "fine", "amount"),
])  # fmt: skip
def test_prices_a_business_sets_look_set(domain: str, entity: str, field: str) -> None:
    """$49.99, $4.50 or $1,250.00, never $64.03."""
    cents = {round(r[field] * 100) % 100 for r in filled_records(domain, entity)}
    assert cents and cents <= {0, 25, 49, 50, 75, 95, 99}, (domain, field, cents)


def test_parcel_weights_suit_their_contents() -> None:
    for record in filled_records("parcel_shipping", "parcel"):
        if record["contents"] in ("laptop", "documents", "phone accessories"):
            assert record["weight_kg"] < 5, record


def test_a_membership_sale_draws_a_plan_with_its_fee() -> None:
    compiled = compile_environment(load_domain("gym"), 0)
    tool = next(t for t in compiled.tools if t.entity == "membership" and t.examples)
    allowed = {(e["plan"], e["monthly_fee"]) for e in tool.examples}
    assert allowed
    drawer = ArgumentDrawer(compiled, random.Random(5), Faker())
    state = build_initial_state(compiled, 0)
    for _ in range(15):
        arguments = drawer.draw_arguments(tool, state)
        if arguments is not None:
            assert (arguments["plan"], arguments["monthly_fee"]) in allowed
