"""What a reply must say, as data (DESIGN §3.3): a typed expected answer, or the rule a refusal
rests on. envmill's judge (``tasks/judge``) reads replies against these; no scenario carries code
that reads the reply, whichever backend wrote it.

A record that does not parse (an unknown type, a value that is not of its type, an empty rule) is
refused here, with the field named, so a generator's mistake rejects its scenario and never
reaches a reward.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

AnswerType = Literal[
    "count",
    "number",
    "money",
    "date",
    "datetime",
    "time",
    "duration",
    "text",
    "id",
    "enum",
    "boolean",
    "list",
]
NUMERIC_TYPES = frozenset({"count", "number", "money", "duration"})
DURATION_UNITS = ("minutes", "hours", "days", "weeks")
CLOCK = re.compile(r"^\d{2}:\d{2}(:\d{2})?$")


class ExpectedAnswer(BaseModel):
    """The value a question asks for. ``value`` is of its ``type``: a number for count, number,
    money and duration (``unit`` one of minutes, hours, days, weeks); an ISO date, date-time or
    ``HH:MM`` time; a string for text, id and enum; a bool; a list of strings for list.

    ``rivals`` are values an agent could wrongly give that the state holds (the same field of
    other records, every value of an enum, a neighbouring count, the unfiltered total): a reply
    asserting one fails even beside the right value. ``context`` are values the reply may show
    besides the answer (the question's own figures, the old value of a changed field).
    ``phrase`` is the fact a yes/no question asks about, in words ("graduated")."""

    type: AnswerType
    value: Any
    unit: str | None = None
    tolerance: float | None = Field(default=None, ge=0)
    rivals: list[Any] = Field(default_factory=list)
    context: list[Any] = Field(default_factory=list)
    phrase: str | None = None
    ordered: bool = False

    @model_validator(mode="after")
    def _value_is_of_its_type(self) -> ExpectedAnswer:
        problem = type_problem(self.type, self.value, self.unit)
        if problem:
            raise ValueError(f"expected_answer.value: {problem}")
        if self.type == "boolean" and not (self.phrase or "").strip():
            raise ValueError("expected_answer.phrase: a yes/no answer names what it is about")
        return self


class RefusalRule(BaseModel):
    """One rule that forbids the request in this state: its id, its condition in words, and the
    state values that trigger it (the status the record has, the limit or balance, the date).
    ``allowed`` are the values the rule would accept (a reply stating the record has one is an
    inverted rule); ``rivals`` other values of the triggering field (a guess)."""

    rule_id: str = Field(min_length=1)
    condition: str = Field(min_length=1)
    triggers: list[Any] = Field(min_length=1)
    allowed: list[Any] = Field(default_factory=list)
    rivals: list[Any] = Field(default_factory=list)

    @field_validator("triggers", "allowed", "rivals")
    @classmethod
    def _scalars(cls, values: list[Any]) -> list[Any]:
        for value in values:
            if isinstance(value, dict | list) or value is None:
                raise ValueError(f"a trigger value is a string, number or bool, not {value!r}")
        return values


class Refusal(BaseModel):
    """Why the request must be declined: the rule it breaks (any of ``rules`` is a true reason),
    what the request wanted (``action`` in words, e.g. "cancel", and the values it would set,
    e.g. "cancelled"), so a reply claiming the work can be told from one that declines."""

    rules: list[RefusalRule] = Field(min_length=1)
    action: str = ""
    targets: list[str] = Field(default_factory=list)
    subject: str = ""


def type_problem(kind: str, value: Any, unit: str | None = None) -> str | None:
    """Why ``value`` is not a value of ``kind`` (None when it is)."""
    if kind in NUMERIC_TYPES:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{value!r} is not a number"
        if kind == "count" and (value < 0 or value != int(value)):
            return f"{value!r} is not a count"
        if kind == "duration" and unit not in DURATION_UNITS:
            return f"a duration's unit is one of {', '.join(DURATION_UNITS)}, not {unit!r}"
        return None
    if kind == "boolean":
        return None if isinstance(value, bool) else f"{value!r} is not true or false"
    if kind == "list":
        if not isinstance(value, list) or not value:
            return f"{value!r} is not a non-empty list"
        return next((f"{v!r} is not text" for v in value if not isinstance(v, str)), None)
    if not isinstance(value, str) or not value.strip():
        return f"{value!r} is not text"
    return _moment_problem(kind, value)


def _moment_problem(kind: str, value: str) -> str | None:
    try:
        if kind == "date":
            date.fromisoformat(value[:10])
            return None if len(value) == 10 else f"{value!r} is not an ISO date"
        if kind == "datetime":
            datetime.fromisoformat(value)
            if len(value) < 16 or value[10] not in "T ":
                return f"{value!r} is a date without a time; use type date"
        if kind == "time":
            if not CLOCK.match(value):
                return f"{value!r} is not a time (HH:MM)"
            time.fromisoformat(value)
    except ValueError:
        return f"{value!r} is not an ISO {kind}"
    return None
