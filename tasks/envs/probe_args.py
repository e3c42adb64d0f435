"""Plausible arguments for a probe call, from a tool's parameter schema and the current state.

A probe needs arguments a tool accepts often enough to reach the code that writes the state:
ids that exist in the state (``member_id`` → a key of ``members``, or a ``member_id`` field of a
record), enum values, dates after the state's ``current_time``, small numbers, plain text. It
is fine when a probe fails (``success: False``); ``attempt`` varies the choices, so repeated
probes of a tool reach other records and other branches. Deterministic: the same schema, state
and attempt give the same arguments.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

_MAX_POOL = 20
_MAX_DEPTH = 4
_NAMES = ("Alex Morgan", "Sam Lee", "Kim Park")
_TEXT_HINTS = (
    ("email", lambda a, tag: f"probe{tag}{a}@example.com"),
    ("phone", lambda a, tag: f"555-{2 if tag else 1}{a:03d}"),
    ("password", lambda a, tag: f"Probe-secret-{a}"),
    ("currency", lambda a, tag: "USD"),
    ("country", lambda a, tag: "US"),
    ("address", lambda a, tag: f"{a + 1} Main Street"),
    ("name", lambda a, tag: _NAMES[(a + len(tag)) % len(_NAMES)]),
    ("title", lambda a, tag: f"Probe title {tag}{a}"),
)
_REFERENCE_ENDINGS = ("id", "ids", "code", "number", "sku", "status", "type", "kind", "category")
_DATE_WORDS = ("date", "day", "_on", "birth")
_TIME_WORDS = ("time", "_at", "start", "end", "when", "deadline", "due", "until", "from")


class StateFacts:
    """What argument choices draw on: the values each field name takes anywhere in the state,
    the keys of each collection (a dict of records), the state's current time, and the
    literals the source compares each name with (``hints``, from ``probe_state``)."""

    def __init__(
        self, state: dict[str, Any], hints: dict[str, list[str]] | None = None, tag: str = ""
    ) -> None:
        self.hints, self.tag = hints or {}, tag  # tag: made-up records differ from arguments
        self.fields: dict[str, list[Any]] = {}
        self.collections: dict[str, list[str]] = {}
        for attr, value in state.items():
            if isinstance(value, dict) and value and all(type(v) is dict for v in value.values()):
                self.collections[attr] = list(value)[:_MAX_POOL]
            self._walk(attr, value, 0)
        self.now = _parse_time(state.get("current_time")) or datetime(2025, 1, 1, 9)

    def _walk(self, key: str, value: Any, depth: int) -> None:
        if isinstance(value, str | int | float):
            pool = self.fields.setdefault(key, [])
            if len(pool) < _MAX_POOL and value not in pool:
                pool.append(value)
        elif isinstance(value, dict) and depth < _MAX_DEPTH:
            for child_key, child in value.items():
                self._walk(child_key, child, depth + 1)
        elif isinstance(value, list) and depth < _MAX_DEPTH:
            for item in value[:_MAX_POOL]:
                self._walk(key, item, depth + 1)


def probe_arguments(parameters: dict[str, Any], facts: StateFacts, attempt: int) -> dict[str, Any]:
    """Arguments for one probe call of a tool whose JSON Schema parameters are ``parameters``;
    optional parameters are left to their defaults on even attempts."""
    required = set(parameters.get("required") or [])
    arguments = {}
    for name, schema in (parameters.get("properties") or {}).items():
        if name in required or attempt % 2 == 1:
            arguments[name] = field_value(
                name, schema if isinstance(schema, dict) else {}, facts, attempt
            )
    return arguments


def field_value(name: str, schema: dict[str, Any], facts: StateFacts, attempt: int) -> Any:
    """A value for a parameter or a record field ``name`` of JSON Schema ``schema``; a nullable
    one is None on even attempts."""
    if _nullable(schema) and attempt % 2 == 0:
        return None
    schema = _concrete(schema)
    if schema.get("enum"):
        return schema["enum"][attempt % len(schema["enum"])]
    kind = schema.get("type")
    lower = name.lower()
    if kind == "array":
        items = schema["items"] if isinstance(schema.get("items"), dict) else {}
        return [field_value(_singular(name), items, facts, attempt)]
    if kind == "object":
        properties = schema.get("properties") or {}
        return {k: field_value(k, v, facts, attempt) for k, v in properties.items()}
    pool = [v for v in _pool(lower, facts) if _fits(v, kind)]
    if pool and (lower.endswith(_REFERENCE_ENDINGS) or attempt % 2 == 1 or kind not in _MADE):
        return pool[attempt % len(pool)]
    hints = facts.hints.get(lower, []) if kind in ("string", None) else []
    if hints:
        return hints[attempt % len(hints)]
    return _MADE.get(kind or "", _text)(lower, facts, attempt)


def _nullable(schema: dict[str, Any]) -> bool:
    options = schema.get("anyOf") or []
    kind = schema.get("type")
    return any(isinstance(o, dict) and o.get("type") == "null" for o in options) or (
        isinstance(kind, list) and "null" in kind
    )


def _concrete(schema: dict[str, Any]) -> dict[str, Any]:
    """The first non-null choice of an ``anyOf`` / type list, its enum without the null (a
    nullable parameter lists null among its values too)."""
    for option in schema.get("anyOf") or []:
        if isinstance(option, dict) and option.get("type") != "null":
            return _concrete(option)
    kind, enum = schema.get("type"), schema.get("enum")
    if isinstance(kind, list):
        schema = {**schema, "type": next((k for k in kind if k != "null"), None)}
    if isinstance(enum, list) and None in enum:
        schema = {**schema, "enum": [value for value in enum if value is not None]}
    return schema


def _pool(name: str, facts: StateFacts) -> list[Any]:
    """Values ``name`` takes in the state, else the keys of the collection it refers to."""
    if name in facts.fields:
        return facts.fields[name]
    entity = name.removesuffix("_ids").removesuffix("_id").removesuffix("id").rstrip("_")
    if not entity or entity == name:
        return []
    plural = [f"{entity}s", f"{entity}es", f"{entity[:-1]}ies", entity]
    for attr in plural + sorted(facts.collections):
        if attr in facts.collections and (attr in plural or entity in attr):
            return facts.collections[attr]
    return []


def _fits(value: Any, kind: str | None) -> bool:
    if kind == "integer":
        return type(value) is int
    if kind == "number":
        return type(value) in (int, float)
    if kind == "string":
        return type(value) is str
    if kind == "boolean":
        return type(value) is bool
    return True


def _text(name: str, facts: StateFacts, attempt: int) -> str:
    later = facts.now + timedelta(days=attempt + 1)
    if any(word in name for word in _DATE_WORDS) and "time" not in name:
        return later.date().isoformat()
    if any(word in name for word in _TIME_WORDS):
        return later.replace(hour=10, minute=0, second=0, microsecond=0).isoformat()
    for word, make in _TEXT_HINTS:
        if word in name:
            return make(attempt, facts.tag)
    return f"probe {name} {facts.tag}{attempt}"


def _integer(name: str, facts: StateFacts, attempt: int) -> int:
    return attempt + 1


def _number(name: str, facts: StateFacts, attempt: int) -> float:
    return 10.0 * (attempt + 1)


def _boolean(name: str, facts: StateFacts, attempt: int) -> bool:
    return attempt % 2 == 0


_MADE = {"string": _text, "integer": _integer, "number": _number, "boolean": _boolean}


def _singular(name: str) -> str:
    if name.endswith("_ids"):
        return name[:-1]
    return name[:-1] if name.endswith("s") else name


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.replace(tzinfo=None)
