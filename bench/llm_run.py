"""``envmill run --backend llm`` end to end on the local Dask cluster, against the test endpoint.

Usage: .venv/bin/python -m bench.llm_run [--topics 100] [--latency 1.0] [--cap 32]
       [--workers 2] [--item-threads 16] [--scenarios 1] [--slips] [--scenario-slips]
       [--style procedural|model]
The endpoint runs in its own process with a fixed latency per request; the run is the CLI a user
types, in a subprocess, into a temporary data folder. Prints, from the warehouse: environments
accepted, failures by stage and code, LLM calls per accepted environment (SkelBuilder's; target
≤ 50; EnvScaler spends about 84) and per certified scenario (ScenGenerator's; target ≤ 5), and
the certification rate before and after repair, and the flow's wall time against the bound the
cap sets (requests × latency ÷ cap; target ≤ 1.15). When the factory's CPU seconds on this
machine's cores exceed that, the machine, not the cap, is the bound, and both ratios print.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.skelbuilder import SLIP_MIX, make_topics, spawn_endpoint
from envmill.warehouse.views import query

# ScenGenerator's slips, one topic each, counted from the last topic (apart from SLIP_MIX's):
# repaired at a gate, answered again, or (persistent) rejected after every repair
SCENARIO_SLIP_MIX = [
    {"kind": "trivial_checks"},
    {"kind": "forgetful_checks"},
    {"kind": "counter_behind"},
    {"kind": "wrong_step"},
    {"kind": "forgetful_checks", "persistent": True},
    {"kind": "trivial_checks", "persistent": True},
]


def run_cli(root: Path, topics: Path, url: str, args: argparse.Namespace) -> float:
    env = os.environ | {
        "ENVMILL_LLM__BASE_URL": url,
        "ENVMILL_LLM__API_KEY": "bench",
        "ENVMILL_LLM__MAX_CONCURRENCY": str(args.cap),
        "ENVMILL_SKELETON__ITEM_THREADS": str(args.item_threads),
        "ENVMILL_SKELETON__METHOD_THREADS": str(args.method_threads),
        "ENVMILL_SCENARIOS_PER_ENV": str(args.scenarios),
    }
    command = [str(Path(sys.executable).with_name("envmill")), "run", "--backend", "llm"]
    command += ["--topics", str(topics), "--out", str(root), "--workers", str(args.workers)]
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def rows(root: Path, sql: str) -> list[dict]:
    return query(root, sql).to_pylist()


def report(root: Path, topics: int, stats: dict, cli_wall: float, args: argparse.Namespace) -> None:
    (run,) = rows(
        root,
        "SELECT CAST(json_extract(timings_json, '$.wall_seconds') AS DOUBLE) AS wall_seconds "
        "FROM runs WHERE status = 'finished'",
    )
    accepted = rows(root, "SELECT count(*) AS n FROM environments")[0]["n"]
    failed = rows(
        root,
        "SELECT stage, code, count(*) AS n FROM failures "
        "WHERE stage NOT IN ('scenarios', 'certify') GROUP BY ALL ORDER BY n DESC",
    )
    calls = rows(
        root,
        "SELECT count(*) AS calls, avg(latency_seconds) AS latency, avg(queue_seconds) AS queue, "
        "count(*) FILTER (WHERE stage LIKE 'scenario%') AS scenario_calls, "
        "count(*) FILTER (WHERE stage LIKE 'skeleton%' AND item IN "
        "(SELECT item FROM failures WHERE stage NOT IN ('scenarios', 'certify'))) AS failed_calls "
        "FROM llm_calls",
    )[0]
    accepted_calls = calls["calls"] - calls["scenario_calls"] - calls["failed_calls"]
    scenarios = rows(
        root, "SELECT status, sum(repairs) AS repairs, count(*) AS n FROM scenarios GROUP BY ALL"
    )
    funnel = rows(
        root,
        "SELECT count(*) FILTER (WHERE status = 'certified' AND repairs = 0) AS at_once, "
        "count(*) FILTER (WHERE status = 'certified') AS certified, count(*) AS made, "
        "(SELECT count(*) FROM failures WHERE stage = 'scenarios') AS skipped FROM scenarios",
    )[0]
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_seconds = cpu.ru_utime + cpu.ru_stime
    print(f"topics {topics}: accepted {accepted}")
    print(
        "failed by stage: "
        + (", ".join(f"{r['stage']}/{r['code']} {r['n']}" for r in failed) or "none")
    )
    if accepted:
        print(
            f"LLM calls: {calls['calls']} in all, {accepted_calls / accepted:.1f} per accepted "
            f"environment (target <= 50; EnvScaler ~84); a call took {calls['latency']:.3f}s "
            f"and waited {calls['queue']:.3f}s for a slot on average"
        )
    certified = sum(r["n"] for r in scenarios if r["status"] == "certified")
    print_stage_calls(root, accepted, certified)
    made = [f"{r['status']} {r['n']} ({r['repairs']} repairs)" for r in scenarios]
    print(f"scenarios: {', '.join(made) or 'none'}, skipped {funnel['skipped']}")
    kinds = rows(root, "SELECT kind, count(*) AS n FROM scenarios GROUP BY ALL ORDER BY n DESC")
    print("  by kind: " + ", ".join(f"{r['kind']} {r['n']}" for r in kinds))
    skips = rows(
        root,
        "SELECT regexp_extract(message, '^[^:]*: [^:]*: [^:;(]{1,60}') AS why, count(*) AS n "
        "FROM failures WHERE stage = 'scenarios' GROUP BY ALL ORDER BY n DESC",
    )
    for row in skips:
        print(f"  skipped {row['n']}: {row['why']}")
    asked = funnel["made"] + funnel["skipped"]
    if asked:
        print(
            f"certification rate: {funnel['at_once'] / asked:.1%} before repair, "
            f"{funnel['certified'] / asked:.1%} after (of {asked} scenarios asked for)"
        )
    if certified:
        print(
            f"LLM calls per certified scenario: {calls['scenario_calls'] / certified:.2f} "
            "(target <= 5; EnvScaler ~10)"
        )
    print(
        f"flow wall {run['wall_seconds']:.1f}s (CLI {cli_wall:.1f}s); {stats['requests']} "
        f"requests, peak in flight {stats['peak_in_flight']}; CPU of run and endpoint "
        f"{cpu_seconds:.0f}s on {os.cpu_count()} cores"
    )
    if args.latency > 0:
        bound = stats["requests"] * args.latency / args.cap
        print(
            f"cap bound {bound:.1f}s at latency {args.latency}s, cap {args.cap}: "
            f"wall / bound {run['wall_seconds'] / bound:.3f} (target <= 1.15)"
        )
        machine = cpu_seconds / (os.cpu_count() or 1)
        if machine > bound:
            print(
                f"the machine is the bound: {machine:.1f}s of CPU per core (run, sandbox and "
                f"endpoint); wall / that {run['wall_seconds'] / machine:.3f}"
            )


def print_stage_calls(root: Path, accepted: int, certified: int) -> None:
    """Calls and prompt tokens by stage and outcome: skeleton stages per accepted environment
    (failed topics' calls left out), scenario stages per certified scenario."""
    by_stage = rows(
        root,
        "SELECT stage, outcome, count(*) AS n, sum(prompt_tokens) AS tokens FROM llm_calls "
        "WHERE stage NOT LIKE 'skeleton%' "
        "OR item NOT IN (SELECT item FROM failures WHERE stage NOT IN ('scenarios', 'certify')) "
        "GROUP BY ALL ORDER BY stage, outcome",
    )
    for row in by_stage:
        per, what = (accepted, "env") if row["stage"].startswith("skeleton") else (certified, "scn")
        share = f"{row['n'] / per:.2f} per {what}" if per else "-"
        tokens = f"{row['tokens'] / per:,.0f} prompt tokens" if per else ""
        print(f"  {row['stage']:<24} {row['outcome']:<10} {row['n']:>6}  {share}  {tokens}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--cap", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--item-threads", type=int, default=16)
    parser.add_argument("--method-threads", type=int, default=24)
    parser.add_argument("--scenarios", type=int, default=1, help="scenarios per environment")
    parser.add_argument("--slips", action="store_true", help="a slip for each of the first 9")
    parser.add_argument(
        "--scenario-slips", action="store_true", help="a scenario slip for each of the last 6"
    )
    parser.add_argument(
        "--style",
        choices=("procedural", "model"),
        default="procedural",
        help="how the offline model writes: cut from the procedural backend, or a model's own",
    )
    args = parser.parse_args()
    topics = make_topics(args.topics)
    process, endpoint = spawn_endpoint(args.latency)
    try:
        slips = zip(SLIP_MIX, topics, strict=False) if args.slips else []
        if args.scenario_slips:
            slips = [*slips, *zip(SCENARIO_SLIP_MIX, reversed(topics), strict=False)]
        endpoint.configure(
            slips=[{**slip, "topic": topic} for slip, topic in slips], style=args.style
        )
        with tempfile.TemporaryDirectory() as folder:
            root, listing = Path(folder) / "data", Path(folder) / "topics.txt"
            listing.write_text("\n".join(topics) + "\n", encoding="utf-8")
            cli_wall = run_cli(root, listing, endpoint.url, args)
            report(root, len(topics), endpoint.stats(), cli_wall, args)
    finally:
        process.terminate()
        process.wait()


if __name__ == "__main__":
    main()
