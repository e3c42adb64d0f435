"""Invariants a model-written state must keep, learned from the environment's own example state.

An environment from the LLM has no invariants written down as code; its rules live in its tools.
But its accepted example state (the one its testing agent and judge saw) shows the shape every
consistent state has, and a state that breaks it is one no real system would be in:

- a record's id field equals its key (``loans["LN-00003"]["loan_id"] == "LN-00003"``);
- an id counter is ahead of the ids it numbers (``next_loan_number`` above every ``LN-…``), or
  the next record the agent creates would overwrite one;
- amounts, quantities and balances are not negative;
- what is available, used or booked is at most its total, capacity or limit.

A rule is enforced only where the example keeps it, so an environment whose records are meant to
differ (a signed offset, a key unlike its id) is not held to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

_ID_NUMBER = re.compile(r"^[A-Za-z]+[-_]?(\d+)$")
_COUNTER = re.compile(r"^(?:next_(\w+?)_(?:number|id|no|seq)|(\w+?)_(?:counter|seq))$")
_NON_NEGATIVE = re.compile(
    r"(quantity|qty|stock|balance|price|amount|count|capacity|fee|fine|cost|total|available|"
    r"remaining|seats|copies|points|credit|limit|salary|rent|due)",
    re.IGNORECASE,
)
_PART = ("available", "remaining", "used", "booked", "enrolled", "reserved", "occupied", "sold")
_WHOLE = ("total", "capacity", "limit", "max")

Records = dict[str, dict[str, Any]]


def broken_invariant(state: dict[str, Any], example: dict[str, Any]) -> str | None:
    """The first invariant of ``example`` that ``state`` breaks, said for the model, or None."""
    for check in (_key_mismatch, _counter_behind, _negative_amount, _part_over_whole):
        found = check(state, example)
        if found:
            return found
    return None


def invariant_rules(example: dict[str, Any]) -> list[str]:
    """Each invariant :func:`broken_invariant` will hold a state to, in words: the ones
    ``example`` keeps, so the prompt that asks for a state names every rule it is checked by."""
    rules = []
    for attr, records in collections_of(example):
        rules += [f"`{attr}`: `{field}` equals the record's key" for field in _id_fields(records)]
        names = sorted({name for r in records.values() for name, _ in _numbers(r)})
        kept = [
            n for n in names if _NON_NEGATIVE.search(n) and _never_negative(records.values(), n)
        ]
        if kept:
            rules.append(f"`{attr}`: {', '.join(f'`{n}`' for n in kept)} never negative")
        for name in names:
            whole = next((w for r in records.values() if (w := _whole_of(name, r))), None)
            if whole and all(_at_most(r.get(name), r.get(whole)) for r in records.values()):
                rules.append(f"`{attr}`: `{name}` is at most `{whole}`")
    for counter, value in example.items():
        attr = _counted(counter, example)
        highest = _highest_number(example[attr]) if attr else None
        if attr and type(value) is int and (highest is None or value > highest):
            rules.append(f"`{counter}` is above the number in every id of `{attr}`")
    return rules


def _never_negative(records: Iterable[dict[str, Any]], name: str) -> bool:
    return all(r.get(name, 0) is None or r.get(name, 0) >= 0 for r in records)


def collections_of(state: dict[str, Any]) -> Iterator[tuple[str, Records]]:
    """Each attribute that holds records (a dict of dicts, keyed by id), with its records."""
    for attr, value in state.items():
        if isinstance(value, dict) and value and all(isinstance(r, dict) for r in value.values()):
            yield attr, value


def _shown(example: dict[str, Any], attr: str) -> Records:
    """The example's records of ``attr`` (none when the example keeps something else there)."""
    records = example.get(attr)
    if not isinstance(records, dict):
        return {}
    return {key: record for key, record in records.items() if isinstance(record, dict)}


