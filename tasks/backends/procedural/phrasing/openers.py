"""Openers that read like people: a greeting, sometimes some context, the request, a thanks.

The words come from ``wording/openers.yaml``; the choices from the scenario's rng. An opener never
carries a fact the agent must ask for (DESIGN §3.4): it only frames the request it is given.
"""

from __future__ import annotations

import random
import re

from envmill.tasks.backends.procedural.phrasing.pronouns import is_first_name
from envmill.tasks.backends.procedural.phrasing.word_lists import words
from envmill.tasks.backends.procedural.phrasing.words import lower_first, tidy_text


def open_request(request: str, rng: random.Random) -> str:
    """``request`` framed as a person opens a conversation ("Hi there, I'm on a short break …")."""
    greeting = rng.choice(words("openers", "greetings"))
    context = rng.choice(words("openers", "contexts"))
    closer = rng.choice(words("openers", "closers"))
    parts = [part for part in (greeting, context, request, closer) if part]
    joined = [
        lower_first(part)
        if index and parts[index - 1].endswith(",") and not names_first(part)
        else part
        for index, part in enumerate(parts)
    ]
    return tidy_text(" ".join(joined))


def names_first(request: str) -> bool:
    """The request opens with a name: a place's ("Airport Economy Lot is …") or a person's
    ("Nicole Meyers knows that area well", a breaker's: "Hey, nicole Meyers …")."""
    person = re.match(r"([A-Z][a-z]+) [A-Z]", request)
    return bool(NAME_FIRST.match(request) or (person and is_first_name(person[1])))


# a request that opens with a name keeps its capital: "Hey, Airport Economy Lot is …" (round 28)
# (a name as the subject: "Airport Economy Lot is …", never "Register Julie Hunter as …")
NAME_FIRST = re.compile(r"(?:[A-Z][\w&.'-]* ){2,}(?:is|are|was|were|has|have|needs?)\b")
