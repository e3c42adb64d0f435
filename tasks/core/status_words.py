"""How a reply says that a record's status changed: with the verb a person uses.

"I've cancelled order O1" for a status the agent brings about, "I've marked order O1 as
delivered" for one that happened and was recorded, "matter M1 is now on hold" for a state. The
status word itself is kept, so a judge that reads the status in the reply still finds it. Which
status is which is data (``wording/statuses.yaml``).
"""

from __future__ import annotations

from functools import cache

from envmill.tasks.core.wording_files import read_wording

PLACES = frozenset({"on", "off", "in", "out", "under", "en", "do", "at", "sold"})


@cache
def status_lists() -> dict[str, frozenset[str]]:
    """The lists of ``statuses.yaml``: ``recorded``, ``irregular`` and ``particles``."""
    data = read_wording("statuses")
    return {k: frozenset(str(w) for w in v or []) for k, v in data.items() if k != "places"}


@cache
def place_words() -> dict[str, str]:
    """Status -> the word before it, from ``places`` in ``statuses.yaml``."""
    data = read_wording("statuses")
    return {str(s): word for word, said in (data.get("places") or {}).items() for s in said}


def status_kind(status: str) -> str:
    """``action`` (the agent did it), ``recorded`` (it happened; the agent marked it) or
    ``state`` (an adjective or phrase: "on hold", "available")."""
    lists = status_lists()
    said = status.strip().lower()
    if said in lists["recorded"]:
        return "recorded"
    first = said.split(" ")[0] if said else ""
    if first.endswith("ed") or first in lists["irregular"]:
        return "action"
    return "state"


def status_news(noun: str, status: str, pick: int) -> str:
    """One clause saying ``noun`` (lower case, "order O1") reached ``status`` (in words),
    chosen by ``pick`` among the ways a person says it."""
    kind = status_kind(status)
    if kind == "action":
        ways = (f"I've {_with_particle(status, noun)}", f"{noun} has been {status}")
    elif kind == "recorded":
        ways = (f"I've marked {noun} as {status}", f"{noun} is now marked {status}")
    elif status.split(" ")[0] in PLACES or status in place_words():
        status = _in_place(status)  # "on leave", "under maintenance": not "set … to on leave"
        ways = (f"{noun} is now {status}", f"{noun} is {status} now")
    else:
        ways = (
            f"{noun} is now {status}",
            f"{noun} is {status} now",
            f"I've set {noun} to {status}",
        )
    return ways[pick % len(ways)]


def where_it_stands(noun: str, status: str) -> str:
    """Where a record stands, with the verb its status takes: "claim C-9 has been denied" (the
    staff did it), "inspection I-2 is marked as failed" (it happened), "vehicle V-3 is on
    trip", "event E-5 is a draft" — never "is failed"."""
    if status in status_lists()["nouns"]:
        return f"{noun} is {'an' if status[:1] in 'aeiou' else 'a'} {status}"
    head = noun.split(" (")[0].split(" ")
    if any(len(word) > 3 and word[:4] == status[:4] for word in head):
        # "your enrolment EN-4 has been enrolled" (round 54): the status repeats the noun
        whose = "its status" if noun == "it" else f"the status of {noun}"
        return f"{whose} is {status}"
    kind = status_kind(status)
    if kind == "action":
        return f"{noun} has been {status}"
    if kind == "recorded":
        return f"{noun} is marked as {status}"
    placed = _in_place(status)
    if " " in status and placed == status and status.split(" ")[0] not in PLACES - {"do"}:
        whose = "its status" if noun == "it" else f"the status of {noun}"
        return f"{whose} is {status}"  # not "it is do not contact"
    return f"{noun} is {placed}"


def _in_place(status: str) -> str:
    """A status that is a place or a process, with its preposition: "under maintenance"."""
    word = place_words().get(status)
    return f"{word} {status}" if word else status


def _with_particle(status: str, noun: str) -> str:
    """ "checked in booking B1", "returned item I1 to stock": a particle stays with its verb,
    the rest of the phrase follows the record."""
    words = status.split(" ")
    if len(words) > 1 and words[1] in status_lists()["particles"]:
        verb, rest = " ".join(words[:2]), " ".join(words[2:])
    else:
        verb, rest = words[0], " ".join(words[1:])
    return f"{verb} {noun}" + (f" {rest}" if rest else "")
