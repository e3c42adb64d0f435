"""Every multi_turn_base task: adapt its class set, admit it with envmill's environment check,
replay the ground truth in the sandbox and compare with BFCL's own executor.

    python bench/bfcl_import.py [--limit N]
"""

from __future__ import annotations

import argparse
import time

from envmill.tasks.backends.imported.bfcl.adapt import build_environment
from envmill.tasks.backends.imported.bfcl.executor import BfclExecutor
from envmill.tasks.backends.imported.bfcl.package import read_tasks
from envmill.tasks.backends.imported.bfcl.replay import replay_adapted
from envmill.tasks.envs import EnvironmentRejected, admit_environment
from envmill.tasks.sandbox import Sandbox


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=None)
    limit = parser.parse_args().limit
    tasks = read_tasks("multi_turn_base")[:limit]
    started = time.perf_counter()
    envs, counts, misses = {}, {"states": 0, "results": 0, "refused": 0}, []
    with BfclExecutor() as executor, Sandbox() as sandbox:
        for classes in sorted({tuple(t.involved_classes) for t in tasks}):
            env = envs[classes] = build_environment(list(classes))
            try:
                admit_environment(env.source, sandbox)
            except EnvironmentRejected as exc:
                misses.append(f"{'+'.join(classes)}: not admitted: {exc}")
        for task in tasks:
            env = envs[tuple(task.involved_classes)]
            if any(c.split("(")[0] in env.refused for turn in task.ground_truth for c in turn):
                counts["refused"] += 1
                continue
            theirs = executor.replay(task, task.ground_truth)
            ours = replay_adapted(sandbox, env, executor.initial_state(task), task.ground_truth)
            counts["states"] += ours["states"] == theirs["states"]
            counts["results"] += ours["results"] == theirs["results"]
            if ours != theirs:
                misses.append(f"{task.id}: differs from BFCL")
    print(
        f"{len(envs)} class sets, {len(tasks)} tasks: identical public states {counts['states']}, "
        f"identical results {counts['results']}, using a refused tool {counts['refused']} "
        f"({time.perf_counter() - started:.1f} s)"
    )
    for line in misses:
        print(line)


if __name__ == "__main__":
    main()
