"""BFCL's checker beside envmill's reward on every certified scenario of a category: the
reference replayed as a policy, and the same replay with its last working turn dropped and with
an argument changed. Prints, per replay, how many episodes each verdict passes and how often the
two agree (issue 27: "both give full marks", "both fail it", "the agreement rate on a mix").

    python -m bench.bfcl_eval [--category base] [--limit N]

In process and offline: the bfcl backend imports the tasks into memory (nothing is written), the
episodes run in envmill's sandbox with a scripted policy, BFCL's checker in its child process.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections import Counter
from typing import Any

from envmill.schemas.benchmarks import BFCL_BENCHMARK, BFCL_CATEGORIES, BfclSettings
from envmill.schemas.rollout import EpisodeSpec, RolloutSettings
from envmill.schemas.run import BatchOutput
from envmill.schemas.scenario import ScenarioRecord, ScenarioSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.imported.bfcl.package import read_tasks
from envmill.tasks.backends.imported.official import official_rows
from envmill.tasks.offline_llm import oracle_script
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from envmill.tasks.rollout.episode import run_episode
from envmill.tasks.sandbox import Sandbox

SETTINGS = RolloutSettings(max_steps=60, max_calls_per_turn=4, max_bad_turns=2)
Script = list[dict[str, Any]]


class Replay:
    """A policy that says a script's replies in order (a reference's, or a changed copy)."""

    name = "replay"

    def __init__(self, script: Script) -> None:
        self.script = list(script)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
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


def dropped_turn(script: Script) -> Script | None:
    """The script without the calls of its last user message that makes any (each message's
    entries end with a reply without calls)."""
    turns, current = [], []
    for index, reply in enumerate(script):
        current.append(index)
        if not reply.get("tool_calls"):
            turns.append(current)
            current = []
    for entries in reversed(turns):
        calls = {i for i in entries if script[i].get("tool_calls")}
        if calls:
            return [reply for i, reply in enumerate(script) if i not in calls]
    return None


def changed_argument(script: Script) -> Script | None:
    """The script with the last text argument of its last call that passes one changed."""
    changed = copy.deepcopy(script)
    for reply in reversed(changed):
        for call in reversed(reply.get("tool_calls") or []):
            arguments = json.loads(call["arguments"])
            texts = [key for key, value in arguments.items() if isinstance(value, str)]
            if texts:
                arguments[texts[-1]] += "_x"
                call["arguments"] = json.dumps(arguments)
                return changed
    return None


def replays(script: Script) -> dict[str, Script]:
    """The right replay and each wrong one the script allows."""
    wrong = {"dropped_turn": dropped_turn(script), "changed_argument": changed_argument(script)}
    return {"right": script} | {label: s for label, s in wrong.items() if s is not None}


def imported(category: str, limit: int, sandbox: Sandbox) -> BatchOutput:
    """The category's tasks through the bfcl backend, in memory."""
    settings = EnvmillSettings(
        backend="bfcl", bfcl=BfclSettings(category=category, limit=limit), batch_size=1000
    )
    (batch,) = plan_batches(settings)
    return synthesize_batch(batch, settings, sandbox)


def episode(
    output: BatchOutput, scenario: ScenarioRecord, sandbox: Sandbox, script: Script, label: str
):
    """One replay of ``scenario`` as the ``evals`` scorer reads a trajectory row."""
    env = next(e for e in output.environments if e.env_id == scenario.env_id)
    spec = EpisodeSpec(
        key=scenario.scenario_id,
        scenario=ScenarioSpec(**scenario.model_dump(include=set(ScenarioSpec.model_fields))),
        scenario_id=scenario.scenario_id,
        class_name=env.class_name,
        source=env.source,
        tools=[t.model_dump() for t in env.tools],
    )
    trajectory = run_episode(spec, sandbox, SETTINGS, Replay(script), policy_name=label)
    return {
        "trajectory_id": trajectory.trajectory_id,
        "scenario_id": scenario.scenario_id,
        "run_id": "bench",
        "policy": label,
        "reward": trajectory.reward,
        "success": trajectory.success,
        "messages_json": json.dumps(trajectory.messages),
        "details_json": json.dumps(trajectory.details),
        "source_id": scenario.source_id,
    }


def scored(output: BatchOutput, category: str, sandbox: Sandbox) -> list[dict[str, Any]]:
    """``evals`` rows for every replay of every certified scenario of ``output``."""
    references = {t.scenario_id: t for t in output.trajectories}
    episodes = [
        episode(output, scenario, sandbox, script, label)
        for scenario in output.scenarios
        if scenario.status == "certified"
        for label, script in replays(
            oracle_script(references[scenario.scenario_id].messages)
        ).items()
    ]
    tasks = {task.id: task for task in read_tasks(f"multi_turn_{category}")}
    return official_rows(episodes, tasks, BFCL_BENCHMARK)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--category", choices=BFCL_CATEGORIES, default="base")
    parser.add_argument("--limit", type=int, default=0, help="the first N tasks [all]")
    options = parser.parse_args()
    started = time.perf_counter()
    with Sandbox() as sandbox:
        output = imported(options.category, options.limit, sandbox)
        certified = sum(s.status == "certified" for s in output.scenarios)
        gates = Counter(s.rejected_gate for s in output.scenarios if s.status == "rejected")
        print(
            f"{options.category}: {len(output.scenarios)} imported, {certified} certified, "
            f"rejected {dict(gates)}, not imported {len(output.failures)}"
        )
        rows = scored(output, options.category, sandbox)
    for label in ("right", "dropped_turn", "changed_argument"):
        mine = [row for row in rows if row["policy"] == label]
        bfcl, ours = sum(r["checker_valid"] for r in mine), sum(r["success"] for r in mine)
        print(
            f"{label:17} {len(mine):4} episodes: BFCL passes {bfcl}, envmill passes {ours}, "
            f"agree {sum(r['agree'] for r in mine)}"
        )
    agree = sum(row["agree"] for row in rows)
    print(f"the mix: {agree}/{len(rows)} agree ({time.perf_counter() - started:.0f} s)")
    for row in rows:
        if not row["agree"]:
            verdict = row["checker_error"] or "valid"
            print(f"  disagree: {row['task_id']} {row['policy']}: BFCL {verdict}")


if __name__ == "__main__":
    main()
