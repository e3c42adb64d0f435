"""The values the fake testing agent puts in its calls: for a positive call what a careful tester
picks from the state shown (a record in a status the tool accepts, one no earlier call of the
answer changes where there is one), for a negative call one wrong value and why it is wrong."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from envmill.tasks.backends.procedural.manifest import ArgManifest
from envmill.tasks.offline_llm.skeleton_source import TopicModule


def positive_value(
    arg: ArgManifest, state: dict, module: TopicModule, claimed: set[str] | None = None
) -> Any:
    """A value a careful tester picks from the state for one argument; an id not in ``claimed``
    (the records earlier state-changing calls use) where the state has one."""
    records = state.get(arg.state_attr or "", {}) if arg.state_attr else {}
    if arg.source == "entity_id":
        return pick_record(records, arg.prefer, claimed or set()) or f"{arg.entity or 'item'}-0001"
    if arg.source == "str" and arg.entity and records:
        label = module.compiled.label_fields.get(arg.entity, "")
        first = next(iter(records.values()), {})
        return str(first.get(label, "a")).split()[0]
    if arg.source == "enum":
        preferred = [v for v in (arg.values or []) if v in arg.prefer.get(arg.name, [])]
        return (preferred or arg.values or ["a"])[0]
    if arg.source in ("int", "float"):
        low = arg.minimum if arg.minimum is not None else 1
        value = min(max(low, 1), arg.maximum if arg.maximum is not None else 1000)
        return int(value) if arg.source == "int" else round(float(value) + 0.5, 2)
    if arg.source in ("date", "datetime"):
        now = parse_time(state.get("current_time")) or datetime(2025, 6, 2, 9)
        later = (now + timedelta(days=7)).replace(hour=10, minute=0, second=0)
        return later.date().isoformat() if arg.source == "date" else later.isoformat()
    if arg.source == "bool":
        return True
    return _text_for(arg)


def weak_spot(arg: ArgManifest) -> int:
    """Which argument a tester spoils first: an id, a closed choice, a bounded number, text."""
    order = {"entity_id": 0, "enum": 1, "int": 2, "float": 2, "date": 3, "datetime": 3}
    return 4 if arg.faker else order.get(arg.source, 4)


def negative_value(arg: ArgManifest, state: dict) -> tuple[Any, str]:
    """A wrong value for one argument, and why it is wrong."""
    if arg.faker:
        return "", f"{arg.name} must not be empty"
    if arg.source == "entity_id":
        records = state.get(arg.state_attr or "", {})
        prefix = next(iter(records), "ID-1").rsplit("-", 1)[0]
        return f"{prefix}-9999", f"{arg.entity} {prefix}-9999 does not exist"
    if arg.source == "enum":
        return "unknown", f"'unknown' is not an allowed {arg.name}"
    if arg.source in ("int", "float"):
        return -5, f"{arg.name} cannot be negative"
    if arg.source in ("date", "datetime"):
        return "next tuesday", f"{arg.name} is not an ISO date"
    if arg.source == "bool":
        return "yes", f"{arg.name} must be a boolean"
    return "", f"{arg.name} must not be empty"


def pick_record(records: dict, prefer: dict[str, list[Any]], claimed: set[str]) -> str | None:
    """The first record that fits ``prefer`` and is not claimed; else the first that fits; else
    the first record."""
    fitting = [
        key
        for key, record in records.items()
        if all(record.get(field) in values for field, values in prefer.items())
    ]
    free = [key for key in fitting if key not in claimed]
    return next(iter(free or fitting or list(records)), None)


def free_record(records: dict, prefer: dict[str, list[Any]], claimed: set[str]) -> str | None:
    """A record that fits ``prefer`` and no earlier call uses, or None."""
    return next(
        (
            key
            for key, record in records.items()
            if key not in claimed
            and all(record.get(field) in values for field, values in prefer.items())
        ),
        None,
    )


def _text_for(arg: ArgManifest) -> str:
    samples = {
        "email": "jordan.reyes@example.org",
        "phone_number": "555-0142",
        "basic_phone_number": "555-0142",
        "name": "Jordan Reyes",
    }
    return samples.get(arg.faker or "", samples.get(arg.name, f"Test {arg.name.replace('_', ' ')}"))


def parse_time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
