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


def test_a_record_a_phrase_calls_mine_is_drawn_from_the_speakers_own():
    """A breaker: "put its money on my new card {to_card_id}" was filled with another
    rider's card, moving the user's whole balance to a stranger."""
    from envmill.tasks.backends.procedural.manifest import ArgManifest, ToolManifest
    from envmill.tasks.backends.procedural.scenarios.chains import said_as_mine

    manifest = ToolManifest(
        tool="transfer_balance",
        kind="state_change",
        entity="card",
        args=[
            ArgManifest(name="card_id", source="entity_id", entity="card", required=True),
            ArgManifest(name="to_card_id", source="entity_id", entity="card", required=True),
        ],
        phrases=["Card {card_id} is worn out; please put its money on my new card {to_card_id}."],
    )
    assert said_as_mine(manifest) == {"to_card_id"}
    seats = manifest.model_copy(update={"phrases": ["Reserve 2 seats for me on {card_id}."]})
    assert said_as_mine(seats) == set()


def test_a_count_that_shares_a_word_with_money_is_no_money():
    """A breaker: "The copies total of … is $3", "The leave balance … is $1"."""
    from envmill.tasks.backends.procedural.phrasing.words import is_money

    assert not is_money("copies_total", 3) and not is_money("leave_balance", 1)
    assert is_money("amount_requested", 5000.0) and is_money("nightly_rate", 109.0)
