"""What a breaker found in the BFCL import and eval, each pinned (issue 27): an import's state
never carries the time it ran at; items are keyed by the tasks they import, so another category
or a larger ``--limit`` in the same folder imports its tasks; BFCL's checker judges only the
calls the environment ran; arguments nested past the parser's depth are a refused call, not a
crashed episode; miss_func's added functions are offered from the turn that adds them."""

from __future__ import annotations

import json
import time

import pytest

from bench import bfcl_eval
from envmill.schemas.benchmarks import BfclSettings
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.imported.backend import BfclBackend
from envmill.tasks.backends.imported.bfcl.executor import BfclExecutor
from envmill.tasks.backends.imported.bfcl.package import read_tasks
from envmill.tasks.backends.imported.official import turn_calls
from envmill.tasks.llm.reply import ToolCall


def test_an_imported_state_never_carries_the_time_it_was_made_at():
    task = next(
        t for t in read_tasks("multi_turn_base") if "GorillaFileSystem" in t.involved_classes
    )
    with BfclExecutor() as first:
        before = first.initial_state(task)
    time.sleep(1.1)
    with BfclExecutor() as second:
        after = second.initial_state(task)
    assert before == after
    assert "2024-09-01T10:30:00" in json.dumps(before)  # the adapted modules' fixed clock
    assert time.strftime("%Y-%m-%d") not in json.dumps(before)


def test_items_are_keyed_by_the_tasks_they_import():
    settings = EnvmillSettings(backend="bfcl")

    def keys(**bfcl) -> dict[str, str]:
        items = BfclBackend(BfclSettings(**bfcl)).plan_items(settings)
        return {item.subject: item.key for item in items}

    few, every, other = keys(limit=6), keys(), keys(category="miss_param")
    assert few.keys() <= every.keys()
    assert all(few[subject] != every[subject] for subject in few)  # more of its tasks
    assert not set(every.values()) & set(other.values())  # another category's tasks
    assert keys(limit=6) == few  # a rerun finds what it did


def test_bfcl_judges_only_the_calls_the_environment_ran():
    def call(call_id: str, name: str, **arguments) -> dict:
        function = {"name": name, "arguments": json.dumps(arguments)}
        return {"role": "assistant", "tool_calls": [{"id": call_id, "function": function}]}

    messages = [
        {"role": "user", "content": "one"},
        call("a", "ls"),
        call("b", "rm", file_name="x"),  # withheld: envmill answered "not available"
        {"role": "user", "content": "two"},
        call("c", "cd", folder="y"),
    ]
    assert turn_calls(messages, 2, not_run=["b"]) == [
        [{"tool": "ls", "arguments": {}}],
        [{"tool": "cd", "arguments": {"folder": "y"}}],
    ]


def test_arguments_nested_past_the_parsers_depth_are_a_refused_call():
    deep = "[" * 50_000 + "]" * 50_000
    with pytest.raises(ValueError, match="nested too deep"):
        ToolCall(id="1", name="ls", arguments='{"a": ' + deep + "}").arguments_json()
    assert turn_calls([{"role": "user"}, _raw_call("ls", '{"a": ' + deep + "}")], 1) == [[]]


def _raw_call(name: str, arguments: str) -> dict:
    function = {"name": name, "arguments": arguments}
    return {"role": "assistant", "tool_calls": [{"id": "1", "function": function}]}


@pytest.fixture(scope="module")
def missed(sandbox):
    return bfcl_eval.imported("miss_func", 8, sandbox)


def test_miss_func_offers_the_added_functions_from_their_turn_on(missed, sandbox):
    certified = [s for s in missed.scenarios if s.status == "certified"]
    assert certified, [s.rejected_gate for s in missed.scenarios]
    for scenario in missed.scenarios:
        added = [turn for turn in scenario.turns if turn.offers]
        assert added and set(added[0].offers) <= set(scenario.withheld_tools)
        assert "more functions" in added[0].content  # BFCL's own line for that turn
        first = scenario.turns.index(added[0]) + 1
        assert set(added[0].offers) <= scenario.withheld_at(first - 1)
        assert not set(added[0].offers) & scenario.withheld_at(first)
    rows = bfcl_eval.scored(missed, "miss_func", sandbox)
    right = [row for row in rows if row["policy"] == "right"]
    assert right and all(r["checker_valid"] and r["success"] for r in right)
    assert all(row["agree"] for row in rows)
