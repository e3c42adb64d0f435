"""Certification cost: every gate of DESIGN §3.3 against the six-gate evidence it replaced.

Usage: .venv/bin/python -m bench.certification [--envs 12] [--scenarios 12]
The baseline, measured in the same run on the same scenarios, is what certification executed
before the mutation, reorder and cross-process gates: the solution once, the replay without its
last state-changing step, and the checks twice on three state pairs. Prints scenarios per second
for both and the ratio; then what gate ``judges_text`` costs (its probes judged on evidence
already collected) against the whole certification, per judged scenario, and the funnel.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from bench.corpus import CorpusItem, default_corpus
from envmill.tasks.certify import certify_scenario
from envmill.tasks.certify.evidence import collect_evidence
from envmill.tasks.certify.text_probes import judges_text, text_probes
from envmill.tasks.judge import judges_reply
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
        judged = [i for i in items if judges_reply(i.scenario)]
        gate = probe_cost(judged, sandbox) if judged else 0.0
    certified = sum(r.status == "certified" for r in reports)
    print(f"\ncertified now: {certified} of {len(reports)}")
    print(f"cost ratio (now / before): {full / base:.2f}x")
    if judged:
        share = gate / (full / len(items) * len(judged))
        print(f"judges_text: {gate / len(judged) * 1e3:.1f} ms per judged scenario, {share:.1%} of")
        print(f"  certifying it ({len(judged)} answer, refusal and conditional scenarios)")
    funnel = Counter(r.rejected_gate or "certified" for r in reports)
    print("funnel: " + ", ".join(f"{gate} {n}" for gate, n in funnel.most_common()))


def probe_cost(items: list[CorpusItem], sandbox: Sandbox) -> float:
    """Seconds the ``judges_text`` gate takes over ``items``, on their collected evidence."""
    evidence = [(i, collect_evidence(i.scenario, i.env, sandbox)) for i in items]
    start = time.perf_counter()
    probes = 0
    for item, found in evidence:
        if found.run is not None:
            probes += len(text_probes(item.scenario, found))
            judges_text(item.scenario, found, found.run)
    seconds = time.perf_counter() - start
    print(f"judges_text: {probes} probes over {len(items)} scenarios")
    return seconds


if __name__ == "__main__":
    main()
