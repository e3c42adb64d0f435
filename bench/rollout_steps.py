"""The environment side of a rollout step: a sandboxed tool call with its state snapshot, against
the same episode replayed in-process.

Usage: .venv/bin/python -m bench.rollout_steps [--out DATA] [--episodes N]
DATA is a data folder with certified scenarios (default: a fresh default run of ``envmill run``
in a temporary folder). Each certified scenario's reference solution is replayed twice:

- through :class:`envmill.tasks.rollout.episode.Episode` — every step an assistant message with one
  tool call, run in the episode's sandbox host, its result and the new state sent back and
  decoded, the tool message appended;
- in-process, in a child process of its own (generated code never runs in this one): the module
  exec'd once, the state loaded, each call made and its result and ``vars(env)`` JSON-encoded.

Prints the median per-step times and their ratio, and the per-episode costs around the steps
(host start, checks at the end).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from envmill.rl import load_episode_specs
from envmill.schemas.rollout import EpisodeSpec, RolloutSettings
from envmill.schemas.settings import SandboxLimits
from envmill.tasks.rollout.episode import Episode
from envmill.tasks.sandbox import Sandbox

IN_PROCESS = r"""
import json, sys, time
job = json.load(sys.stdin)
namespace = {"__name__": "bench"}
exec(compile(job["source"], "<env>", "exec"), namespace)
times = []
for _ in range(job["repeats"]):
    env = namespace[job["class_name"]]()
    for key, value in json.loads(json.dumps(job["state"])).items():
        setattr(env, key, value)
    for step in job["steps"]:
        start = time.perf_counter()
        json.dumps(getattr(env, step["tool"])(**step["arguments"]))
        json.dumps(vars(env), sort_keys=True)
        times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


def data_folder(out: str | None) -> Path:
    if out:
        return Path(out)
    root = Path(tempfile.mkdtemp(prefix="envmill-bench-")) / "data"
    envmill = str(Path(sys.executable).with_name("envmill"))
    subprocess.run([envmill, "run", "--out", str(root)], check=True, capture_output=True)
    return root


def sandboxed_steps(spec: EpisodeSpec, box: Sandbox) -> tuple[list[float], float, float]:
    """Per-step seconds of ``Episode.step``, and the episode's start and finish seconds."""
    settings = RolloutSettings(max_steps=len(spec.scenario.reference_solution) + 2)
    episode = Episode(spec, box, settings, policy="bench")
    began = time.perf_counter()
    episode.start()
    opened = time.perf_counter() - began
    times = []
    for index, step in enumerate(spec.scenario.reference_solution):
        call = {
            "id": f"c{index}",
            "type": "function",
            "function": {"name": step.tool, "arguments": json.dumps(step.arguments)},
        }
        start = time.perf_counter()
        episode.step({"role": "assistant", "content": None, "tool_calls": [call]})
        times.append(time.perf_counter() - start)
    episode.step("Done.")
    began = time.perf_counter()
    trajectory = episode.finish()
    assert trajectory.success, trajectory.details
    return times, opened, time.perf_counter() - began


def in_process_steps(spec: EpisodeSpec, repeats: int = 3) -> list[float]:
    job = {
        "source": spec.source,
        "class_name": spec.class_name,
        "state": spec.scenario.initial_state,
        "steps": [step.model_dump() for step in spec.scenario.reference_solution],
        "repeats": repeats,
    }
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="a data folder with certified scenarios")
    parser.add_argument("--episodes", type=int, default=60)
    args = parser.parse_args()
    root = data_folder(args.out)
    specs = [s for s in load_episode_specs(root) if s.scenario.mode == "non_conversational"]
    specs = specs[: args.episodes]
    sandboxed, baseline, opens, finishes = [], [], [], []
    with Sandbox(SandboxLimits()) as box:
        for spec in specs:
            times, opened, finished = sandboxed_steps(spec, box)
            sandboxed += times
            opens.append(opened)
            finishes.append(finished)
            baseline += in_process_steps(spec)
    step, base = statistics.median(sandboxed), statistics.median(baseline)
    print(f"{len(specs)} episodes, {len(sandboxed)} steps, from {root}")
    print(f"in-process step (call + state JSON):    {base * 1e6:9.0f} us")
    print(f"sandboxed step (Episode.step):          {step * 1e6:9.0f} us   x{step / base:.1f}")
    print(f"episode open (host start + load):       {statistics.median(opens) * 1e3:9.1f} ms")
    print(f"episode finish (checks in their host):  {statistics.median(finishes) * 1e3:9.1f} ms")


if __name__ == "__main__":
    main()
