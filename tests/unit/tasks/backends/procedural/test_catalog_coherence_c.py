"""Filled records of the group-c catalogs agree with themselves: a name keeps its category, a
plan's name its fee and allowance, a meter's serial its utility, and the clashes raters saw
("a Siamese dog", "Window 1 on the patio", "I got married" for a single filer) cannot return."""

from __future__ import annotations

import random

import pytest
from faker import Faker

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.scenarios.chains import ArgumentDrawer
from tests.catalog_fill import filled_records, filled_states

DOMAINS = [
    "recruiting",
    "rentals",
    "restaurant",
    "school_admin",
    "smart_home",
    "streaming",
    "support",
    "tax_filing",
    "telecom",
    "transit_cards",
    "utility_billing",
    "vet_clinic",
    "warehouse",
]


def _disagreement(record: dict, entity) -> bool:
    """A labelled record named in an example must be that whole example; an unlabelled one
    must carry one whole example (its examples never run out)."""
    if entity.label:
        named = [e for e in entity.examples if e.get(entity.label) == record[entity.label]]
        if not named:
            return False
        candidates = named
    else:
        candidates = entity.examples
    return not any(all(record.get(k) == v for k, v in e.items()) for e in candidates)


@pytest.mark.parametrize("domain", DOMAINS)
def test_filled_records_agree_with_their_examples(domain: str) -> None:
    spec = load_domain(domain)
    checked = 0
    for name, entity in spec.entities.items():
        if not entity.examples:
            continue
        records = filled_records(domain, name)
        bad = [r for r in records if _disagreement(r, entity)]
        assert not bad, (domain, name, bad[:2])
        checked += len(records)
    assert checked or domain == "tax_filing"


@pytest.mark.parametrize("domain", DOMAINS)
def test_labelled_examples_outlast_the_fill(domain: str) -> None:
    """Enough examples that a full state never falls back to the independent fill."""
    for name, entity in load_domain(domain).entities.items():
        if entity.examples and entity.label:
            assert len(entity.examples) >= max(entity.count[1], 12), (domain, name)


@pytest.mark.parametrize("domain", DOMAINS)
def test_creates_draw_one_whole_example(domain: str) -> None:
    for compiled, state in filled_states(domain)[:1]:
        drawer = ArgumentDrawer(compiled, random.Random(5), Faker())
        for tool in (t for t in compiled.tools if t.examples):
            for _ in range(10):
                arguments = drawer.draw_arguments(tool, state)
                if arguments is None:
                    continue
                together = {k: v for k, v in arguments.items() if k in tool.examples[0]}
                assert together in tool.examples, (domain, tool.tool, together)


def _pairs(domain: str, entity: str, *fields: str) -> set[tuple]:
    return {tuple(r[f] for f in fields) for r in filled_records(domain, entity)}


def test_beach_and_harbour_homes_are_not_in_the_desert() -> None:
    for name, city in _pairs("rentals", "property", "name", "city"):
        if any(word in name for word in ("Seaside", "Harbor", "Lakeside")):
            assert city not in {"Sedona", "Santa Fe"}, (name, city)


def test_a_bad_review_is_never_five_stars() -> None:
    for rating, comment in _pairs("rentals", "review", "rating", "comment"):
        if comment in {"Noisy at night", "Smaller than pictured"}:
            assert rating <= 3, (rating, comment)


def test_tables_and_dishes_sit_where_they_belong() -> None:
    for name, area in _pairs("restaurant", "dining_table", "name", "area"):
        assert not (name.startswith(("Window", "Booth", "Centre")) and area != "main room")
        assert not (name.startswith(("Patio", "Garden", "Terrace")) and area != "patio")
    for name, course in _pairs("restaurant", "menu_item", "name", "course"):
        if name in {"Tiramisu", "Lemon tart", "Chocolate fondant"}:
            assert course == "dessert", (name, course)


def test_a_device_is_the_kind_its_name_says() -> None:
    for name, kind in _pairs("smart_home", "device", "name", "device_type"):
        for word in ("thermostat", "lock", "camera", "sensor"):
            if word in name.lower():
                assert kind == word, (name, kind)


def test_a_childrens_title_is_not_rated_adult() -> None:
    for name, genre, age in _pairs("streaming", "title", "name", "genre", "min_age"):
        if name in {"Paper Moons", "Fox and Ferry"}:
            assert (genre, age) == ("animation", 0), (name, genre, age)


def test_a_plan_gives_the_data_its_name_promises_at_a_round_fee() -> None:
    for name, fee, gb in _pairs("telecom", "plan", "name", "monthly_fee", "data_allowance_gb"):
        if name == "Basic 5":
            assert gb == 5.0
        if name in {e["name"] for e in load_domain("telecom").entities["plan"].examples}:
            assert fee == round(fee), (name, fee)


def test_a_meter_serial_names_its_utility() -> None:
    prefix = {"electricity": "E", "gas": "G", "water": "W"}
    for serial, utility in _pairs("utility_billing", "meter", "serial", "utility"):
        assert serial.startswith(prefix[utility]), (serial, utility)


def test_pets_are_their_own_breed_and_size() -> None:
    for species, breed, weight in _pairs("vet_clinic", "pet", "species", "breed", "weight_kg"):
        assert not (species == "dog" and breed in {"Siamese", "Persian", "Maine Coon"})
        if species in {"hamster", "bird"}:
            assert weight < 1, (species, weight)


def test_a_job_sits_in_its_own_department_with_a_round_band() -> None:
    for title, department, low, high in _pairs(
        "recruiting", "opening", "title", "department", "salary_min", "salary_max"
    ):
        if "Engineer" in title:
            assert department == "engineering", (title, department)
        if title in {e["title"] for e in load_domain("recruiting").entities["opening"].examples}:
            assert low % 1000 == 0 and high % 1000 == 0 and low < high


def _phrases(domain: str, operation: str) -> list[str]:
    spec = load_domain(domain)
    return next(op.phrases for op in spec.operations() if op.name == operation)


@pytest.mark.parametrize(
    ("domain", "operation", "word"),
    [
        ("tax_filing", "change_filing_status", "married"),  # the new status may be single
        ("transit_cards", "change_fare_category", "65"),  # the new category may be student
        ("transit_cards", "refund_trip", "train"),  # the trip may be a bus or a ferry
        ("restaurant", "take_table_out_of_use", "raining"),  # most tables are indoors
        ("support", "change_customer_plan", "upgraded"),  # the new plan may be free
    ],
)
def test_phrases_do_not_assume_what_the_arguments_may_contradict(
    domain: str, operation: str, word: str
) -> None:
    assert not [p for p in _phrases(domain, operation) if word in p]


@pytest.mark.parametrize("domain", DOMAINS)
def test_example_text_is_curated_text(domain: str) -> None:
    """A create's free-text argument must come from its field's sample: an example name
    missing from the sample would reach the task as uncurated text."""
    for name, entity in load_domain(domain).entities.items():
        for example in entity.examples:
            for field_name, value in example.items():
                sample = entity.fields[field_name].sample
                assert not sample or value in sample, (domain, name, field_name, value)
