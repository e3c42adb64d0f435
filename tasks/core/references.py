"""``"$N.path"`` arguments: a value an earlier call returned, named by the call's number and a
path into its result (``"$2.data.loan_id"``, ``"$1.data.0.order_id"`` for a list's first item).
A scenario's reference steps and a testing agent's chained probes both write them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REFERENCE = re.compile(r"^\$(\d+)((?:\.[\w-]+)*)$")


def resolve_references(value: Any, results: Mapping[int, Any], noun: str = "step") -> Any:
    """``value`` with each ``"$N.path"`` string replaced by ``results[N]`` at ``path``.

    Raises:
        LookupError: ``noun`` N has not run, or its result has nothing at ``path``.
    """
    if isinstance(value, dict):
        return {key: resolve_references(item, results, noun) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve_references(item, results, noun) for item in value]
    found = REFERENCE.match(value) if isinstance(value, str) else None
    if found is None:
        return value
    number, path = int(found.group(1)), [p for p in found.group(2).split(".") if p]
    if number not in results:
        raise LookupError(f"{value!r} names {noun} {number}, which has not run yet")
    current: Any = results[number]
    for part in path:
        if isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        elif isinstance(current, dict) and part in current:
            current = current[part]
        else:
            raise LookupError(f"{value!r}: {noun} {number}'s result has nothing at {part!r}")
    return current
