"""What the judge knows besides the reply: the scenario's day, the question, and what the state
holds. A value the reply shows that the state or the question holds is context; a value of the
answer's type that neither holds is invented."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from envmill.schemas.ids import canonical_json
from envmill.tasks.core.recent import Recent
from envmill.tasks.judge.reading import ISO_MOMENT, read

MAX_STRINGS = 5000


@dataclass(frozen=True)
class Setting:
    """``masks``: strings with digits that are not moments (ids, addresses, phones) of the
    initial state, and new record ids: their digits are no answer (text the agent wrote into the
    final state is not among them); ``numbers``, ``dates``, ``times``: what the states hold;
    ``asked``: the request's own figures."""

    today: date | None = None
    masks: tuple[str, ...] = ()
    numbers: frozenset[float] = frozenset()
    dates: frozenset[str] = frozenset()
    times: frozenset[str] = frozenset()
    asked: frozenset[float] = frozenset()  # the question's own figures, and this year


_SETTINGS: Recent[Setting] = Recent(64)


def setting_of(task: str, *states: dict[str, Any]) -> Setting:
    """The setting of a scenario's episode: its task and the states it went through (certification
    judges a dozen replies on each final state, so it is read once)."""
    texts = tuple(map(canonical_json, states))
    return _SETTINGS.get((task, *texts), lambda: _read_setting(task, states, texts))


@dataclass(frozen=True)
class _StateFacts:
    """What one state holds for a setting, read once per state (a scenario's initial state is
    in the setting of every final state judged): ``strings`` (keys and text values) and
    ``numbers`` as ``_collect`` gathers them from this state alone; ``keys``, its record ids;
    ``masked`` and ``masked_keys``, those of ``strings`` and ``keys`` that would be masks, each
    followed by nothing (their shown tails come after all masks); ``moments``, the strings that
    open with a moment."""

    strings: tuple[str, ...]
    numbers: frozenset[float]
    keys: tuple[str, ...]
    masked: tuple[str, ...]
    masked_keys: tuple[str, ...]
    moments: tuple[str, ...]


_STATE_FACTS: Recent[_StateFacts] = Recent(64)
_MOMENT_READINGS: Recent[tuple[tuple[str, ...], tuple[str, ...]]] = Recent(64)


def _facts_of(state: dict[str, Any], text: str) -> _StateFacts:
    """``state``'s facts, ``text`` its canonical JSON."""
    return _STATE_FACTS.get(text, lambda: _read_facts(state))


def _read_facts(state: dict[str, Any]) -> _StateFacts:
    strings: list[str] = []
    numbers: set[float] = set()
    _collect(state, strings, numbers, 0)
    keys = _keys(state)
    return _StateFacts(
        strings=tuple(strings),
        numbers=frozenset(numbers),
        keys=tuple(keys),
        masked=tuple(filter(_is_mask, strings)),
        masked_keys=tuple(filter(_is_mask, keys)),
        moments=tuple(s for s in strings if ISO_MOMENT.match(s)),
    )


def _is_mask(value: str) -> bool:
    """A string with digits that is no moment (an id, an address, a phone)."""
    return bool(re.search(r"\d", value)) and not ISO_MOMENT.fullmatch(value.casefold())


def _read_setting(task: str, states: tuple[dict[str, Any], ...], texts: tuple[str, ...]) -> Setting:
    facts = [_facts_of(state, text) for state, text in zip(states, texts, strict=True)]
    if sum(len(f.strings) for f in facts) > MAX_STRINGS:  # cut short together: read together
        return _read_setting_whole(task, *states)
    initial = facts[0] if facts else _read_facts({})
    today = next((d for d in (_day_of(state.get("current_time")) for state in states) if d), None)
    masks = [*initial.masked, *(k for f in facts[1:] for k in f.masked_keys)]
    masks += [tail for s in masks for tail in _shown_tails(s)]
    masks += _names_asked_about(task, list(initial.strings))
    dates, times = _moments_of(" ; ".join(s for f in facts for s in f.moments))
    asked = read(task, today, masks)
    return Setting(
        today=today,
        masks=tuple(dict.fromkeys(masks)),
        numbers=frozenset().union(*(f.numbers for f in facts)),
        asked=frozenset([*asked.numbers, *([float(today.year)] if today else [])]),
        dates=frozenset(dates + tuple(asked.dates) + ((today.isoformat(),) if today else ())),
        times=frozenset(times + tuple(asked.times)),
    )


def _moments_of(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The dates and times the states' moments state (the same for most states judged)."""

    def reading() -> tuple[tuple[str, ...], tuple[str, ...]]:
        found = read(text)
        return tuple(found.dates), tuple(found.times)

    return _MOMENT_READINGS.get(text, reading)


def _read_setting_whole(task: str, *states: dict[str, Any]) -> Setting:
    strings: list[str] = []
    numbers: set[float] = set()
    for state in states:
        _collect(state, strings, numbers, 0)
    initial: list[str] = []
    _collect(states[0] if states else {}, initial, set(), 0)
    written = [k for state in states[1:] for k in _keys(state)]  # new ids, not the agent's text
    today = next((d for d in (_day_of(state.get("current_time")) for state in states) if d), None)
    masks = [
        s
        for s in [*initial, *written]
        if re.search(r"\d", s) and not ISO_MOMENT.fullmatch(s.casefold())
    ]
    masks += [tail for s in masks for tail in _shown_tails(s)]
    masks += _names_asked_about(task, initial)  # "Parks Crew North" holds no department
    moments = read(" ; ".join(s for s in strings if ISO_MOMENT.match(s)))
    asked = read(task, today, masks)
    return Setting(
        today=today,
        masks=tuple(dict.fromkeys(masks)),
        numbers=frozenset(numbers),
        asked=frozenset([*asked.numbers, *([float(today.year)] if today else [])]),
        dates=frozenset(moments.dates + asked.dates + ([today.isoformat()] if today else [])),
        times=frozenset(moments.times + asked.times),
    )


def _names_asked_about(task: str, strings: list[str]) -> list[str]:
    """Names of several words from the state that the request itself says: what the question
    is about, never an answer to it, whatever words they contain."""
    said = task.casefold()
    return [s for s in strings if " " in s.strip() and len(s) <= 80 and s.casefold() in said]


def _shown_tails(value: str) -> list[str]:
    """The last four digits of a long number (a card, an account), which a reply quotes as
    "ending in 4444"; never one that reads as a year, which a date holds."""
    runs = re.findall(r"\d{8,}", value.replace(" ", "").replace("-", ""))
    return [run[-4:] for run in runs if not 1900 <= int(run[-4:]) < 2100]


def _collect(value: Any, strings: list[str], numbers: set[float], depth: int) -> None:
    if depth > 12 or len(strings) > MAX_STRINGS:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            strings.append(str(key))
            _collect(item, strings, numbers, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _collect(item, strings, numbers, depth + 1)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        numbers.add(float(value))
    elif isinstance(value, str):
        strings.append(value)


def flat_values(value: Any) -> list[Any]:
    """The scalars of a JSON value (a simulated user's facts), in order."""
    if isinstance(value, dict):
        return [v for item in value.values() for v in flat_values(item)]
    if isinstance(value, list):
        return [v for item in value for v in flat_values(item)]
    return [value]


def _keys(value: Any, depth: int = 0) -> list[str]:
    """The keys of the state's collections (record ids), not the values a tool wrote."""
    if not isinstance(value, dict) or depth > 2:
        return []
    return [str(k) for k in value] + [k for v in value.values() for k in _keys(v, depth + 1)]


def _day_of(value: Any) -> date | None:
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None
