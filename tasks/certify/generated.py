"""What the system generates rather than the task asks for: ids of new records, counters, clocks.

Two solutions of one task may differ in these (doing two bookings in the other order swaps their
ids) and still be the same outcome, so the mutation and reorder gates compare outcomes modulo
them, and the guard check tolerates them (DESIGN §3.3).
"""

from __future__ import annotations

from typing import Any

from envmill.schemas.ids import canonical_json
from envmill.tasks.core.statekit import diff_states

CLOCK_ATTRS = frozenset({"current_time", "current_date", "now", "today", "clock"})
COUNTER_SUFFIXES = ("_counter", "_seq", "_sequence")
TOUCH_FIELDS = frozenset({"updated_at", "modified_at", "last_updated", "last_modified"})
NEW = "<new>"


def is_generated(change: dict[str, Any]) -> bool:
    """A diff entry the system makes, not the task: a clock (text) or an id counter (a whole
    number) at the top level, or a touch stamp (text) on a record. The name alone is not enough:
    ``next_of_kin`` holding records is data."""
    path, values = change["path"], (change["old"], change["new"])
    if not path:
        return True
    head = path[0]
    if len(path) == 1 and isinstance(head, str):
        if head in CLOCK_ATTRS:
            return all(v is None or isinstance(v, str) for v in values)
        if head.startswith("next_") or head.endswith(COUNTER_SUFFIXES):
            return all(
                v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in values
            )
    if len(path) >= 3 and path[-1] in TOUCH_FIELDS:
        return all(v is None or isinstance(v, str) for v in values)
    return False


def is_record_add(change: dict[str, Any]) -> bool:
    """A diff entry that adds a whole record (a dict) under a key the system chose."""
    return change["op"] == "add" and isinstance(change["new"], dict) and len(change["path"]) >= 2


def generated_ids(diff: list[dict[str, Any]]) -> set[str]:
    """Keys of the records a diff adds: the ids the system generated."""
    return {
        change["path"][-1]
        for change in diff
        if is_record_add(change) and isinstance(change["path"][-1], str)
    }


def outcome_view(initial: dict[str, Any], final: dict[str, Any]) -> list[str]:
    """What a run did to ``initial``, with generated ids masked and generated paths dropped.

    Two runs with equal views reached the same outcome; a created record is known by its content.
    """
    diff = diff_states(initial, final)
    new_ids = generated_ids(diff)
    view = []
    for change in diff:
        if is_generated(change):
            continue
        entry = [change["op"], _mask(change["path"], new_ids)]
        entry += [_mask(change["old"], new_ids), _mask(change["new"], new_ids)]
        view.append(canonical_json(entry))
    return sorted(view)


def _mask(value: Any, new_ids: set[str]) -> Any:
    if isinstance(value, str):
        return NEW if value in new_ids else value
    if isinstance(value, list):
        return [_mask(item, new_ids) for item in value]
    if isinstance(value, dict):  # as sorted pairs: two masked keys must not collapse into one
        pairs = [[_mask(key, new_ids), _mask(item, new_ids)] for key, item in value.items()]
        return sorted(pairs, key=canonical_json)
    return value
