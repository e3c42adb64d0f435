"""BFCL's classes adapted and run in envmill's sandbox agree with BFCL's own executor (run in
its child process): every class set is admitted by the real environment check, and the ground
truth of one task per class set replays to the same public state and results."""

from __future__ import annotations

import dataclasses

import pytest

from envmill.tasks.backends.imported.bfcl.adapt import build_environment
from envmill.tasks.backends.imported.bfcl.executor import BfclExecutor, BfclExecutorError
from envmill.tasks.backends.imported.bfcl.package import read_tasks
from envmill.tasks.backends.imported.bfcl.replay import replay_adapted
from envmill.tasks.envs import admit_environment

TASKS = read_tasks("multi_turn_base")
# one task per class set (the first whose ground truth uses no refused tool)
SAMPLE = list(
    {
        tuple(t.involved_classes): t
        for t in reversed(TASKS)
        if not any("logarithm(" in c for turn in t.ground_truth for c in turn)
    }.values()
)


@pytest.fixture(scope="module")
def executor():
    with BfclExecutor() as running:
        yield running


@pytest.mark.parametrize("task", SAMPLE, ids=lambda t: t.id)
def test_adapted_module_is_admitted_and_replays_as_bfcl(task, sandbox, executor):
    env = build_environment(task.involved_classes)
    admitted = admit_environment(env.source, sandbox)  # the same check as `envmill env check`
    assert admitted.class_name == env.class_name
    theirs = executor.replay(task, task.ground_truth)
    ours = replay_adapted(sandbox, env, executor.initial_state(task), task.ground_truth)
    assert ours["states"] == theirs["states"]
    assert ours["results"] == theirs["results"]


def test_default_state_is_bfcl_load_scenario_of_an_empty_config(sandbox, executor):
    task = dataclasses.replace(TASKS[0], initial_config={})
    env = build_environment(task.involved_classes)
    with sandbox.episode(env.source, env.class_name) as episode:
        default = episode.state()
    assert default == executor.initial_state(task)


def test_check_accepts_the_ground_truth_and_refuses_an_empty_turn(executor):
    task = SAMPLE[0]
    assert executor.check(task, task.ground_truth)["valid"] is True
    empty = executor.check(task, [[] for _ in task.ground_truth])
    assert empty["valid"] is False and empty["error_type"].startswith("multi_turn:")


def test_ground_truth_that_errors_in_bfcl_is_one_line(executor):
    broken = dataclasses.replace(
        SAMPLE[0], involved_classes=["GorillaFileSystem"], ground_truth=[["cd(folder=nothing)"]]
    )
    with pytest.raises(BfclExecutorError) as failed:
        executor.replay_ground_truth(broken)
    assert "\n" not in str(failed.value) and "fails in BFCL" in str(failed.value)
