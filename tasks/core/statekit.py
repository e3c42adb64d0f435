"""State operations of DESIGN §3.2: hash and diff of JSON environment states."""

from __future__ import annotations

from typing import Any

from envmill.schemas.ids import canonical_json, sha256_hex

Path = list[str | int]


def state_hash(state: dict[str, Any]) -> str:
    """sha256 (64 hex digits) of the canonical JSON of a state."""
    return sha256_hex(canonical_json(state))


def diff_states(old: Any, new: Any) -> list[dict[str, Any]]:
    """The changes from ``old`` to ``new``, sorted by path.

    Dicts are compared key by key, lists element by element when their lengths are equal and
    as a whole otherwise, so a diff names the smallest changed fact a check can talk about.
    """
    changes: list[dict[str, Any]] = []
    _diff_into(changes, [], old, new)
    changes.sort(key=lambda c: _path_key(c["path"]))
    return changes


def _diff_into(out: list[dict[str, Any]], path: Path, old: Any, new: Any) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key, a in old.items():
            if key not in new:
                out.append({"path": [*path, key], "op": "remove", "old": a, "new": None})
            elif not _same_scalar(a, b := new[key]):
                _diff_into(out, [*path, key], a, b)
        for key in new.keys() - old.keys():
            out.append({"path": [*path, key], "op": "add", "old": None, "new": new[key]})
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            if not _same_scalar(a, b):
                _diff_into(out, [*path, index], a, b)
    elif not _same(old, new):
        out.append({"path": path, "op": "change", "old": old, "new": new})


# most fields of a state are unchanged scalars: settled here without a call or a path copy
# (the order changes are found in is no matter: ``diff_states`` sorts them by path)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _same_scalar(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are one scalar of one type: what ``_same`` would say without a diff."""
    return type(a) is type(b) and type(a) in _SCALARS and a == b


def _same(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``1 == True`` and ``1 == 1.0`` are still changes of type."""
    return type(a) is type(b) and a == b or canonical_json(a) == canonical_json(b)


def _path_key(path: Path) -> tuple[tuple[int, str | int], ...]:
    # ints sort before strings at the same depth, each by its own order
    return tuple((0, p) if isinstance(p, int) else (1, p) for p in path)
