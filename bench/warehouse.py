"""``envmill stats`` and typical queries over a warehouse of many small batch parts, before and
after ``envmill compact``; the compaction's own wall time and peak memory.

Usage: .venv/bin/python -m bench.warehouse [--trajectories 1000000 --scenarios 100000]
       [--commits 25000] [--keep DIR]
Builds a synthetic warehouse in a temporary folder (``bench.warehouse_rows``: parts with the row
shapes of a run, one batch commit per environment as the llm backend makes them, written with
pyarrow and committed through ``warehouse.commits``; no pipeline run), times each reading the
way ``envmill stats`` / ``envmill sql`` do (a new connection each time, best of ``--repeat``),
compacts it in a child process (``envmill compact``, for its wall time and peak RSS), times them
again, and once more after a next run's batches (1 %) land beside the compacted parts; prints
seconds and ratios (after / before), and the CPU seconds after (on a busy machine the wall time
is no measure; on an idle one it is about CPU seconds / cores).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing import Pool
from pathlib import Path

from bench.warehouse_rows import Shape, hex16, write_batches
from envmill.schemas.tables import TABLES
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import corpus_stats, query

QUERIES = {
    "reward by policy": "SELECT policy, count(*) AS n, avg(reward) AS reward FROM trajectories "
    "GROUP BY policy ORDER BY policy",
    "one scenario by id": "SELECT * FROM scenarios WHERE scenario_id = '{scenario}'",
    "trajectories by domain (join)": "SELECT e.domain, count(*) AS n, avg(t.reward) AS reward "
    "FROM trajectories t JOIN environments e USING (env_id) GROUP BY e.domain ORDER BY n DESC",
    "checks per certified scenario (JSON)": "SELECT avg(json_array_length(checks_json)) AS checks "
    "FROM scenarios WHERE status = 'certified'",
    "LLM cost by stage": "SELECT stage, sum(cost_usd) AS cost FROM llm_calls GROUP BY stage",
}
COMPACT = """
import json, resource, sys, time
from envmill.flows.cli import main
sys.argv = ["envmill", "compact", "--out", sys.argv[1]]
started = time.perf_counter()
try:
    main()
finally:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": time.perf_counter() - started, "rss_mb": peak}), file=sys.stderr)
"""


def build(root: Path, commits: int, shape: Shape) -> tuple[int, int, float]:
    """Write ``commits`` batch commits with every core; returns (parts, bytes, seconds)."""
    started = time.perf_counter()
    Warehouse(root)
    for table in TABLES:
        (root / table).mkdir(exist_ok=True)
    step = max(1, min(500, math.ceil(commits / (8 * (os.cpu_count() or 1)))))
    ranges = [(root, i, min(i + step, commits), shape) for i in range(0, commits, step)]
    with Pool(os.cpu_count()) as pool:
        written = pool.starmap(write_batches, ranges)
    parts, size = map(sum, zip(*written, strict=True))
    return parts, size, time.perf_counter() - started


def best_of(read: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Wall and CPU seconds (all threads) of the fastest of ``repeat`` readings (one, when it
    passes 20 s). CPU time says what a busy machine's wall time hides: DuckDB runs a thread a
    core, so on an idle machine the wall time is about CPU / cores at best."""
    best = (math.inf, math.inf)
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        read()
        best = min(best, (time.perf_counter() - wall, time.process_time() - cpu))
        if best[0] > 20:
            break
    return best


def readings(root: Path, scenario: str) -> dict[str, Callable[[], object]]:
    found = {"envmill stats": lambda: corpus_stats(root)}
    for name, sql in QUERIES.items():
        found[name] = lambda sql=sql: query(root, sql.format(scenario=scenario))
    return found


def compact_in_child(root: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", COMPACT, str(root)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"envmill compact failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stderr.strip().splitlines()[-1]) | {"output": done.stdout}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trajectories", type=int, default=1_000_000)
    parser.add_argument("--scenarios", type=int, default=100_000)
    parser.add_argument("--commits", type=int, default=25_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the warehouse in this new folder, keep it")
    args = parser.parse_args()
    if args.keep:
        run(args, args.keep)
        return
    with tempfile.TemporaryDirectory() as tmp:
        run(args, Path(tmp) / "data")


def run(args: argparse.Namespace, root: Path) -> None:
    shape = Shape(
        scenarios=max(1, args.scenarios // args.commits),
        trajectories_per_scenario=max(1, args.trajectories // args.scenarios),
    )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    parts, size, seconds = build(root, args.commits, shape)
    overview = corpus_stats(root)["overview"].to_pylist()[0]
    print(
        f"{overview['trajectories']} trajectories, {overview['scenarios']} scenarios, "
        f"{overview['environments']} environments, {overview['tools']} tools in "
        f"{args.commits} batch commits: {parts} parts, {size / 2**20:.0f} MiB, "
        f"built in {seconds:.0f} s"
    )
    scenario = hex16("scenario", hex16("env", args.commits // 2), 0)
    before = {name: best_of(read, args.repeat) for name, read in readings(root, scenario).items()}
    compaction = compact_in_child(root)
    after = {name: best_of(read, args.repeat) for name, read in readings(root, scenario).items()}
    extra = max(1, args.commits // 100)  # a next run's batches, beside the compacted parts
    write_batches(root, args.commits, args.commits + extra, shape)
    later = {name: best_of(read, args.repeat) for name, read in readings(root, scenario).items()}
    print(compaction["output"].rstrip())
    size = sum(p.stat().st_size for t in TABLES for p in (root / t).glob("*.parquet"))
    print(
        f"compaction: {compaction['seconds']:.0f} s wall, peak RSS {compaction['rss_mb']:.0f} MiB "
        f"(envmill compact, a process of its own); {size / 2**20:.0f} MiB of parts after"
    )
    head = ["before s", "after s", "after/before", "after CPU s", f"+{extra} batches s"]
    print(f"{'':38} " + " ".join(f"{h:>{max(9, len(h))}}" for h in head))
    for name, (wall, _) in before.items():
        done, cpu = after[name]
        cells = [f"{wall:9.2f}", f"{done:9.3f}", f"{done / wall:12.4f}", f"{cpu:11.3f}"]
        print(f"{name:38} " + " ".join(cells) + f" {later[name][0]:{len(head[-1])}.3f}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
