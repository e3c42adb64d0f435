"""Whether a run's cost per environment stays flat as the run grows, and its peak memory.

Usage: .venv/bin/python -m bench.scale [--small 100] [--large 1000] [--scenarios 10]
Runs the real ``envmill run`` twice on fresh data folders, ``--small`` then ``--large``
environments of ``--scenarios`` each, and prints for each: wall time, flow time, seconds of flow
per environment, certified scenarios per second, and the peak memory of the whole process tree
(the CLI, Prefect's server, the Dask scheduler and workers, the sandboxes), sampled every 0.2 s.
The baseline is the small run: the large run's flow seconds per environment divided by the small
run's should stay within 10 %. The load average is printed before each run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

SAMPLE_SECONDS = 0.2


@dataclass
class Measured:
    envs: int
    wall: float
    flow: float
    certified: int
    peak_rss_mb: float

    @property
    def per_env(self) -> float:
        return self.flow / self.envs


def tree_rss(root: psutil.Process) -> int:
    """Resident bytes of ``root`` and every process under it now (shared pages count twice,
    as in top's sum; an upper bound)."""
    total = 0
    for process in [root, *root.children(recursive=True)]:
        try:
            total += process.memory_info().rss
        except psutil.Error:  # ended between listing and reading
            pass
    return total


def run(cli: str, envs: int, scenarios: int, out: Path) -> Measured:
    command = [cli, "run", "--out", str(out), "--envs", str(envs)]
    command += ["--scenarios-per-env", str(scenarios)]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak, watched = 0, psutil.Process(process.pid)
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(SAMPLE_SECONDS):
            try:
                peak = max(peak, tree_rss(watched))
            except psutil.Error:
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = process.communicate()
    done.set()
    sampler.join()
    wall = time.perf_counter() - start
    if process.returncode:
        sys.exit(f"envmill run failed ({process.returncode}): {stderr.decode()[-400:]}")
    return Measured(envs, wall, *_flow_and_certified(cli, out), peak / 2**20)


def _flow_and_certified(cli: str, out: Path) -> tuple[float, int]:
    query = (
        "select timings_json, (select count(*) from scenarios where status = 'certified') "
        "as certified from runs"
    )
    done = subprocess.run(
        [cli, "sql", "--out", str(out), "--format", "json", query],
        capture_output=True,
        text=True,
        check=True,
    )
    row = json.loads(done.stdout)[0]
    return float(json.loads(row["timings_json"])["wall_seconds"]), int(row["certified"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=1000)
    parser.add_argument("--scenarios", type=int, default=10)
    args = parser.parse_args()
    cli = str(Path(sys.executable).with_name("envmill"))
    results = []
    with tempfile.TemporaryDirectory(prefix="envmill-scale-") as tmp:
        for envs in (args.small, args.large):
            load = " ".join(f"{x:.2f}" for x in os.getloadavg())
            print(f"{envs} environments x {args.scenarios}: load average {load}", flush=True)
            results.append(run(cli, envs, args.scenarios, Path(tmp) / f"out-{envs}"))
    print(f"\n{'environments':>12} {'wall s':>8} {'flow s':>8} {'flow s/env':>10} "
          f"{'certified/s':>11} {'peak RSS MB':>11}")  # fmt: skip
    for m in results:
        print(f"{m.envs:>12} {m.wall:>8.1f} {m.flow:>8.1f} {m.per_env:>10.3f} "
              f"{m.certified / m.flow:>11.1f} {m.peak_rss_mb:>11.0f}")  # fmt: skip
    small, large = results
    ratio = large.per_env / small.per_env
    verdict = "flat" if abs(ratio - 1) <= 0.10 else "NOT flat"
    print(f"\nflow seconds per environment, {large.envs} / {small.envs}: {ratio:.3f}x ({verdict}, "
          "target within 10 %)")  # fmt: skip


if __name__ == "__main__":
    main()
