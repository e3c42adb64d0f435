"""What orchestration costs a whole ``envmill run``: the CLI against a plain 2-process pool.

Usage: .venv/bin/python -m bench.run_overhead [--envs 24] [--scenarios 12] [--workers 2]
           [--batch-size 4] [--cli PATH] [--runs cold,warm]
Each side runs as its own process, timed from launch to exit, on a fresh data folder:
- the baseline: a ``concurrent.futures`` pool of ``--workers`` processes mapping the same batch
  function (``synthesize_batch``) and writing the same parts (``write_batch``);
- ``envmill run --out <fresh>`` (``--cli`` picks another checkout's command, to compare). "cold"
  uses an empty envmill cache (a first run on this machine: no Prefect database template yet),
  "warm" the cache the cold run left (any later run on a new ``--out``).
It prints both walls, their ratio, and the envmill side's phases from its timeline
(``ENVMILL_TIMELINE``; a command without one shows only its wall).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from pathlib import Path

PHASES = (  # (label, from mark, to mark): consecutive marks of flows/cli and flows/prefect_api
    ("interpreter + CLI imports", "launch", "cli_imported"),
    ("settings, plan check, lock, server spawn", "cli_imported", "server_started"),
    ("Dask cluster start (server starting meanwhile)", "server_started", "cluster_up"),
    ("rest of server start (migrations when cold)", "cluster_up", "server_healthy"),
    ("template/marker bookkeeping", "server_healthy", "flow_start"),
    ("flow (planning, batches, records)", "flow_start", "flow_done"),
    ("Dask cluster close", "flow_done", "cluster_closed"),
    ("server stop", "cluster_closed", "server_stopped"),
    ("summary and exit", "server_stopped", "exit"),
)


def plain_batch(batch, settings, root: str) -> int:
    """One batch as the flow's task does it, minus Prefect: synthesize, then commit its parts."""
    from envmill.tasks.pipeline import synthesize_batch
    from envmill.tasks.sandbox.shared import process_sandbox
    from envmill.warehouse.rows import write_batch
    from envmill.warehouse.store import Warehouse

    output = synthesize_batch(batch, settings, process_sandbox(settings.sandbox))
    write_batch(Warehouse(root), output, "baseline")
    return sum(s.status == "certified" for s in output.scenarios)


def plain_run(root: str, envs: int, scenarios: int, workers: int, batch_size: int) -> None:
    """The baseline program: plan, map the batches over a process pool, write every part."""
    from envmill.schemas.settings import EnvmillSettings
    from envmill.tasks.pipeline import plan_batches
    from envmill.warehouse.store import Warehouse

    settings = EnvmillSettings(
        envs=envs, scenarios_per_env=scenarios, workers=workers, batch_size=batch_size
    )
    Warehouse(root)
    batches = plan_batches(settings)
    with ProcessPoolExecutor(workers) as pool:
        certified = sum(pool.map(plain_batch, batches, repeat(settings), repeat(root)))
    print(f"baseline: {len(batches)} batches, {certified} certified", file=sys.stderr)


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.time()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.time() - start
    if done.returncode:
        sys.exit(f"{command[0]} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return wall


def envmill_run(cli: str, args, out: Path, cache: Path, timeline: Path) -> dict[str, float]:
    """``envmill run`` on ``out`` with ``cache`` as its cache folder; its marks, wall-clock."""
    env = {**os.environ, "ENVMILL_CACHE_DIR": str(cache), "ENVMILL_TIMELINE": str(timeline)}
    for key in ("PREFECT_API_URL", "ENVMILL_HOME"):
        env.pop(key, None)
    command = [cli, "run", "--out", str(out), "--envs", str(args.envs)]
    command += ["--scenarios-per-env", str(args.scenarios), "--workers", str(args.workers)]
    command += ["--batch-size", str(args.batch_size)]
    launch = time.time()
    wall = timed(command, env)
    marks = {"launch": launch, "exit": launch + wall}
    if timeline.exists():
        for line in timeline.read_text().splitlines():
            name, at = line.split()
            marks.setdefault(name, float(at))
    return marks


def print_run(label: str, marks: dict[str, float], baseline: float) -> None:
    wall = marks["exit"] - marks["launch"]
    print(f"envmill run, {label}: {wall:.1f} s = {wall / baseline:.2f}x the baseline")
    for name, start, end in PHASES:
        if start in marks and end in marks:
            print(f"  {name:50} {marks[end] - marks[start]:6.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--envs", type=int, default=24)
    parser.add_argument("--scenarios", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument(
        "--cli",
        action="append",
        help="an envmill command to time (repeat to compare checkouts) [this venv's]",
    )
    parser.add_argument("--runs", default="cold,warm", help="cold, warm or both")
    args = parser.parse_args()
    clis = args.cli or [str(Path(sys.executable).with_name("envmill"))]
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())  # before the runs add to it
    with tempfile.TemporaryDirectory(prefix="envmill-bench-") as tmp:
        work = Path(tmp)
        code = (
            f"from bench.run_overhead import plain_run; plain_run({str(work / 'plain')!r}, "
            f"{args.envs}, {args.scenarios}, {args.workers}, {args.batch_size})"
        )
        baseline = timed([sys.executable, "-c", code], dict(os.environ))
        print(
            f"{args.envs} environments x {args.scenarios} scenarios, {args.workers} workers, "
            f"batches of {args.batch_size}; load average at start {load} (1, 5, 15 min) "
            f"on {os.cpu_count()} cores"
        )
        print(f"baseline (plain {args.workers}-process pool, same batches, same parts): "
              f"{baseline:.1f} s")  # fmt: skip
        for number, cli in enumerate(clis):
            for label in args.runs.split(","):
                name = f"{number}-{label}"
                marks = envmill_run(
                    cli, args, work / f"out-{name}", work / f"cache-{number}", work / name
                )
                print_run(f"{label}, {cli}", marks, baseline)


if __name__ == "__main__":
    main()
