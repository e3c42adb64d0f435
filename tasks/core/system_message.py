"""The system message of a trajectory (DESIGN §3.4): introduction, current date and time, rules."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

DEFAULT_INTRODUCTION = "You are an assistant that operates a system through its tools."
TIME_KEYS = ("current_time", "current_date", "now", "today")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Briefing:
    """What an environment tells every agent before the task: who it serves and its rules."""

    introduction: str = ""
    rules: tuple[str, ...] = ()


NO_BRIEFING = Briefing()


def system_prompt(
    introduction: str, business_rules: list[str], initial_state: dict[str, Any] | None = None
) -> str:
    """Introduction, current date and time (when the state has one) and business rules."""
    parts = [introduction.strip() or DEFAULT_INTRODUCTION]
    now = describe_now(initial_state or {})
    if now:
        parts.append(now)
    if business_rules:
        parts.append("Business rules:\n" + "\n".join(f"- {rule}" for rule in business_rules))
    return "\n\n".join(parts)


def describe_now(state: dict[str, Any]) -> str | None:
    """The line "Current date and time: 2025-03-10 09:00 (Monday)." from the state's clock.

    Tools compare against the state's own clock, so an agent that assumes today's real date
    schedules in the past; a value that is not ISO 8601 is still passed on as written.
    """
    value = next((state[k] for k in TIME_KEYS if isinstance(state.get(k), str)), "").strip()
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return f"Current date and time: {value}."
    if ISO_DATE.match(value):
        return f"Current date: {moment:%Y-%m-%d} ({moment:%A})."
    zone = "" if moment.tzinfo is None else " UTC" if not moment.utcoffset() else f" {moment:%z}"
    return f"Current date and time: {moment:%Y-%m-%d %H:%M}{zone} ({moment:%A})."
