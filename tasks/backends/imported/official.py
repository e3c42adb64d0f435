"""BFCL's own checker on envmill's trajectories, beside envmill's reward on the same ones.

A trajectory's tool calls are split at its user messages into BFCL's turns and handed to
BFCL's ``multi_turn_checker`` in a child process (it executes the calls with BFCL's code); the
verdict lands in ``evals`` with envmill's reward and success, and whether the two agree.

Only the calls the environment ran are BFCL's to judge: a call envmill refused (a withheld
tool, past the calls one message may make, after the environment failed, arguments that are
not JSON) changed nothing and returned nothing here, so BFCL must not execute it either.
BFCL's executor ``eval``s each call string, and a name it does not know is looked up among
Python's builtins (``open(file=..., mode="w")`` would run): only the task's own tools are
ever rendered for it, and with JSON arguments.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

from envmill.tasks.backends.imported.bfcl.calls import CallError, render_call
from envmill.tasks.backends.imported.bfcl.executor import BfclExecutor, BfclExecutorError
from envmill.tasks.backends.imported.bfcl.package import BfclTask, read_func_docs

Call = dict[str, Any]  # {"tool": name, "arguments": {...}}


def turn_calls(
    messages: list[dict[str, Any]], turns: int, not_run: Iterable[str] = ()
) -> list[list[Call]]:
    """The assistant's tool calls after each user message that the environment ran (``not_run``:
    the ids of those it refused or never reached, from the trajectory's details), padded to the
    task's ``turns`` (an episode that ended early made no calls in the turns it never reached).
    BFCL judges the trajectory that happened, not calls the agent was told were not run."""
    skipped = set(not_run)
    calls: list[list[Call]] = []
    for message in messages:
        if message.get("role") == "user":
            calls.append([])
        elif message.get("role") == "assistant" and calls:
            made = [c for c in message.get("tool_calls") or [] if c.get("id") not in skipped]
            calls[-1] += [c for c in map(_call, made) if c]
    return (calls + [[] for _ in range(turns)])[:turns]


def _call(tool_call: dict[str, Any]) -> Call | None:
    function = tool_call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except (TypeError, ValueError, RecursionError):
        return None
    name = function.get("name")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return None
    return {"tool": name, "arguments": arguments}


def rendered(calls: list[list[Call]], tools: frozenset[str]) -> list[list[str]]:
    """Each turn's calls of the task's own tools as BFCL call strings."""
    return [[text for call in turn if (text := _render(call, tools))] for turn in calls]


def _render(call: Call, tools: frozenset[str]) -> str | None:
    if call["tool"] not in tools:
        return None
    try:
        return render_call(call)
    except CallError:
        return None


@functools.cache
def task_tools(classes: tuple[str, ...]) -> frozenset[str]:
    """The functions BFCL documents for ``classes``: the only names a rendered call may use."""
    return frozenset(doc["name"] for name in classes for doc in read_func_docs(name))


def official_rows(
    episodes: Iterable[dict[str, Any]], tasks: dict[str, BfclTask], benchmark: str
) -> list[dict[str, Any]]:
    """One ``evals`` row per episode whose task is known: BFCL's verdict and envmill's."""
    rows = []
    with BfclExecutor() as executor:
        for episode in episodes:
            task = tasks.get(episode["source_id"])
            if task is not None:
                rows.append(_row(episode, task, executor, benchmark))
    return rows


def _row(
    episode: dict[str, Any], task: BfclTask, executor: BfclExecutor, benchmark: str
) -> dict[str, Any]:
    details = json.loads(episode.get("details_json") or "{}") or {}
    not_run = details.get("not_run") or []
    calls = turn_calls(json.loads(episode["messages_json"]), len(task.turns), not_run)
    try:
        verdict = executor.check(task, rendered(calls, task_tools(tuple(task.involved_classes))))
    except BfclExecutorError as exc:
        verdict = {"valid": False, "error_type": "executor", "error_message": str(exc)}
    valid = bool(verdict["valid"])
    error = "" if valid else f"{verdict.get('error_type', '')}: {verdict.get('error_message', '')}"
    return {
        "trajectory_id": episode["trajectory_id"],
        "benchmark": benchmark,
        "run_id": episode["run_id"],
        "scenario_id": episode["scenario_id"],
        "category": task.category,
        "task_id": task.id,
        "policy": episode["policy"],
        "reward": episode["reward"],
        "success": bool(episode["success"]),
        "checker_valid": valid,
        "checker_error": error,
        "agree": valid == bool(episode["success"]),
        "details_json": {"calls_per_turn": [len(turn) for turn in calls]},
    }
