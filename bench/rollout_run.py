"""``envmill rollout`` over a corpus on the local Dask cluster, with a scripted policy at a fixed
latency: episodes per second, and the flow's wall time against the bound the cap sets.

Usage: .venv/bin/python -m bench.rollout_run [--out DATA] [--latency 0.5] [--cap 32]
       [--workers 2] [--threads 16] [--samples 1]
DATA defaults to a fresh default run (``envmill run``: 24 environments, ~290 certified
scenarios) in a temporary folder. The endpoint runs in its own process; the policy replays each
scenario's reference trajectory and the simulated user is the endpoint's rule-based one, so
every episode is a real conversation of real length. The bound is the larger of
(requests × latency ÷ cap) and the longest episode's chain of calls × latency: no scheduler can
beat either.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.rollout_steps import data_folder
from envmill.flows.cli.rollout import reference_scripts
from envmill.tasks.offline_llm import Endpoint
from envmill.warehouse.episodes import certified_scenario_ids
from envmill.warehouse.views import query


def spawn_endpoint(latency: float) -> tuple[subprocess.Popen, Endpoint]:
    command = [sys.executable, "-m", "envmill.tasks.offline_llm", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--latency", str(latency)], stdout=subprocess.PIPE, text=True
    )
    return process, Endpoint(process.stdout.readline().strip())


def run_rollout(root: Path, url: str, args: argparse.Namespace) -> float:
    env = os.environ | {
        "ENVMILL_LLM__BASE_URL": url,
        "ENVMILL_LLM__API_KEY": "bench",
        "ENVMILL_LLM__MAX_CONCURRENCY": str(args.cap),
        "ENVMILL_ROLLOUT__EPISODE_THREADS": str(args.threads),
        "ENVMILL_LLM__CACHE": "false",
    }
    command = [str(Path(sys.executable).with_name("envmill")), "rollout", "--out", str(root)]
    command += ["--workers", str(args.workers), "--samples", str(args.samples)]
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def report(root: Path, latency: float, cap: int, command_seconds: float) -> None:
    (run,) = query(
        root, "SELECT * FROM runs WHERE backend = 'rollout' ORDER BY started_at DESC LIMIT 1"
    ).to_pylist()
    wall = json.loads(run["timings_json"])["wall_seconds"]
    counts = json.loads(run["counts_json"])
    calls = query(
        root,
        "SELECT item, count(*) AS n FROM llm_calls WHERE run_id = $run AND NOT cache_hit "
        "GROUP BY item",
        {"run": run["run_id"]},
    ).to_pylist()
    requests = sum(row["n"] for row in calls)
    chain = max(row["n"] for row in calls) * latency
    bound = max(requests * latency / cap, chain)
    episodes = counts.get("episodes", 0)
    print(f"episodes {episodes} ({counts.get('successes', 0)} successes), requests {requests}")
    print(
        f"flow wall {wall:.1f} s, command {command_seconds:.1f} s, episodes/s {episodes / wall:.2f}"
    )
    print(
        f"bound {bound:.1f} s (requests x {latency} s / cap {cap}: "
        f"{requests * latency / cap:.1f} s; longest episode {chain:.1f} s)"
    )
    print(f"flow wall / bound: {wall / bound:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="a data folder with certified scenarios")
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--cap", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--samples", type=int, default=1)
    args = parser.parse_args()
    source = data_folder(args.out)
    root = Path(tempfile.mkdtemp(prefix="envmill-bench-rollout-")) / "data"
    subprocess.run(["cp", "-r", str(source), str(root)], check=True)
    process, endpoint = spawn_endpoint(args.latency)
    try:
        endpoint.scripts(reference_scripts(root, certified_scenario_ids(root)))
        seconds = run_rollout(root, endpoint.url, args)
    finally:
        process.terminate()
        process.wait(timeout=10)
    report(root, args.latency, args.cap, seconds)


if __name__ == "__main__":
    main()
