"""BFCL multi-turn imported and evaluated (issue 27): the first tasks of ``multi_turn_base``
through the bfcl backend in process; every certified scenario's reference replayed as a policy
is given full marks by BFCL's own checker and by envmill, and the same replay with a turn
dropped or an argument changed fails both. Real package data, real sandbox, BFCL's checker in
its child process."""

from __future__ import annotations

import json

import pytest

from bench import bfcl_eval
from envmill.tasks.backends.imported.bfcl.package import read_tasks
from envmill.tasks.backends.imported.official import rendered, turn_calls

TASKS = 12


@pytest.fixture(scope="module")
def imported(sandbox):
    return bfcl_eval.imported("base", TASKS, sandbox)


@pytest.fixture(scope="module")
def tasks():
    return {task.id: task for task in read_tasks("multi_turn_base")[:TASKS]}


def test_every_task_is_a_scenario_or_a_reason(imported, tasks):
    made = {s.source_id for s in imported.scenarios}
    skipped = [f for f in imported.failures if f.error_class == "Skipped"]
    assert len(made) + len(skipped) == TASKS
    assert not [f for f in imported.failures if f.error_class != "Skipped"]
    certified = [s for s in imported.scenarios if s.status == "certified"]
    assert certified, [s.rejected_gate for s in imported.scenarios]
    for scenario in imported.scenarios:
        task = tasks[scenario.source_id]
        assert (scenario.source, scenario.split, scenario.backend) == ("bfcl", "eval", "bfcl")
        assert scenario.user_messages == task.turns
        assert len(scenario.expected_results or []) == len(task.turns)
        assert len(scenario.reference_solution) == sum(map(len, task.ground_truth))
        assert [c.description for c in scenario.checks] == [
            f"{name} ends as BFCL's ground truth leaves it (BFCL's state check)"
            for name in task.involved_classes
        ]
    for scenario in imported.scenarios:
        if scenario.status == "rejected":
            reason = next(g.reason for g in scenario.gates if g.gate == scenario.rejected_gate)
            assert reason  # the summary says why


@pytest.fixture(scope="module")
def scored(imported, sandbox):
    """BFCL's verdict and envmill's, per certified scenario and replay."""
    return bfcl_eval.scored(imported, "base", sandbox)


def test_the_reference_replayed_gets_full_marks_from_both(scored):
    right = [row for row in scored if row["policy"] == "right"]
    assert right
    assert all(row["checker_valid"] for row in right), [r["checker_error"] for r in right]
    assert all(row["success"] and row["reward"] == 1.0 for row in right)


@pytest.mark.parametrize("label", ["dropped_turn", "changed_argument"])
def test_a_dropped_turn_or_a_changed_argument_fails_both(scored, label):
    wrong = [row for row in scored if row["policy"] == label]
    assert wrong
    assert not any(row["checker_valid"] for row in wrong), [r["task_id"] for r in wrong]
    assert not any(row["success"] for row in wrong)
    assert all(row["agree"] for row in scored)  # the mix: both verdicts agree on every episode


def test_calls_split_at_user_messages_and_only_the_tasks_tools_reach_bfcl():
    def call(name, **arguments):
        function = {"name": name, "arguments": json.dumps(arguments)}
        return {"role": "assistant", "tool_calls": [{"id": "1", "function": function}]}

    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "first"},
        call("ls", a=True),
        {"role": "tool", "content": "{}"},
        {"role": "assistant", "tool_calls": [{"function": {"name": "cd", "arguments": "{"}}]},
        {"role": "user", "content": "second"},
        call("open", file="/etc/passwd", mode="w"),
        call("cd", folder="x'); __import__('os').system('id'); ('"),
    ]
    calls = turn_calls(messages, 3)
    assert calls == [
        [{"tool": "ls", "arguments": {"a": True}}],
        [
            {"tool": "open", "arguments": {"file": "/etc/passwd", "mode": "w"}},
            {"tool": "cd", "arguments": {"folder": "x'); __import__('os').system('id'); ('"}},
        ],
        [],
    ]
    texts = rendered(calls, frozenset({"ls", "cd"}))
    assert texts[0] == ["ls(a=True)"]
    assert texts[1] == ["cd(folder=\"x'); __import__('os').system('id'); ('\")"]
    assert texts[2] == []
