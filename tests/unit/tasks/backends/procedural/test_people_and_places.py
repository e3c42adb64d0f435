"""Names and addresses as real records hold them (round 49: "Rita Oconnor", "251 Kristin Isle
Apt. 681" with no city)."""

from __future__ import annotations

import re

import pytest
from faker import Faker

from envmill.tasks.backends.procedural.state.contact import fake_text, surname


@pytest.mark.parametrize(
    ("faker_says", "written"),
    [("Mccall", "McCall"), ("Oconnor", "O'Connor"), ("Odom", "Odom"), ("Mack", "Mack")],
)
def test_surnames_are_spelt_as_people_spell_them(faker_says, written):
    assert surname(faker_says) == written


def test_a_postal_address_names_its_city_and_a_name_has_no_title():
    fake = Faker("en_US")
    fake.seed_instance(3)
    for _ in range(20):
        assert re.fullmatch(r"\d+ [^,]+, [A-Z][\w .'-]+", fake_text(fake, "postal_address"))
        assert not re.search(r"\b(?:Dr|Mr|Mrs|Ms|MD|DDS|PhD)\b", fake_text(fake, "name"))


def test_phone_numbers_and_plates_come_in_one_format_each():
    fake = Faker("en_US")
    fake.seed_instance(5)
    for _ in range(30):
        assert re.fullmatch(r"\d{3}-\d{3}-\d{4}", fake_text(fake, "basic_phone_number"))
        assert re.fullmatch(r"[A-Z]{3}-\d{4}", fake_text(fake, "license_plate"))
