"""Group a's domains: fields of one filled record that a reader expects to agree do agree (a
crew's department, a donor's type, an event's category, a dish's menu price), so a rater
never reads "Streets Crew 1" in lighting or a foundation named like a person."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.procedural.catalog import load_domain
from tests.catalog_fill import filled_records

DOMAINS = (
    "airline auto_repair banking city_requests clinic courses coworking donations ecommerce "
    "events farm_coop fleet food_delivery"
).split()


def _whole(record: dict, examples: list[dict]) -> bool:
    """The record holds one example whole, wherever it holds the first key of one."""
    key = next(iter(examples[0]))
    same = [e for e in examples if e[key] == record.get(key)]
    return not same or any(all(record.get(k) == v for k, v in e.items()) for e in same)


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_record_named_in_an_example_agrees_with_it(domain: str) -> None:
    for name, entity in load_domain(domain).entities.items():
        if not entity.examples:
            continue
        records = filled_records(domain, name)
        bad = [r for r in records if not _whole(r, entity.examples)]
        assert not bad, (domain, name, bad[:2])


@pytest.mark.parametrize(
    ("domain", "entity", "key", "value", "field", "wrong"),
    [
        ("city_requests", "crew", "name", "Streets Crew 1", "department", "lighting"),
        ("city_requests", "crew", "name", "Lighting Crew A", "department", "streets"),
        ("events", "event", "title", "Future of AI Talk", "category", "dance"),
        ("ecommerce", "product", "name", "Brass Desk Lamp", "category", "kitchen"),
        ("food_delivery", "restaurant", "name", "Sakura Sushi", "cuisine", "mexican"),
        ("fleet", "vehicle", "model", "Isuzu NPR", "vehicle_type", "car"),
        ("coworking", "desk", "name", "Phone Booth North", "area", "meeting_room"),
        ("donations", "campaign", "title", "Food Bank Refill", "program", "animals"),
    ],
)
def test_a_named_record_never_sits_in_a_clashing_group(
    domain: str, entity: str, key: str, value: str, field: str, wrong: str
) -> None:
    examples = load_domain(domain).entities[entity].examples
    assert any(e.get(key) == value for e in examples)
    assert all(e.get(field) != wrong for e in examples if e.get(key) == value)
    assert all(r[field] != wrong for r in filled_records(domain, entity) if r[key] == value)


def test_an_organisation_donor_is_never_a_person() -> None:
    """'a donor of type foundation is a person named Noah Le' cannot come back."""
    records = filled_records("donations", "donor")
    assert records
    for record in records:
        if record["donor_type"] == "foundation":
            assert "Foundation" in record["name"], record
        if record["donor_type"] == "estate":
            assert record["name"].startswith("Estate of"), record


@pytest.mark.parametrize(
    ("domain", "entity", "field"),
    [
        ("airline", "flight", "fare"),
        ("auto_repair", "work_order", "estimate"),
        ("clinic", "doctor", "consultation_fee"),
        ("coworking", "credit_purchase", "price"),
        ("donations", "campaign", "goal"),
        ("ecommerce", "product", "price"),
        ("events", "event", "price"),
        ("fleet", "work_order", "cost_estimate"),
        ("food_delivery", "restaurant", "min_order"),
        ("food_delivery", "menu_item", "price"),
    ],
)
def test_prices_the_business_sets_are_price_like(domain: str, entity: str, field: str) -> None:
    """A fee or a shelf price ends in .00, .50, .95 or .99, never $64.03."""
    records = filled_records(domain, entity)
    assert records
    for record in records:
        cents = round(record[field] * 100) % 100
        assert cents in {0, 50, 95, 99}, (domain, entity, record[field])


def test_no_event_title_names_a_time_of_day() -> None:
    """Events start at any hour of the day, so "Midnight Jazz" or a "Matinee" would clash."""
    titles = load_domain("events").entities["event"].fields["title"].sample
    for word in ("Midnight", "Night", "Matinee", "Evening", "Morning", "Stars"):
        assert not [t for t in titles if word in t.split()], word


def test_a_raised_total_never_passes_the_campaign_goal() -> None:
    records = filled_records("donations", "campaign")
    assert records and all(r["raised"] <= r["goal"] for r in records)
