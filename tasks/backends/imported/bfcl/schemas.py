"""BFCL function docs as Chat Completions tool schemas (JSON Schema parameters).

BFCL writes its own type names: ``dict`` is JSON Schema's ``object``, ``float`` is ``number``,
``tuple`` is ``array``, ``any`` has no type. Nested ``properties`` and ``items`` are converted
too; ``required``, descriptions, enums and defaults are kept.
"""

from __future__ import annotations

from typing import Any

TYPE_NAMES = {"dict": "object", "float": "number", "tuple": "array"}


def convert_func_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """``{"type": "function", "function": {"name", "description", "parameters"}}``."""
    parameters = convert_schema(doc.get("parameters") or {"type": "dict", "properties": {}})
    parameters.setdefault("properties", {})
    parameters.setdefault("required", [])
    return {
        "type": "function",
        "function": {
            "name": doc["name"],
            "description": doc.get("description", ""),
            "parameters": parameters,
        },
    }


def convert_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """One BFCL type description as JSON Schema."""
    converted: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            if value != "any":
                converted["type"] = TYPE_NAMES.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            converted["properties"] = {k: convert_schema(v) for k, v in value.items()}
        elif key == "items" and isinstance(value, dict):
            converted["items"] = convert_schema(value)
        else:
            converted[key] = value
    return converted
