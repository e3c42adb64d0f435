"""The words a refusal is said in besides the record's own (``wording/refusals.yaml``).

A refusal record names its act by one verb and its reason by the state's values. People use
other verbs for both ("I shut it down" is a close; "the city turned it down" says rejected), say
a sum is not zero without its figure ("it still has money in it"), and put a role rule in their
own words ("cancelling is for airline staff"). The lists are data; this module turns them into
patterns, so the judge reads every rule kind through the same words.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import yaml

from envmill.tasks.judge.reading import normalize

WORDING_FILE = Path(__file__).resolve().parent / "wording" / "refusals.yaml"
LISTS = (
    "acts",
    "done_states",
    "not_empty",
    "role_rule",
    "role_self",
    "any_act",
    "sets_value",
    "states",
)


@cache
def wording() -> dict[str, Any]:
    """The lists of ``refusals.yaml``; a missing one is one clear error naming the file."""
    try:
        data = yaml.safe_load(WORDING_FILE.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"wording 'refusals': cannot read {WORDING_FILE.name}: {exc}") from None
    missing = [key for key in (*LISTS, "irregular_past") if not (data or {}).get(key)]
    if not isinstance(data, dict) or missing:
        raise ValueError(f"wording 'refusals': missing or empty {missing}")
    return data


def act_verbs(action: str) -> list[str]:
    """The verbs that name ``action``: its own words, and every verb of each group in ``acts``
    that holds it ("close": "shut down", "terminate", …), or whose verb it begins ("call" of a
    tool named call_off_…)."""
    said = normalize(action).replace("-", " ")
    if not said:
        return []
    verbs, first = [said], said.split()[0]
    for group in wording()["acts"]:
        words = [normalize(str(v)) for v in group]
        if said in words or any(w.split()[0] == first for w in words):
            verbs += [w for w in words if w not in verbs]
    return verbs


def done_forms(verb: str) -> str:
    """A pattern for ``verb`` said as done: its first word in the past ("fitted", "shut",
    "began"), the rest of the verb after it, a pronoun or a quoted id between ("shut it down",
    "turned SR-9 down")."""
    first, *rest = verb.split()
    irregular = [str(f) for f in wording()["irregular_past"].get(first, [])]
    regular = [f"{first}d"] if first.endswith("e") else [f"{first}ed", f"{first}{first[-1]}ed"]
    if first.endswith("y") and first[-2:-1] not in "aeiou":
        regular.append(f"{first[:-1]}ied")
    head = "(?:" + "|".join(map(re.escape, dict.fromkeys([*irregular, *regular]))) + ")"
    return rf"\b{head}{_object_then(rest)}\b"


def said_done(status: str) -> re.Pattern[str]:
    """A status the request would set, said of an object ("checked you in" for checked in)."""
    first, *rest = normalize(status).split()
    return re.compile(rf"\b{re.escape(first)}{_object_then(rest)}\b")


# what may stand between a verb and its particle: a pronoun, or an id the reading masked ("#")
OBJECT = r"(?:\s+(?:it|you|them|him|her|this|that|#))?"


@cache
def _done_pattern(verb: str) -> re.Pattern[str]:
    return re.compile(done_forms(verb))


def _object_then(rest: list[str]) -> str:
    """The rest of a verb after its first word, an object allowed before it."""
    return (OBJECT + "".join(rf"\s+{re.escape(w)}" for w in rest)) if rest else ""


def done_pattern(action: str) -> re.Pattern[str] | None:
    """The act said as done in any of its verbs, or a record said to hold the work now ("the
    Brake Rotor is now on the work order")."""
    forms = [done_forms(v) for v in act_verbs(action)]
    forms += [rf"\b{re.escape(normalize(s))}\b" for s in wording()["done_states"]]
    return re.compile("|".join(forms)) if action.strip() else None


@lru_cache(maxsize=1024)  # statuses come from states: bounded
def said_otherwise(status: str) -> tuple[re.Pattern[str], ...]:
    """A status said in other words: the past of another verb of its act ("turned SR-9 down"
    for rejected, "settled" for paid off), or a phrase of ``states`` ("being worked on" for in
    progress); none for a status that has neither."""
    said = normalize(status)
    others: list[re.Pattern[str]] = []
    for group in wording()["acts"]:
        verbs = [normalize(str(v)) for v in group]
        if any(_done_pattern(v).fullmatch(said) for v in verbs):
            others += [re.compile(done_forms(v)) for v in verbs]
    phrases = (wording()["states"] or {}).get(said, [])
    others += [re.compile(rf"\b{re.escape(normalize(p))}\b") for p in phrases]
    return tuple(others)


def not_empty(text: str) -> list[re.Match[str]]:
    """Where ``text`` says a sum is not zero in words ("it still has money in it")."""
    phrases = sorted(map(normalize, wording()["not_empty"]), key=len, reverse=True)
    found = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, phrases)) + r")(?!\w)")
    return list(found.finditer(text))


def role_said(frames: str, role: str) -> re.Pattern[str]:
    """A pattern for ``role`` in the frames of list ``frames`` (``role_rule``: "only staff",
    "for airline staff"; ``role_self``: "signed in as a passenger"), an article and one word
    before the role allowed."""
    who = rf"(?:an?\s+|the\s+)?(?:\w+\s+)?{re.escape(normalize(role))}s?"
    forms = [re.escape(normalize(f)).replace(r"\{role\}", who) for f in wording()[frames]]
    return re.compile(r"\b(?:" + "|".join(forms) + r")\b")


def irregular_participles() -> list[str]:
    """The past forms of ``irregular_past`` ("lent", "sold"), longest first."""
    forms = {normalize(str(f)) for v in wording()["irregular_past"].values() for f in v}
    return sorted(forms, key=lambda f: (-len(f), f))


def sets_value() -> frozenset[str]:
    """Verbs whose act is the value they set ("mark … delayed")."""
    return frozenset(normalize(str(w)) for w in wording()["sets_value"])


def any_act() -> frozenset[str]:
    """Verbs that name no act of their own ("done", "allowed")."""
    return frozenset(normalize(str(w)) for w in wording()["any_act"])
