"""What a model-style task answer is made of, and how its writer reads the state it is given.

A ``Scene`` is one task as a model writes it: the request in the user's voice, the calls that
fulfil it, and (for questions, conditions and refusals) what the final reply must say. In a
conversation the facts the agent cannot look up move out of the request into ``facts``, which
the simulated user reveals when asked. A ``View`` is the scenario's state as the writer reads
it, with the scenario number that keeps two scenarios of one kind from telling the same story.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any


@dataclass(frozen=True)
class Scene:
    task: str
    steps: list[dict[str, Any]]
    chat: str | None = None  # the request when the user reveals ``facts`` only when asked
    facts: dict[str, Any] = field(default_factory=dict)
    expected_answer: dict[str, Any] | None = None
    reply: str | None = None
    refusal: dict[str, Any] | None = None

    def answer(self, conversational: bool) -> dict[str, Any]:
        """The scenario_task answer: the request in the mode asked for, with its data."""
        told = conversational and self.chat is not None
        said: dict[str, Any] = {"task": self.chat if told else self.task, "steps": self.steps}
        if conversational:
            said["user_facts"] = self.facts if told else {}
        if self.expected_answer is not None:
            said |= {"expected_answer": self.expected_answer, "reply": self.reply}
        if self.refusal is not None:
            said |= {"refusal": self.refusal, "reply": self.reply}
        return said


@dataclass(frozen=True)
class View:
    """The scenario's state, its number and mode, as the task writer sees them."""

    state: dict[str, Any]
    index: int = 0

    def records(self, attr: str) -> list[dict[str, Any]]:
        value = self.state.get(attr) or {}
        return [record for record in value.values() if isinstance(record, dict)]

    def get(self, attr: str, key: Any) -> dict[str, Any] | None:
        found = (self.state.get(attr) or {}).get(key)
        return found if isinstance(found, dict) else None

    def pick(self, items: list[Any]) -> Any:
        """One of ``items``, a different one for each scenario number (None when empty)."""
        return items[self.index % len(items)] if items else None

    @property
    def now(self) -> datetime:
        return datetime.fromisoformat(str(self.state.get("current_time")))

    @property
    def today(self) -> date:
        return self.now.date()


def step(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


def say_date(value: str | date) -> str:
    """``2025-03-14`` as a person says it: "14 March 2025"."""
    day = value if isinstance(value, date) else date.fromisoformat(str(value)[:10])
    return f"{day.day} {day:%B %Y}"


def say_day(value: str | date, today: date) -> str:
    """A date near ``today`` as a person says it: "today", "tomorrow", else "Friday 14 March"."""
    day = value if isinstance(value, date) else date.fromisoformat(str(value)[:10])
    gap = (day - today).days
    if gap in (0, 1):
        return ("today", "tomorrow")[gap]
    return f"{day:%A} {day.day} {day:%B}"


def say_time(value: str) -> str:
    """``2025-03-14T14:30:00`` as "2:30 pm" (on the hour: "2 pm")."""
    moment = datetime.fromisoformat(value)
    hour = moment.hour % 12 or 12
    minutes = f":{moment.minute:02d}" if moment.minute else ""
    return f"{hour}{minutes} {'am' if moment.hour < 12 else 'pm'}"


def say_money(amount: float) -> str:
    return f"${amount:,.2f}"
