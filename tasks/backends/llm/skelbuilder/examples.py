"""Example inputs of SkelBuilder's stages, so ``envmill llm check`` can try a model on each one
before a run spends anything on it (``tasks/backends/llm/stages.py`` lists them). One small
environment, a tool-lending library, runs through all of them."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from envmill.schemas.skeleton import (
    CodeReply,
    InitialStateReply,
    OperationList,
    ProbeCalls,
    ProbeJudgements,
    ProbeStateReply,
    RulesReview,
    StatePlan,
)

TOPIC = "community tool library: members borrow power tools for a week"
PLAN = {
    "environment": "Community tool library",
    "category": "tool library",
    "class_name": "ToolLibrary",
    "introduction": "A neighbourhood library lends power tools to its members. Volunteers "
    "register members, lend and take back tools. A member holds at most two tools at once.",
    "entities": [
        {
            "name": "tool",
            "description": "A tool that can be lent.",
            "attributes": [
                {"name": "tool_id", "type": "str", "description": "id, e.g. TL-0001"},
                {"name": "name", "type": "str", "description": "what the tool is"},
                {"name": "status", "type": "enum: available | lent", "description": "status"},
            ],
        }
    ],
    "business_rules": ["Only an available tool can be lent."],
}
STATE_CODE = '''from typing import TypedDict


class Tool(TypedDict):
    tool_id: str
    name: str
    status: str


class ToolLibrary:
    """A neighbourhood library that lends power tools.

    Business rules:
    - Only an available tool can be lent.
    """

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.next_tool_number: int = 1
        self.current_time: str = "2025-01-01T09:00:00"
'''
OPERATION = {
    "name": "lend_tool",
    "kind": "state_change",
    "summary": "Lend an available tool.",
    "parameters": [{"name": "tool_id", "type": "str", "description": "the tool's id"}],
    "constraints": ["Only an available tool can be lent."],
}
LEND_TOOL = '''    def lend_tool(self, tool_id: str) -> dict:
        """Lend an available tool."""
        tool = self.tools.get(tool_id)
        if tool is None:
            return {"success": False, "error": f"Tool {tool_id} not found"}
        tool["status"] = "lent"
        return {"success": True, "message": f"Lent {tool_id}.", "data": dict(tool)}'''
DEFAULT_STATE = {"tools": {}, "next_tool_number": 1, "current_time": "2025-01-01T09:00:00"}
STATE = {
    "tools": {"TL-0001": {"tool_id": "TL-0001", "name": "Cordless drill", "status": "available"}},
    "next_tool_number": 2,
    "current_time": "2025-03-03T10:00:00",
}
LENT_STATE = {**STATE, "tools": {"TL-0001": {**STATE["tools"]["TL-0001"], "status": "lent"}}}
NEVER_SUCCEEDED = [
    {
        "name": "lend_tool",
        "kind": "state_change",
        "description": "Lend an available tool.",
        "parameters": {"type": "object", "properties": {"tool_id": {"type": "string"}}},
        "calls": ['positive {"tool_id": "TL-0001"} -> Tool TL-0001 is not available'],
    }
]
STATE_SCHEMA = {
    "type": "object",
    "properties": {
        "tools": {"type": "object", "additionalProperties": {"type": "object"}},
        "next_tool_number": {"type": "integer"},
        "current_time": {"type": "string"},
    },
}
TOOLS = [
    {
        "name": "lend_tool",
        "kind": "state_change",
        "description": "Lend an available tool.",
        "parameters": {"type": "object", "properties": {"tool_id": {"type": "string"}}},
        "calls_needed": ["positive", "negative"],
    }
]
PROBES = [
    {
        "probe": 1,
        "tool": "lend_tool",
        "tool_kind": "state_change",
        "kind": "positive",
        "expectation": "Lends the drill.",
        "arguments": {"tool_id": "TL-0001"},
        "result": {"success": True, "message": "Lent TL-0001.", "data": {"status": "lent"}},
        "state_diff": [
            {
                "path": ["tools", "TL-0001", "status"],
                "op": "change",
                "old": "available",
                "new": "lent",
            }
        ],
    }
]


def _numbered(code: str, first: int) -> str:
    return "\n".join(f"{first + i:>5} | {line}" for i, line in enumerate(code.splitlines()))


STAGE_EXAMPLES: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    "skeleton_plan": (StatePlan, {"topic": TOPIC, "introduction": "", "request": ""}),
    "skeleton_state": (CodeReply, {"topic": TOPIC, "plan": PLAN}),
    "skeleton_operations": (
        OperationList,
        {"topic": TOPIC, "plan": PLAN, "state_code": STATE_CODE, "min_tools": 8},
    ),
    "skeleton_method": (
        CodeReply,
        {
            "topic": TOPIC,
            "introduction": PLAN["introduction"],
            "business_rules": PLAN["business_rules"],
            "state_code": STATE_CODE,
            "operations": [json.dumps(OPERATION, indent=2)],
            "operation_names": ["lend_tool"],
            "others": ["get_tool: Get a tool by its id."],
        },
    ),
    "skeleton_repair": (
        CodeReply,
        {
            "topic": TOPIC,
            "part": "lend_tool",
            "is_state": False,
            "check_name": "probe",
            "errors": ["line 21: lend_tool lends a tool that is already lent [rule]"],
            "listing": _numbered(LEND_TOOL, 18),
            "state_code": STATE_CODE,
            "operation": json.dumps(OPERATION, indent=2),
            "operations": ["lend_tool: Lend an available tool."],
        },
    ),
    "skeleton_rules": (
        RulesReview,
        {
            "topic": TOPIC,
            "introduction": PLAN["introduction"],
            "rules": PLAN["business_rules"],
            "tools": ["lend_tool: Lend an available tool. Constraints: the tool is available."],
        },
    ),
    "skeleton_initial_state": (
        InitialStateReply,
        {
            "topic": TOPIC,
            "state_code": STATE_CODE,
            "state_schema": json.dumps({"type": "object"}),
            "default_state": json.dumps(DEFAULT_STATE, indent=2),
            "max_records": 12,
        },
    ),
    "skeleton_probe": (
        ProbeCalls,
        {
            "topic": TOPIC,
            "class_name": "ToolLibrary",
            "tools": json.dumps(TOOLS, indent=2),
            "others": ["get_tool(tool_id): Get a tool by its id."],
            "state": json.dumps(STATE, indent=2),
            "cut": [],
            "clock": "current_time",
            "earlier": [],
            "round": 0,
        },
    ),
    "skeleton_probe_state": (
        ProbeStateReply,
        {
            "topic": TOPIC,
            "class_name": "ToolLibrary",
            "tools": json.dumps(NEVER_SUCCEEDED, indent=2),
            "others": ["get_tool(tool_id): Get a tool by its id."],
            "state": json.dumps(LENT_STATE, indent=2),
            "cut": [],
            "clock": "current_time",
            "state_schema": json.dumps(STATE_SCHEMA, indent=2),
            "max_records": 12,
        },
    ),
    "skeleton_judge": (
        ProbeJudgements,
        {"topic": TOPIC, "sources": [LEND_TOOL], "probes": json.dumps(PROBES, indent=2)},
    ),
}
