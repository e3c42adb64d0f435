"""The reference's last words when the task asks for work, not an answer (DESIGN §3.4).

SFT copies a reference word for word, so its closing message says what happened in concrete
terms, read from the change the solution made to the state: each record created (with its id
and a few of its values), each field changed (its new value), each record removed. Counters and
the clock are the system's, not news to the user. The wording varies with the content and a
seed, so no one sentence closes a corpus.
"""

from __future__ import annotations

import re
from typing import Any

from envmill.schemas.ids import sha256_hex
from envmill.tasks.certify.generated import is_generated
from envmill.tasks.core.statekit import diff_states

OPENERS = ("Done.", "All set.", "That's taken care of.", "I've made the changes.", "Finished.")
# never a question: a simulated user answers one, and the episode would not end
CLOSERS = ("", "", " Let me know if you need anything else.", " Tell me if there is more to do.")
MAX_RECORDS = 4  # a longer list is summed up: the user asked for the outcome, not a dump
MAX_FIELDS = 3
SYSTEM_SUFFIXES = ("_at", "_on", "created", "updated")


def closing_message(initial: dict[str, Any], final: dict[str, Any], seed: str) -> str:
    """What changed from ``initial`` to ``final``, as a person reports finished work."""
    pick = int(sha256_hex(seed)[:8], 16)
    news = _news(diff_states(initial, final))
    if not news:
        return f"{OPENERS[pick % len(OPENERS)]} Nothing needed to change."
    shown = news[:MAX_RECORDS]
    rest = len(news) - len(shown)
    body = "; ".join(shown) + (f"; and {rest} more change{'s' if rest > 1 else ''}" if rest else "")
    closer = CLOSERS[(pick // 7) % len(CLOSERS)]
    return f"{OPENERS[pick % len(OPENERS)]} {body[:1].upper()}{body[1:]}.{closer}"


def _news(changes: list[dict[str, Any]]) -> list[str]:
    """One clause per record the change touched, in the order of the state."""
    by_record: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for change in changes:
        if is_generated(change):  # counters, clocks, touch stamps: the system's, not news
            continue
        path = [str(p) for p in change["path"]]
        by_record.setdefault(tuple(path[:2]), []).append({**change, "path": path})
    return [_clause(record, found) for record, found in by_record.items()]


def _clause(record: tuple[str, ...], changes: list[dict[str, Any]]) -> str:
    if len(record) == 1:  # a top-level value: "the balance is now 120.5"
        return f"{_words(record[0])} is now {_say(changes[0]['new'])}"
    noun, key = f"{_singular(_words(record[0]))} {record[1]}", record[1]
    whole = next((c for c in changes if len(c["path"]) == 2), None)
    if whole is not None and whole["op"] == "add":
        return f"{noun} is created{_with(whole['new'], key)}"
    if whole is not None and whole["op"] == "remove":
        return f"{noun} is removed"
    if whole is not None:  # a value keyed by name ("stock": {"apple": 5})
        return f"{noun} {_now(whole['new'])}"
    fields = [c for c in changes if len(c["path"]) >= 3][:MAX_FIELDS]
    said = ", ".join(f"{_words(c['path'][-1])} {_now(c['new'])}" for c in fields)
    return f"{noun}: {said}"


def _with(record: Any, key: str) -> str:
    """A few of a new record's own values: what the user would check."""
    if not isinstance(record, dict):
        return f" ({_say(record)})"
    fields = [
        (field, value)
        for field, value in record.items()
        if _plain(value) and str(value) != key and not field.endswith(SYSTEM_SUFFIXES)
    ]
    # its status first, then its own values, then its links
    fields.sort(key=lambda item: (item[0] != "status", item[0].endswith("id")))
    values = [f"{_words(field)} {_say(value)}" for field, value in fields[:MAX_FIELDS]]
    return f" with {', '.join(values)}" if values else ""


def _now(value: Any) -> str:
    if isinstance(value, bool):
        return "is now set" if value else "is now cleared"
    if value is None or value == "":
        return "is now cleared"
    return f"is now {_say(value)}"


def _say(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value.replace("_", " ") if re.fullmatch(r"[a-z_]+", value) else value
    if isinstance(value, float):  # 0.1 + 0.2 reads 0.3
        return str(int(value)) if value.is_integer() else repr(round(value, 6))
    if isinstance(value, list):
        return ", ".join(_say(v) for v in value[:5]) or "none"
    return str(value) if _plain(value) else "updated"


def _plain(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and len(str(value)) <= 80


def _words(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").strip().lower()


def _singular(noun: str) -> str:
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    if noun.endswith(("sses", "ches", "shes", "xes")):
        return noun[:-2]
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun
