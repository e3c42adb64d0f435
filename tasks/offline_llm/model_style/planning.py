"""How a design writes its plan's entities: attribute rows as (name, type, description)."""

from __future__ import annotations

from typing import Any


def entity(name: str, description: str, *attributes: tuple[str, str, str]) -> dict[str, Any]:
    rows = [{"name": n, "type": kind, "description": text} for n, kind, text in attributes]
    return {"name": name, "description": description, "attributes": rows}