def _id_fields(records: Records) -> set[str]:
    """Fields that equal their record's key in every record."""
    fields: set[str] | None = None
    for key, record in records.items():
        same = {name for name, value in record.items() if value == key}
        fields = same if fields is None else fields & same
    return fields or set()


def _key_mismatch(state: dict[str, Any], example: dict[str, Any]) -> str | None:
    for attr, records in collections_of(state):
        for field in sorted(_id_fields(_shown(example, attr))):
            for key, record in records.items():
                if record.get(field) != key:
                    return (
                        f"{attr}[{key!r}].{field} is {record.get(field)!r}, not its key {key!r}; "
                        "a record's id field equals the key it is stored under"
                    )
    return None


def _highest_number(records: Records) -> int | None:
    numbers = [int(m.group(1)) for key in records if (m := _ID_NUMBER.match(str(key)))]
    return max(numbers) if len(numbers) == len(records) and numbers else None


def _counted(counter: str, state: dict[str, Any]) -> str | None:
    """The collection a counter numbers: ``next_loan_number`` → ``loans``."""
    found = _COUNTER.match(counter)
    if not found:
        return None
    noun = found.group(1) or found.group(2)
    for attr in (f"{noun}s", f"{noun}es", noun, f"{noun[:-1]}ies" if noun.endswith("y") else ""):
        if attr and isinstance(state.get(attr), dict):
            return attr
    return None


def _counter_behind(state: dict[str, Any], example: dict[str, Any]) -> str | None:
    for counter, value in state.items():
        attr = _counted(counter, state)
        if attr is None or type(value) is not int:
            continue
        shown, example_value = _highest_number(_shown(example, attr)), example.get(counter)
        if shown is not None and type(example_value) is int and example_value <= shown:
            continue  # the example does not keep its counter ahead: not this environment's rule
        highest = _highest_number(state[attr])
        if highest is not None and value <= highest:
            return (
                f"{counter} is {value}, but {attr} already holds number {highest}; the counter "
                f"must be above every existing id ({highest + 1} or more) or a new record "
                "would overwrite one"
            )
    return None


def _numbers(record: dict[str, Any]) -> Iterator[tuple[str, float]]:
    for name, value in record.items():
        if type(value) in (int, float):
            yield name, value


def _negative_amount(state: dict[str, Any], example: dict[str, Any]) -> str | None:
    for attr, records in collections_of(state):
        shown = list(_shown(example, attr).values())
        for key, record in records.items():
            for name, value in _numbers(record):
                if value < 0 and _never_negative(shown, name) and _NON_NEGATIVE.search(name):
                    return f"{attr}[{key!r}].{name} is {value}; it cannot be negative"
    return None


def _whole_of(name: str, record: dict[str, Any]) -> str | None:
    """``copies_available`` → ``copies_total`` (or capacity, limit, max), when the record has it."""
    for part in _PART:
        for stem in (name.removesuffix(f"_{part}"), name.removeprefix(f"{part}_")):
            if stem != name:
                for whole in _WHOLE:
                    for other in (f"{stem}_{whole}", f"{whole}_{stem}", whole):
                        if other in record and other != name:
                            return other
    return None


def _part_over_whole(state: dict[str, Any], example: dict[str, Any]) -> str | None:
    for attr, records in collections_of(state):
        shown = list(_shown(example, attr).values())
        for key, record in records.items():
            for name, value in _numbers(record):
                whole = _whole_of(name, record)
                limit = record.get(whole) if whole else None
                if type(limit) not in (int, float) or value <= limit:
                    continue
                if all(_at_most(r.get(name), r.get(whole)) for r in shown):
                    return (
                        f"{attr}[{key!r}].{name} is {value}, more than its {whole} {limit}; "
                        f"{name} is at most {whole}"
                    )
    return None


def _at_most(part: Any, whole: Any) -> bool:
    numeric = (int, float)
    return not (type(part) in numeric and type(whole) in numeric) or part <= whole
