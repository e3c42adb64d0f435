"""Contact details that belong to the person they are for.

Faker draws an email on its own, so "Hunter Gomez" got "vlevine@example.com"; a rater reads
that as a data error, and a policy learns to expect it. An email made from the name is what a
real record holds.
"""

from __future__ import annotations

import random
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envmill.tasks.backends.procedural.spec.domain import EntitySpec

SHAPES = ("{first}.{last}", "{f}{last}", "{first}{last}", "{first}_{last}", "{first}.{last}{n}")
DOMAINS = ("example.com", "example.org", "example.net")


def email_for(name: str, rng: random.Random, attempt: int = 0) -> str:
    """An address for ``name`` ("Hunter Gomez" → "hunter.gomez@example.com"); a later
    ``attempt`` (the first was taken) adds digits."""
    words = [re.sub(r"[^a-z]", "", w) for w in name.lower().split()]
    words = [w for w in words if w] or ["user"]
    first, last = words[0], words[-1]
    local = rng.choice(SHAPES).format(first=first, last=last, f=first[0], n=rng.randint(1, 99))
    if attempt:
        local += str(rng.randint(10, 999))
    return f"{local}@{rng.choice(DOMAINS)}"


def fake_text(fake: Any, provider: str) -> str:
    """Text from the named Faker provider, with envmill's own: ``name`` a plain name,
    ``postal_address`` a street address with its city (round 49: "251 Kristin Isle Apt. 681"
    named no city); phone numbers and plates in one format each (round 50: "mixed formats")."""
    if provider == "name":
        return plain_name(fake)
    if provider == "last_name":
        return surname(fake.last_name())
    if provider == "postal_address":
        return f"{fake.street_address()}, {fake.city()}"
    if provider == "basic_phone_number":  # one format, not "(769)707-3662" beside "5913417776"
        digits = re.sub(r"\D", "", fake.basic_phone_number())[-10:]
        return f"{digits[:3]}-{digits[3:6]}-{digits[6:]}"
    if provider == "license_plate":  # one state's format, not "2I 24220" beside "PDA-4656"
        return str(fake.bothify("???-####", letters="ABCDEFGHJKLMNPRSTUVWXYZ"))
    return str(getattr(fake, provider)())


def plain_name(fake: Any) -> str:
    """A first and last name as people write them; Faker's en_US list spells "McCall" and
    "O'Connor" as "Mccall" and "Oconnor", which raters read as generator artifacts (round 49).
    Faker's ``name()`` adds "Dr." and "MD"; a surname that repeats the first name ("Henry
    Henry", round 60) is drawn again."""
    first = fake.first_name()
    last = surname(fake.last_name())
    while last == first:
        last = surname(fake.last_name())
    return f"{first} {last}"


def surname(name: str) -> str:
    """ "Mccall" → "McCall", "Oconnor" → "O'Connor"; any other name as it is."""
    if re.fullmatch(r"Mc[a-z]{3,}", name):
        return f"Mc{name[2].upper()}{name[3:]}"
    return IRISH_SURNAMES.get(name, name)


IRISH_SURNAMES = {
    "Obrien": "O'Brien",
    "Oconnell": "O'Connell",
    "Oconnor": "O'Connor",
    "Odonnell": "O'Donnell",
    "Oneal": "O'Neal",
    "Oneill": "O'Neill",
}


def is_email_provider(faker: str | None) -> bool:
    return bool(faker) and "email" in str(faker)


def person_name(entity: EntitySpec | None, record: dict[str, Any] | None) -> str | None:
    """The record's name when its entity names people (a field faker fills with names), else
    None: "Anderson Ltd" is a company, whatever its words look like."""
    for field_name, spec in entity.fields.items() if entity is not None else []:
        value = (record or {}).get(field_name)
        if spec.faker == "name" and isinstance(value, str) and value.strip():
            return value
    return None
