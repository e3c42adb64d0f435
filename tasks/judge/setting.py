"""What the judge knows besides the reply: the scenario's day, the question, and what the state
holds. A value the reply shows that the state or the question holds is context; a value of the
answer's type that neither holds is invented."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from envmill.tasks.judge.reading import ISO_MOMENT, read

MAX_STRINGS = 5000


@dataclass(frozen=True)
class Setting:
    """``masks``: state strings with digits that are not moments (ids, addresses, phones), whose
    digits are no answer; ``numbers``, ``dates``, ``times``: what the state and the question
    hold; ``words``: the state's short strings (statuses, names)."""

    today: date | None = None
    masks: tuple[str, ...] = ()
    numbers: frozenset[float] = frozenset()
    dates: frozenset[str] = frozenset()
    times: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()
    question: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def setting_of(task: str, *states: dict[str, Any]) -> Setting:
    """The setting of a scenario's episode: its task and the states it went through."""
    strings: list[str] = []
    numbers: set[float] = set()
    for state in states:
        _collect(state, strings, numbers, 0)
    today = next((d for d in (_day_of(state.get("current_time")) for state in states) if d), None)
    masks = [s for s in strings if re.search(r"\d", s) and not ISO_MOMENT.fullmatch(s.casefold())]
    moments = read(" ; ".join(s for s in strings if ISO_MOMENT.match(s)))
    asked = read(task, today, masks)
    return Setting(
        today=today,
        masks=tuple(dict.fromkeys(masks)),
        numbers=frozenset(numbers | set(asked.numbers)),
        dates=frozenset(moments.dates + asked.dates + ([today.isoformat()] if today else [])),
        times=frozenset(moments.times + asked.times),
        words=frozenset(s.casefold() for s in strings if len(s) <= 40),
        question=task,
    )


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


def _day_of(value: Any) -> date | None:
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None
