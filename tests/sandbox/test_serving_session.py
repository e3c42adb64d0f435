"""``ToolSession`` (``envmill mcp``'s domain logic) on a small counter environment: tools offered
per user message, calls in the sandbox, a host that dies, reset, and the one reward function
with the results verdict of a multi-turn scenario."""

from __future__ import annotations

import pytest

from envmill.schemas.rollout import EpisodeSpec
from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.serving import ToolSession

COUNTER = '''
class Counter:
    """A counter."""

    def __init__(self):
        self.count = 0

    def add(self, amount: int) -> dict:
        """Add to the counter.

        Args:
            amount: how much to add.
        """
        self.count += amount
        return {"success": True, "message": "added", "data": self.count}

    def read(self) -> dict:
        """Read the counter."""
        return {"success": True, "data": self.count}

    def spin(self) -> dict:
        """Never returns."""
        while True:
            pass
'''


def _schema(name: str, **properties: dict) -> dict:
    parameters = {"type": "object", "properties": properties, "required": list(properties)}
    return {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": parameters},
    }


TOOLS = [_schema("add", amount={"type": "integer"}), _schema("read"), _schema("spin")]
CHECK = "def check(initial_state, final_state):\n    return final_state['count'] == 5\n"


def _spec(**changes) -> EpisodeSpec:
    fields = {
        "env_id": "c0ffee0000000000",
        "task": "Add 5 to the counter.",
        "initial_state": {"count": 0},
        "reference_solution": [{"tool": "add", "arguments": {"amount": 5}}],
        "checks": [{"description": "the counter reads 5", "code": CHECK}],
    }
    scenario = ScenarioSpec(**(fields | changes))
    return EpisodeSpec(
        key="k",
        scenario=scenario,
        scenario_id=scenario.scenario_id,
        class_name="Counter",
        source=COUNTER,
        tools=TOOLS,
        introduction="A counter.",
    )


@pytest.fixture
def single(sandbox):
    spec = _spec()
    with ToolSession({spec.scenario_id: spec}, sandbox, spec.scenario_id) as session:
        yield session


def test_the_reference_scores_full_reward_and_a_wrong_sequence_less(single):
    assert single.reward().reward == 0.0
    assert single.call("add", {"amount": 2})["success"] is True
    wrong = single.reward()
    assert (wrong.reward, wrong.success, wrong.checks[0].passed) == (0.0, False, False)
    assert single.reset()["success"] is True
    assert single.call("add", {"amount": 5}) == {"success": True, "message": "added", "data": 5}
    right = single.reward()
    assert (right.reward, right.success) == (1.0, True)
    assert right.checks[0].description == "the counter reads 5"


def test_bad_calls_are_error_results_in_the_tools_shape(single):
    assert "not a tool of this environment" in single.call("nope", {})["error"]
    assert "JSON object" in single.call("add", [5])["error"]
    assert single.call("add", {"amount": "x"})["success"] is False  # the tool raised


def test_a_host_that_dies_answers_with_an_error_and_the_next_call_gets_a_fresh_one(single):
    assert single.call("add", {"amount": 3})["data"] == 3
    died = single.call("spin", {})
    assert died["success"] is False and "killed" in died["error"], died  # CPU limit
    assert single.call("read", {}) == {"success": True, "data": 3}  # the last good state


def test_withheld_tools_are_offered_from_the_message_that_offers_them(sandbox):
    spec = _spec(
        turns=[{"content": "Now read it.", "first_step": 1, "offers": ["read"]}],
        withheld_tools=["read"],
        reference_solution=[
            {"tool": "add", "arguments": {"amount": 5}},
            {"tool": "read", "arguments": {}},
        ],
        expected_results=[[], [{"success": True, "data": 5}]],
    )
    with ToolSession({spec.scenario_id: spec}, sandbox, spec.scenario_id) as session:
        assert [t["function"]["name"] for t in session.tools()] == ["add", "spin"]
        assert "not available here" in session.call("read", {})["error"]
        session.call("add", {"amount": 5})
        assert session.reward().reward == 0.5  # the state holds, the read result is missing
        assert session.next_message()["data"] == {
            "message": "Now read it.",
            "tools": ["add", "read", "spin"],
        }
        assert session.call("read", {})["data"] == 5
        report = session.reward()
        assert (report.reward, [c.passed for c in report.checks]) == (1.0, [True, True])
        assert session.next_message()["success"] is False
        assert session.reset()["data"]["later_messages"] == 1
        assert "read" not in {t["function"]["name"] for t in session.tools()}
