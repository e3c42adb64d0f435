"""Someone else's record keeps its owner's reason, told of them as he or she: raters rated
filtered lookups 3.0 for "Please process a return for Mary Andrews's oldest order" (no reason,
rounds 68 to 73) and marked "they want to send it back" for a named customer (round 74)."""

from __future__ import annotations

import random

import pytest

from envmill.tasks.backends.procedural.manifest import ArgManifest
from envmill.tasks.backends.procedural.phrasing.pronouns import with_pronouns
from envmill.tasks.backends.procedural.phrasing.task import _choose_template, in_third_person
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention
from envmill.tasks.backends.procedural.scenarios.lookups import _owner_after


@pytest.mark.parametrize(
    ("template", "told"),
    [
        (
            "Order {order_id} arrived damaged, I want to send it back.",
            "Order {order_id} arrived damaged; they want to send it back.",
        ),
        ("{id} is wrong. I was charged twice.", "{id} is wrong. They were charged twice."),
        ("The fault on {unit_id} is back; I'm still cold; fix {id}.", None),  # not the record
        ("I'd like to return order {order_id}; it isn't what I expected.", None),  # "they" first
        ("We had a {claim_type} on {order_id}; I'd like to claim.", None),  # a business speaks
        ("Please cancel {order_id}.", None),  # nothing to tell
    ],
)
def test_a_story_is_told_of_the_owner_only_once_the_owner_is_named(template, told):
    assert in_third_person(template, {"order_id", "id"}) == told


class _Step:
    """The few fields of a chain step the template choice reads."""

    def __init__(self, phrases: list[str], described: str) -> None:
        self.manifest = type("Manifest", (), {"phrases": phrases})()
        self.mentions = [ArgMention("order_id", "OR-1", "entity_id", "order", described=described)]
        self.changes: list = []


def test_staff_relay_someone_elses_reason_rather_than_a_bare_order():
    step = _Step(
        [
            "I'd like to return order {order_id}; it isn't what I expected.",
            "Please process a return for order {order_id}.",
            "Order {order_id} arrived damaged, I want to send it back.",
        ],
        "Mary Andrews's oldest order",
    )
    chosen = {_choose_template(step, random.Random(seed), False, "staff") for seed in range(20)}
    assert chosen == {"{order_id} arrived damaged; they want to send it back."}


PEOPLE = {"Leah Davis", "Sabrina Harris", "Elaine Hunter", "William Russell", "John Carpenter",
          "David Hoffman", "Taylor Smith", "Ann Lee", "John Smith", "Mary Lee"}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "Leah Davis's order arrived damaged; they want to send it back.",
            "Leah Davis's order arrived damaged; she wants to send it back.",
        ),
        (  # each sentence its own person
            "Sabrina Harris is leaving; please offboard them. Also, we hired Elaine Hunter; "
            "their email is e@example.com.",
            "Sabrina Harris is leaving; please offboard her. Also, we hired Elaine Hunter; "
            "her email is e@example.com.",
        ),
        (  # a first name alone after the full one; a title before the name
            "We hired William Russell; add them. Then, William needs a van; give them VN-1.",
            "We hired William Russell; add him. Then, William needs a van; give him VN-1.",
        ),
        (
            "Member John Carpenter is here; they're paid up and they have no fines.",
            "Member John Carpenter is here; he's paid up and he has no fines.",
        ),
        (
            "Mary Lee is sick; they still need the refund.",
            "Mary Lee is sick; she still needs the refund.",
        ),
        # the speaker is no "they"; a name that does not say keeps "they"; another sentence's
        # "the customer" is not the person named before it (a breaker's, all of these below)
        ("I'm David Hoffman and I brought 20 kg; price them.", None),
        ("Taylor Smith is here; they keep their key.", None),
        ("Ann Lee paid. Cancel order X; the customer changed their mind.", None),
        ("We got 10 copies of Letters (the one by Angela Savage); please add them.", None),
        ("The kitchen at Jade Garden is swamped; please pause their orders.", None),
        ("Ann Lee and John Smith are leaving; offboard them.", None),  # two people
        ("Mary Lee is here; they usually pay by card.", None),  # a verb it does not know
        ("Mary Lee is here; they shouldn't wait.", "Mary Lee is here; she shouldn't wait."),
    ],
)
def test_the_one_person_a_sentence_names_is_he_or_she(text, said):
    assert with_pronouns(text, PEOPLE) == (said or text)


@pytest.mark.parametrize(
    ("entity", "whose", "after"),
    [
        ("instructor", "the", " taught by David Rodriguez"),  # not "David Rodriguez's course"
        ("doctor", "the", " with David Rodriguez"),
        ("customer", "David Rodriguez's", ""),  # an owner's possessive stays
        ("parking_lot", "the", " at David Rodriguez"),  # a place's
    ],
)
def test_a_workers_record_is_said_by_what_they_do_for_it(entity, whose, after):
    parent = ArgManifest(name=f"{entity}_id", source="entity_id", entity=entity)
    said = _owner_after(parent, "David Rodriguez", "David Rodriguez's")
    assert said == (whose, after)
