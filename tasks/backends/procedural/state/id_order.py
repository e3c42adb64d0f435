"""Ids that rise with the time a record was made, as a real system hands them out.

Records are filled in a random order of times, so "LR-00004" could be submitted before
"LR-00001": a rater read "cancel her oldest leave request" against the ids and found them out
of order (round 42). After filling, each entity whose making stamps a time (a create operation
with ``stamp: new.<field>``) has its ids renumbered in that field's order, and every reference to
them follows.
"""

from __future__ import annotations

import re
from typing import Any

from envmill.tasks.backends.procedural.spec.domain import DomainSpec

Records = dict[str, dict[str, dict[str, Any]]]


def ids_in_time_order(spec: DomainSpec, records: Records) -> Records:
    """``records`` (entity → id → record) with ids renumbered in creation-time order."""
    for name, entity in spec.entities.items():
        field, rows = made_at(spec, name), records.get(name) or {}
        if field is None or len(rows) < 2:
            continue
        ids, stamp = sorted(rows, key=_id_order), field
        made = sorted(rows, key=lambda i: (str(rows[i].get(stamp) or ""), _id_order(i)))
        renamed = {old: new for old, new in zip(made, ids, strict=True) if old != new}
        if not renamed:
            continue
        records[name] = {}  # the i-th made takes the i-th id, so the dict stays in id order
        for old, new in zip(made, ids, strict=True):
            rows[old][entity.id_field] = new
            records[name][new] = rows[old]
        for other, ref in _refs_to(spec, name):
            for record in (records.get(other) or {}).values():
                if record.get(ref) in renamed:
                    record[ref] = renamed[record[ref]]
    return records


def made_at(spec: DomainSpec, entity: str) -> str | None:
    """The field a create operation of ``entity`` stamps on the new record, if any."""
    for operation in spec.entities[entity].operations:
        if operation.kind != "create":
            continue
        for effect in operation.effects:
            if effect.kind == "stamp" and effect.path.startswith("new."):
                return effect.path.removeprefix("new.")
    return None


def _refs_to(spec: DomainSpec, entity: str) -> list[tuple[str, str]]:
    return [
        (other, field_name)
        for other, spec_entity in spec.entities.items()
        for field_name, field in spec_entity.fields.items()
        if field.entity == entity
    ]


def _id_order(record_id: str) -> tuple[int, str]:
    """ "LR-00010" after "LR-00009": by the number in it, then as text."""
    digits = re.findall(r"\d+", str(record_id))
    return (int(digits[-1]) if digits else 0, str(record_id))
