"""Certification cost: every gate of DESIGN §3.3 against the six-gate evidence it replaced.

Usage: .venv/bin/python -m bench.certification [--envs 12] [--scenarios 12]
The baseline, measured in the same run on the same scenarios, is what certification executed
before the mutation, reorder and cross-process gates: the solution once, the replay without its
last state-changing step, and the checks twice on three state pairs. Prints scenarios per second
for both and the ratio.
"""

from __future__ import annotations

import argparse
import time

from bench.corpus import CorpusItem, default_corpus
from envmill.tasks.certify import certify_scenario
from envmill.tasks.sandbox import Sandbox


def six_gate_evidence(item: CorpusItem, sandbox: Sandbox) -> None:
    scenario, env = item.scenario, item.env
    with sandbox.episode(env.source, env.class_name, scenario.initial_state) as episode:
        changed = []
        for index, step in enumerate(scenario.reference_solution):
            before = episode.state()
            episode.call(step.tool, step.arguments)
            if episode.state() != before:
                changed.append(index)
        final = episode.state()
        episode.load_state(scenario.initial_state)
        for index, step in enumerate(scenario.reference_solution):
            if changed and index != changed[-1]:
                episode.call(step.tool, step.arguments)
        partial = episode.state()
    initial = scenario.initial_state
    pairs = [(initial, final), (initial, initial), (initial, partial)]
    sources = [check.code for check in scenario.checks]
    for _ in range(2):
        sandbox.run_checks(sources, pairs, probe=False)


def timed(label: str, items: list[CorpusItem], work) -> float:
    start = time.perf_counter()
    for item in items:
        work(item)
    seconds = time.perf_counter() - start
    each = seconds / len(items) * 1e3
    print(f"{label:28} {len(items) / seconds:7.1f} scenarios/s  ({each:.0f} ms each)")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--envs", type=int, default=12)
    parser.add_argument("--scenarios", type=int, default=12)
    args = parser.parse_args()
    with Sandbox() as sandbox:
        items = default_corpus(sandbox, args.envs, args.scenarios)
        print(f"{len(items)} scenarios from {args.envs} environments, one process\n")
        base = timed("six-gate evidence (before)", items, lambda i: six_gate_evidence(i, sandbox))
        reports = []
        full = timed(
            "all gates (now)",
            items,
            lambda i: reports.append(certify_scenario(i.scenario, i.env, sandbox)),
        )
    certified = sum(r.status == "certified" for r in reports)
    print(f"\ncertified now: {certified} of {len(reports)}")
    print(f"cost ratio (now / before): {full / base:.2f}x")


if __name__ == "__main__":
    main()
