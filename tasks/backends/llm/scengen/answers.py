"""A model's typed expected answer, checked before it is used: well formed (its type known, its
value of that type) and supported (the value is what the reference steps' results show), so a
reward never rests on a value the agent could not have read."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from envmill.schemas.answers import ExpectedAnswer
from envmill.schemas.scenario import first_problem

CENT = 0.005


def parse_expected(raw: dict[str, Any]) -> tuple[ExpectedAnswer | None, str | None]:
    """The record, or the one-line problem naming the field."""
    try:
        return ExpectedAnswer.model_validate(raw), None
    except ValidationError as exc:
        problem = first_problem(exc)
        return None, problem if problem.startswith(
            "expected_answer"
        ) else f"expected_answer.{problem}"


def unsupported(expected: ExpectedAnswer, results: list[Any]) -> str | None:
    """Why the steps' results do not show ``expected.value`` (None when they do)."""
    scalars: list[Any] = []
    lengths: list[int] = []
    for result in results:
        _walk(result, scalars, lengths)
    values = expected.value if expected.type == "list" else [expected.value]
    for value in values:
        if not _shown(expected.type, value, scalars, lengths):
            return (
                f"expected_answer.value: {value!r} is not what the steps' results show; state "
                "the value exactly as a tool returned it"
            )
    return None


def shown_in(value: Any, results: list[Any]) -> bool:
    """Whether the steps' results show ``value`` (a refusal's trigger: a status, a limit)."""
    scalars: list[Any] = []
    lengths: list[int] = []
    for result in results:
        _walk(result, scalars, lengths)
    if isinstance(value, bool):
        return _shown("boolean", value, scalars, lengths)
    kind = "number" if isinstance(value, int | float) else "text"
    return _shown(kind, value, scalars, lengths)


def _shown(kind: str, value: Any, scalars: list[Any], lengths: list[int]) -> bool:
    if kind in ("count", "number", "money", "duration"):
        numbers = [s for s in scalars if isinstance(s, int | float) and not isinstance(s, bool)]
        candidates = numbers + (lengths if kind == "count" else [])
        return any(abs(float(value) - n) <= CENT for n in candidates)
    if kind == "boolean":
        return any(s is value for s in scalars)
    texts = [s for s in scalars if isinstance(s, str)]
    wanted = str(value).casefold()
    if kind in ("date", "datetime"):
        size = 10 if kind == "date" else 16
        return any(t[:size] == str(value)[:size] for t in texts)
    if kind == "time":
        return any(t[11:16] == wanted[:5] or t[:5] == wanted[:5] for t in texts)
    return any(t.casefold() == wanted for t in texts)


def _walk(value: Any, scalars: list[Any], lengths: list[int], depth: int = 0) -> None:
    if depth > 20:
        return
    if isinstance(value, dict):
        lengths.append(len(value))
        for key, item in value.items():
            scalars.append(key)
            _walk(item, scalars, lengths, depth + 1)
    elif isinstance(value, list):
        lengths.append(len(value))
        for item in value:
            _walk(item, scalars, lengths, depth + 1)
    else:
        scalars.append(value)
