"""The quick schema walk says "conforms" only where jsonschema agrees."""

from __future__ import annotations

import jsonschema
import pytest

from envmill.tasks.certify.quick_schema import is_plain, surely_conforms

SCHEMA = {
    "type": "object",
    "properties": {
        "status": {"enum": ["open", "closed", 1, None]},
        "counts": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
        "records": {"type": "object", "additionalProperties": {"type": "number"}},
    },
    "required": ["status"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "state",
    [
        {"status": "open", "counts": [1, None], "records": {"a": 1.5, "b": 2}},
        {"status": 1},
        {"status": True},  # True is no 1 to jsonschema's enum
        {"status": 1.0},  # 1.0 is: unsure here, jsonschema decides
        {"status": "open", "counts": [1.0]},  # an integral float is an integer to jsonschema
        {"status": "open", "records": {"a": True}},
        {"status": "open", "extra": 1},
        {"counts": []},
        {"status": "shut"},
    ],
)
def test_a_sure_answer_is_jsonschemas(state) -> None:
    assert is_plain(SCHEMA)
    if surely_conforms(state, SCHEMA):
        assert jsonschema.Draft202012Validator(SCHEMA).is_valid(state)


def test_a_conforming_state_is_known_quickly() -> None:
    assert surely_conforms({"status": None, "counts": [], "records": {}}, SCHEMA)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a"},
        {"$ref": "#/$defs/x"},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"type": "array", "prefixItems": [{"type": "string"}]},
        {"type": "decimal"},
        {"properties": {"a": {"minimum": 3}}},
    ],
)
def test_other_keywords_are_left_to_jsonschema(schema) -> None:
    assert not is_plain(schema)
