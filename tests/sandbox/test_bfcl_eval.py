"""BFCL multi-turn imported and evaluated (issue 27): the first tasks of ``multi_turn_base``
through the bfcl backend in process; every certified scenario's reference replayed as a policy
is given full marks by BFCL's own checker and by envmill, and the same replay with a turn
dropped or an argument changed fails both. Real package data, real sandbox, BFCL's checker in
its child process."""

from __future__ import annotations

import copy
import json

import pytest

from envmill.schemas.benchmarks import BFCL_BENCHMARK, BfclSettings
from envmill.schemas.rollout import EpisodeSpec, RolloutSettings
from envmill.schemas.scenario import ScenarioSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.imported.bfcl.package import read_tasks
from envmill.tasks.backends.imported.official import official_rows, rendered, turn_calls
from envmill.tasks.offline_llm import oracle_script
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from envmill.tasks.rollout.episode import run_episode
from tests.conftest import TEST_LIMITS

TASKS = 12
SETTINGS = RolloutSettings(max_steps=40, max_calls_per_turn=4, max_bad_turns=2)


@pytest.fixture(scope="module")
def imported(sandbox):
    settings = EnvmillSettings(
        backend="bfcl", bfcl=BfclSettings(limit=TASKS), sandbox=TEST_LIMITS, batch_size=100
    )
    (batch,) = plan_batches(settings)
    return synthesize_batch(batch, settings, sandbox)


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


def _spec(imported, scenario) -> EpisodeSpec:
    env = next(e for e in imported.environments if e.env_id == scenario.env_id)
    spec = ScenarioSpec(**scenario.model_dump(include=set(ScenarioSpec.model_fields)))
    return EpisodeSpec(
        key=scenario.scenario_id,
        scenario=spec,
        scenario_id=scenario.scenario_id,
        class_name=env.class_name,
        source=env.source,
        tools=[t.model_dump() for t in env.tools],
    )


class Replay:
    """A policy that says a script's replies in order (the reference's, or a changed copy)."""

    name = "replay"

    def __init__(self, script):
        self.script = list(script)

    def act(self, messages, tools):
        if not self.script:
            return "Done."
        reply = self.script.pop(0)
        if not reply.get("tool_calls"):
            return reply.get("content") or ""
        calls = [
            {"id": "", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in reply["tool_calls"]
        ]
        return {"role": "assistant", "content": reply.get("content"), "tool_calls": calls}


def _turns_of(script: list[dict]) -> list[list[int]]:
    """The script's entries per user message: each ends with a reply without calls."""
    turns, current = [], []
    for index, reply in enumerate(script):
        current.append(index)
        if not reply.get("tool_calls"):
            turns.append(current)
            current = []
    return turns


def _dropped_turn(script: list[dict]) -> list[dict] | None:
    """The script without the calls of its last user message that makes any."""
    for entries in reversed(_turns_of(script)):
        calls = [i for i in entries if script[i].get("tool_calls")]
        if calls:
            return [r for i, r in enumerate(script) if i not in calls]
    return None


def _changed_argument(script: list[dict]) -> list[dict] | None:
    """The script with the last text argument of its last call that passes one changed."""
    changed = copy.deepcopy(script)
    for reply in reversed(changed):
        for call in reversed(reply.get("tool_calls") or []):
            arguments = json.loads(call["arguments"])
            texts = [k for k, v in arguments.items() if isinstance(v, str)]
            if texts:
                arguments[texts[-1]] += "_x"
                call["arguments"] = json.dumps(arguments)
                return changed
    return None


def _episode(imported, scenario, sandbox, script, label: str) -> dict:
    trajectory = run_episode(
        _spec(imported, scenario), sandbox, SETTINGS, Replay(script), policy_name=label
    )
    assert trajectory.termination == "finished", trajectory.details
    return {
        "trajectory_id": trajectory.trajectory_id,
        "scenario_id": scenario.scenario_id,
        "run_id": "run-test",
        "policy": label,
        "reward": trajectory.reward,
        "success": trajectory.success,
        "messages_json": json.dumps(trajectory.messages),
        "source_id": scenario.source_id,
    }


@pytest.fixture(scope="module")
def scored(imported, tasks, sandbox):
    """BFCL's verdict and envmill's, per certified scenario and replay."""
    references = {t.scenario_id: t for t in imported.trajectories}
    episodes = []
    for scenario in imported.scenarios:
        if scenario.status != "certified":
            continue
        script = oracle_script(references[scenario.scenario_id].messages)
        variants = {"right": script, "dropped": _dropped_turn(script)}
        variants["changed"] = _changed_argument(script)
        for label, variant in variants.items():
            if variant is not None:
                episodes.append(_episode(imported, scenario, sandbox, variant, label))
    return official_rows(episodes, tasks, BFCL_BENCHMARK)


def test_the_reference_replayed_gets_full_marks_from_both(scored):
    right = [row for row in scored if row["policy"] == "right"]
    assert right
    assert all(row["checker_valid"] for row in right), [r["checker_error"] for r in right]
    assert all(row["success"] and row["reward"] == 1.0 for row in right)


@pytest.mark.parametrize("label", ["dropped", "changed"])
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
