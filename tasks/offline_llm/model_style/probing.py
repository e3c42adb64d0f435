"""The model-style testing agent: each design's own positive calls (``Design.probes``), a negative
call per tool that spoils one argument the way a tester does first (an id that does not exist,
a value no rule allows, an empty text), laid out in the order they run.

A positive call may come with the calls that set it up (a registration before a booking); such
a unit names its own earlier calls as ``"@1.data.donor_id"``, and the layout turns that into
the answer's ``"$N.data.donor_id"``. Calls that move the clock go last, earliest first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_LOCAL = re.compile(r"^@(\d+)((?:\.[\w-]+)*)$")


@dataclass(frozen=True)
class Shown:
    """The state as the prompt shows it (collections may be cut)."""

    state: dict[str, Any]

    def records(self, attr: str) -> list[dict[str, Any]]:
        value = self.state.get(attr) or {}
        return [record for record in value.values() if isinstance(record, dict)]

    def first(self, attr: str) -> dict[str, Any]:
        return next(iter(self.records(attr)), {})


def call(tool: str, expectation: str, at_time: str | None = None, **arguments: Any) -> dict:
    """One positive call, as the answer lists it."""
    made = {"tool": tool, "kind": "positive", "arguments": arguments, "expectation": expectation}
    return made | ({"at_time": at_time} if at_time else {})


def negative_call(
    tool: dict[str, Any], state: dict[str, Any], positive: dict[str, Any] | None
) -> dict[str, Any] | None:
    """A call the tool must refuse: the first parameter spoiled, the others as the positive
    call had them (None for a tool without parameters)."""
    properties = (tool.get("parameters") or {}).get("properties") or {}
    if not properties:
        return None
    required = (tool.get("parameters") or {}).get("required") or list(properties)
    name = required[0] if required else next(iter(properties))
    wrong, why = _spoiled(name, properties[name], state)
    arguments = {k: v for k, v in ((positive or {}).get("arguments") or {}).items()}
    arguments = {k: v for k, v in arguments.items() if not str(v).startswith("@")}
    for other in required:
        arguments.setdefault(other, "x")
    arguments[name] = wrong
    return {"tool": tool["name"], "kind": "negative", "arguments": arguments, "expectation": why}


def _spoiled(name: str, schema: dict[str, Any], state: dict[str, Any]) -> tuple[Any, str]:
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if name.endswith("_id"):
        prefix = _prefix_of(name, state) or name.removesuffix("_id")[:2].upper()
        noun = name.removesuffix("_id").replace("_", " ")
        return f"{prefix}-9999", f"Fails because no {noun} has the id {prefix}-9999."
    if "integer" in kinds or "number" in kinds:
        return -1, f"Fails because {name} cannot be negative."
    return "", f"Fails because {name} is empty."


def _prefix_of(field: str, state: dict[str, Any]) -> str | None:
    """The prefix of the ids the state keeps in ``field`` (``DN`` of ``DN-0007``)."""
    for value in state.values():
        if not isinstance(value, dict):
            continue
        for record in value.values():
            found = record.get(field) if isinstance(record, dict) else None
            if isinstance(found, str) and "-" in found:
                return found.rsplit("-", 1)[0]
    return None


def laid_out(units: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The units' calls in running order (clock moves last, earliest first), local references
    numbered as the answer's."""
    still = [unit for unit in units if not any(c.get("at_time") for c in unit)]
    moving = sorted(
        (unit for unit in units if any(c.get("at_time") for c in unit)),
        key=lambda unit: max(c.get("at_time") or "" for c in unit),
    )
    calls: list[dict[str, Any]] = []
    for unit in [*still, *moving]:
        start = len(calls)
        for made in unit:
            arguments = {k: _numbered(v, start) for k, v in made["arguments"].items()}
            calls.append({**made, "arguments": arguments})
    return calls


def _numbered(value: Any, start: int) -> Any:
    found = _LOCAL.match(value) if isinstance(value, str) else None
    return f"${start + int(found.group(1))}{found.group(2)}" if found else value
