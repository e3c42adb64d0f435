"""The procedural backend by domain: environments, tools, scenarios, certification, throughput.

Usage: .venv/bin/python -m bench.procedural [--seed 0] [--envs-per-domain 2] [--scenarios 10]
Runs the batch pipeline (compile → check → scenarios → certify → trajectories) without Prefect,
once in one process and once split over two (2 cores), and prints the speedup as a ratio.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor

from envmill.schemas.run import BatchOutput
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.procedural.catalog import list_domains
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from envmill.tasks.sandbox.shared import process_sandbox


def run_batch(batch, settings) -> BatchOutput:
    return synthesize_batch(batch, settings, process_sandbox(settings.sandbox))


def synthesize(settings: EnvmillSettings, processes: int) -> tuple[list[BatchOutput], float]:
    batches = plan_batches(settings)
    start = time.perf_counter()
    with ProcessPoolExecutor(processes) as pool:
        outputs = list(pool.map(run_batch, batches, [settings] * len(batches)))
    return outputs, time.perf_counter() - start


def print_by_domain(outputs: list[BatchOutput]) -> None:
    rows: dict[str, Counter] = defaultdict(Counter)
    domain_of = {}
    for output in outputs:
        for env in output.environments:
            domain_of[env.env_id] = env.domain
            kinds = Counter(env.tool_kinds.get(t.function.name) for t in env.tools)
            rows[env.domain].update(envs=1, query=kinds["query"], change=kinds["state_change"])
        for scenario in output.scenarios:
            rows[domain_of[scenario.env_id]].update(
                scenarios=1, certified=scenario.status == "certified"
            )
    print(
        f"{'domain':12} {'envs':>4} {'query/env':>9} {'change/env':>10} "
        f"{'scenarios':>9} {'certified':>9}"
    )
    for domain, row in sorted(rows.items()):
        envs = row["envs"]
        print(
            f"{domain:12} {envs:4} {row['query'] / envs:9.1f} {row['change'] / envs:10.1f} "
            f"{row['scenarios']:9} {row['certified']:9}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--envs-per-domain", type=int, default=2)
    parser.add_argument("--scenarios", type=int, default=10)
    args = parser.parse_args()
    envs = args.envs_per_domain * len(list_domains())
    settings = EnvmillSettings(
        seed=args.seed, envs=envs, scenarios_per_env=args.scenarios, batch_size=1
    )
    one, one_seconds = synthesize(settings, 1)
    two, two_seconds = synthesize(settings, 2)
    print_by_domain(two)
    scenarios = [s for o in two for s in o.scenarios]
    certified = sum(s.status == "certified" for s in scenarios)
    gates = Counter(s.rejected_gate for s in scenarios if s.rejected_gate)
    skipped = sum(f.stage == "scenarios" for o in two for f in o.failures)
    env_failures = Counter(f.stage for o in two for f in o.failures if f.stage != "scenarios")
    stage_seconds = Counter()
    for output in two:
        stage_seconds.update(output.seconds)
    total_tools = sum(len(e.tools) for o in two for e in o.environments)
    n_envs = sum(len(o.environments) for o in two)
    print(
        f"\nseed {args.seed}: {n_envs} environments, {total_tools / n_envs:.1f} tools/env, "
        f"{len(scenarios)} scenarios, {certified} certified ({certified / len(scenarios):.1%}), "
        f"skipped while generating {skipped}, environment failures {dict(env_failures)}"
    )
    print(f"rejections by gate: {dict(gates) or 'none'}")
    print(
        "work seconds by stage (2 processes): "
        + ", ".join(f"{k} {v:.1f}" for k, v in stage_seconds.items())
    )
    for label, seconds in (("1 process", one_seconds), ("2 processes", two_seconds)):
        print(
            f"{label:12} {seconds:6.1f} s  {n_envs / seconds:6.2f} envs/s  "
            f"{certified / seconds:6.1f} certified/s"
        )
    print(f"speedup 2 vs 1 process: {one_seconds / two_seconds:.2f}x")
    same = [s.scenario_id for o in one for s in o.scenarios] == [
        s.scenario_id for o in two for s in o.scenarios
    ]
    print(f"same scenario ids in both runs: {same}")


if __name__ == "__main__":
    main()
