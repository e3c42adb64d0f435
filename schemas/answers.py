"""What a reply must say, as data (DESIGN §3.3): a typed expected answer, or the rule a refusal
rests on. envmill's judge (``tasks/judge``) reads replies against these; no scenario carries code
that reads the reply, whichever backend wrote it.

A record that does not parse (an unknown type, a value that is not of its type, an empty rule) is
refused here, with the field named, so a generator's mistake rejects its scenario and never
reaches a reward.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
MAX_MAGNITUDE = 1e15  # beyond any figure a business state holds; floats lose cents above it


class ExpectedAnswer(BaseModel):
    """The value a question asks for. ``value`` is of its ``type``: a number for count, number,
    money and duration (``unit`` one of minutes, hours, days, weeks); an ISO date, date-time or
    ``HH:MM`` time; a string for text, id and enum; a bool; a list of strings for list.

    ``rivals`` are values an agent could wrongly give that the state holds (the same field of
    other records, every value of an enum, a neighbouring count, the unfiltered total): a reply
    asserting one fails even beside the right value. ``context`` are values the reply may show
    besides the answer (the question's own figures, the old value of a changed field).
    ``phrase`` is the fact a yes/no question asks about, in words ("graduated")."""

    model_config = ConfigDict(extra="forbid")  # a misspelt "tolerence" is an error, not ignored

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
        for field in ("rivals", "context"):
            for number, other in enumerate(getattr(self, field)):
                if problem := _other_value_problem(self.type, other, field == "rivals"):
                    raise ValueError(f"expected_answer.{field}.{number}: {problem}")
        if self.type == "boolean" and not (self.phrase or "").strip():
            raise ValueError("expected_answer.phrase: a yes/no answer names what it is about")
        return self


class RefusalRule(BaseModel):
    """One rule that forbids the request in this state: its id, its condition in words, and the
    state values that trigger it (the status the record has, the limit or balance, the date).
    ``allowed`` are the values the rule would accept (a reply stating the record has one is an
    inverted rule); ``rivals`` other values of the triggering field (a guess)."""

    model_config = ConfigDict(extra="forbid")

    rule_id: str = Field(min_length=1)
    condition: str = Field(min_length=1)
    triggers: list[Any] = Field(min_length=1)
    allowed: list[Any] = Field(default_factory=list)
    rivals: list[Any] = Field(default_factory=list)
    policy: str = Field(
        default="",
        description="the business rule in the system prompt's words, which a reply may quote",
    )

    @field_validator("triggers", "allowed", "rivals")
    @classmethod
    def _scalars(cls, values: list[Any]) -> list[Any]:
        for value in values:
            if isinstance(value, dict | list) or value is None:
                raise ValueError(f"a trigger value is a string, number or bool, not {value!r}")
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"a trigger value is a finite number, not {value!r}")
            if isinstance(value, str) and not says_something(value):
                raise ValueError(f"{value!r} is no fact a reply could be judged by")
        return values


class Refusal(BaseModel):
    """Why the request must be declined: the rule it breaks (any of ``rules`` is a true reason),
    what the request wanted (``action`` in words, e.g. "cancel", and the values it would set,
    e.g. "cancelled"), so a reply claiming the work can be told from one that declines."""

    model_config = ConfigDict(extra="forbid")

    rules: list[RefusalRule] = Field(min_length=1)
    action: str = ""
    targets: list[str] = Field(default_factory=list)
    subject: str = ""


def type_problem(kind: str, value: Any, unit: str | None = None) -> str | None:
    """Why ``value`` is not a value of ``kind`` (None when it is)."""
    if kind in NUMERIC_TYPES:
        return _number_problem(kind, value, unit)
    if kind == "boolean":
        return None if isinstance(value, bool) else f"{value!r} is not true or false"
    if kind == "list":
        if not isinstance(value, list) or not value:
            return f"{value!r} is not a non-empty list"
        return next((p for v in value if (p := type_problem("text", v))), None)
    if not isinstance(value, str) or not value.strip():
        return f"{value!r} is not text"
    if kind in ("text", "id", "enum") and not says_something(value):
        return f"{value!r} is no fact a reply could be judged by (any reply holds such words)"
    return _moment_problem(kind, value)


# Words any reply holds: a value or trigger made of them alone would be "said" by every reply.
FUNCTION_WORDS = frozenset(
    "a an the is are was were be been am it its this that these those of to in on at by for"
    " with from and or not no yes i you he she we they me my your his her our their there here"
    " do does did has have had can will would".split()
)


def says_something(text: str) -> bool:
    """Whether ``text`` holds a word or code beyond those every reply holds."""
    words = re.findall(r"\w+", text.casefold())
    return any(w not in FUNCTION_WORDS and (len(w) > 1 or w.isdigit()) for w in words)


def _other_value_problem(kind: str, value: Any, rival: bool) -> str | None:
    """Why a rival or context value cannot be read beside an answer of ``kind``: a rival of a
    numeric answer is a number, any other a plain value; none is infinite or a structure."""
    if isinstance(value, dict | list) or value is None:
        return f"{value!r} is not a plain value"
    if rival and kind in NUMERIC_TYPES:
        return _number_problem("number", value, None)
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not finite"
    return None


def _number_problem(kind: str, value: Any, unit: str | None) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{value!r} is not a number"
    if abs(value) > MAX_MAGNITUDE or not math.isfinite(value):  # a huge int: no float
        return f"{value!r} is not a finite number below {MAX_MAGNITUDE:.0e}"
    if kind == "count" and (value < 0 or value != int(value)):
        return f"{value!r} is not a count"
    if kind == "duration" and unit not in DURATION_UNITS:
        return f"a duration's unit is one of {', '.join(DURATION_UNITS)}, not {unit!r}"
    if kind in ("count", "number") and unit is not None:
        return f"a {kind} has no unit (got {unit!r})"
    return None


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
