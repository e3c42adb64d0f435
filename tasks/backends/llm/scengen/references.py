"""Whether a state's records point at records that exist.

Ids in generated environments share a shape per entity: a prefix and a number (``M-0003``,
``LN00012``). A field value of that shape whose prefix is some collection's key prefix must be a
key of that collection; a record pointing at a member that is not there is a state no real
system would be in, and a task built on it checks nothing real.
"""

from __future__ import annotations

import re
from typing import Any

_ID = re.compile(r"^([A-Za-z]+[-_]?)(\d+)$")


def is_id(value: str) -> bool:
    """Whether ``value`` has the shape of a record id (``LN-00012``)."""
    return _ID.match(value) is not None


def dangling_reference(state: dict[str, Any]) -> str | None:
    """The first reference to a record that does not exist, described for the model, or None."""
    owners = _collections_by_prefix(state)
    for attr, records in state.items():
        if not isinstance(records, dict):
            continue
        for key, record in records.items():
            if not isinstance(record, dict):
                continue
            for field, value in record.items():
                found = _ID.match(value) if isinstance(value, str) else None
                owner = owners.get(found.group(1)) if found else None
                if owner and owner != attr and value not in state[owner]:
                    return (
                        f"{attr}.{key}.{field} is {value!r}, but {owner} has no record {value!r}; "
                        "point references at records that exist"
                    )
    return None


def _collections_by_prefix(state: dict[str, Any]) -> dict[str, str]:
    """Id prefix → the collection whose keys all have it (ambiguous prefixes are left out)."""
    owners: dict[str, str] = {}
    ambiguous: set[str] = set()
    for attr, records in state.items():
        if not isinstance(records, dict) or not records:
            continue
        prefixes = {m.group(1) if (m := _ID.match(str(key))) else None for key in records}
        if len(prefixes) != 1 or None in prefixes:
            continue
        (prefix,) = prefixes
        if prefix in owners:
            ambiguous.add(prefix)
        owners[prefix] = attr
    return {prefix: attr for prefix, attr in owners.items() if prefix not in ambiguous}
