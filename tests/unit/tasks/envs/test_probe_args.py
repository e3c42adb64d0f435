"""Probe arguments drawn from tool schemas whose optional parameters declare null among their
types (``"type": ["string", "null"]``, null in an enum): a probe that passes an optional argument
passes a value of its type, never the null the schema also allows."""

from __future__ import annotations

import jsonschema

from envmill.tasks.envs.probe_args import StateFacts, probe_arguments
from envmill.tasks.envs.reading import derive_tool_schemas
from envmill.tasks.offline_llm import example_value

SOURCE = '''
from typing import Any, Literal


class Desk:
    """Tickets."""

    def __init__(self) -> None:
        self.tickets: dict[str, dict[str, Any]] = {}

    def list_tickets(
        self,
        status: Literal["open", "pending", "closed"] | None = None,
        limit: int | None = None,
        owner: str = None,
    ) -> dict[str, Any]:
        """List tickets."""
        return {"success": True, "data": []}
'''


def parameters() -> dict:
    (tool,) = derive_tool_schemas(SOURCE)
    return tool.function.parameters


def test_optional_arguments_a_probe_passes_are_values_of_their_type():
    schema = parameters()
    assert schema["properties"]["status"]["enum"] == ["open", "pending", "closed", None]
    facts = StateFacts({"tickets": {}})
    passed = [probe_arguments(schema, facts, attempt) for attempt in range(1, 12, 2)]
    assert {args["status"] for args in passed} == {"open", "pending", "closed"}
    assert all(type(args["limit"]) is int and type(args["owner"]) is str for args in passed)
    for args in passed:
        jsonschema.validate(args, schema)


def test_the_offline_model_fills_an_optional_parameter_with_a_value_of_its_type():
    arguments = example_value(parameters())
    assert (arguments["status"], arguments["limit"], arguments["owner"]) == ("open", 1, "example")
