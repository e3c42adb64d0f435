"""A quick test that a state conforms to a plain state schema, ahead of jsonschema.

jsonschema's ``iter_errors`` walks a state through a validator object per keyword and value
(about 1 ms a scenario, for states that nearly always conform). Most state schemas use a few
keywords only; for those, this walk says in a few dict lookups that a state surely conforms.
It never says a state does not: on anything it is unsure of, jsonschema decides and words the
error, so every verdict and message stays jsonschema's.
"""

from __future__ import annotations

from typing import Any

ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "format"})
APPLICATORS = frozenset({"type", "properties", "additionalProperties", "required", "anyOf"})
KEYWORDS = ANNOTATIONS | APPLICATORS | {"items", "enum"}
SCALARS = (str, int, float, bool, type(None))
KNOWN = (*SCALARS, dict, list)  # the types a state read from JSON holds
# the JSON type names, each by the Python types that surely are one (an integral float is an
# "integer" to jsonschema too: unsure here, so jsonschema decides)
TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def is_plain(schema: Any) -> bool:
    """Whether ``schema`` uses only keywords ``surely_conforms`` knows, in their usual shapes
    (a ``$ref``, a pattern, a bound: jsonschema alone judges it)."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or not KEYWORDS.issuperset(schema):
        return False
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    subschemas = [
        *_dict_values(schema.get("properties", {})),
        schema.get("additionalProperties", True),
        *_list(schema.get("anyOf", [True])),
        schema.get("items", True),
    ]
    return (
        isinstance(kinds, list)
        and all(kind in TYPES for kind in kinds)
        and all(isinstance(name, str) for name in _list(schema.get("required", [])))
        and isinstance(schema.get("enum", []), list)
        and all(is_plain(sub) for sub in subschemas)
    )


def surely_conforms(value: Any, schema: Any) -> bool:
    """True when ``value`` conforms to the plain ``schema``; False when it may not."""
    if schema is True:
        return True
    if schema is False or type(value) not in KNOWN:  # a subclass: unsure
        return False
    if "type" in schema and not _has_type(value, schema["type"]):
        return False
    if "enum" in schema and not _listed(value, schema["enum"]):
        return False
    if "anyOf" in schema and not any(surely_conforms(value, sub) for sub in schema["anyOf"]):
        return False
    if type(value) is dict:
        return _object_conforms(value, schema)
    if type(value) is list and "items" in schema:
        return all(surely_conforms(item, schema["items"]) for item in value)
    return True


def _object_conforms(value: dict[str, Any], schema: dict[str, Any]) -> bool:
    if any(name not in value for name in schema.get("required", [])):
        return False
    properties = schema.get("properties", {})
    others = schema.get("additionalProperties", True)
    return all(
        surely_conforms(item, properties[key] if key in properties else others)
        for key, item in value.items()
    )


def _has_type(value: Any, kinds: str | list[str]) -> bool:
    """Of one of ``kinds``: by exact Python type (a bool is no number; a subclass, unsure)."""
    names = [kinds] if isinstance(kinds, str) else kinds
    return any(type(value) in TYPES[name] for name in names)


def _listed(value: Any, options: list[Any]) -> bool:
    """One of ``options`` as a scalar of the same type (``1`` for ``1.0``: unsure)."""
    return type(value) in SCALARS and any(
        type(option) is type(value) and option == value for option in options
    )


def _dict_values(value: Any) -> list[Any]:
    return list(value.values()) if isinstance(value, dict) else [None]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [None]
