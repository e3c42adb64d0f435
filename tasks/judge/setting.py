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
    key = (task, *map(canonical_json, states))
    return _SETTINGS.get(key, lambda: _read_setting(task, *states))


def _read_setting(task: str, *states: dict[str, Any]) -> Setting:
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
