"""Certification cost: every gate of DESIGN §3.3 against the six-gate evidence it replaced, and
against its floor: the same gates with the sandbox's work done in this process, unisolated.

Usage: .venv/bin/python -m bench.certification [--envs 12] [--scenarios 12]
The baseline, measured in the same run on the same scenarios, is what certification executed
before the mutation, reorder and cross-process gates: the solution once, the replay without its
last state-changing step, and the checks twice on three state pairs. Prints scenarios per second
for both and the ratio.

The floor (``bench/inprocess.py``, bench-only: it runs the procedural backend's trusted sources
in this process) certifies every scenario too, once untimed first so that neither measured pass
pays for the factory's first-use caches. The bench prints how many of its reports agree with the
sandboxed ones (status and rejected gate, then every gate's reason), and per scenario the wall
time and CPU of both: the machine's busy CPU from /proc/stat (every process: the sandbox's
zygotes, hosts and their forks, and whoever else is running, so the load average at the start
says how quiet the machine was), this process's own CPU, and its tree's (its own and its reaped
children's: the sandboxed pass starts and closes a Sandbox of its own, whose zygotes reap their
hosts, which reap their forks, so all of them are counted and nobody else). The issue's target:
sandboxed CPU at most 4x the floor's. Then what gate ``judges_text`` costs (its probes judged on
evidence already collected) against the whole certification, per judged scenario, and the funnel.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import astuple, dataclass

from bench.corpus import CorpusItem, default_corpus
from bench.inprocess import InProcessSandbox
from envmill.schemas.scenario import CertificationReport
from envmill.tasks.certify import certify_scenario
from envmill.tasks.certify.evidence import collect_evidence
from envmill.tasks.certify.text_probes import judges_text, text_probes
from envmill.tasks.judge import judges_reply
from envmill.tasks.sandbox import Sandbox

TARGET = 4.0  # the issue's: sandboxed CPU at most this many times the floor's
NOISE = 0.1  # busy CPU outside the process tree, as a share of the tree's: not a quiet machine
TICK = os.sysconf("SC_CLK_TCK")


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
    print_rate(label, seconds, len(items))
    return seconds


def print_rate(label: str, seconds: float, count: int) -> None:
    print(f"{label:28} {count / seconds:7.1f} scenarios/s  ({seconds / count * 1e3:.0f} ms each)")


@dataclass(frozen=True)
class Usage:
    """Seconds of a stretch of work: wall; busy CPU of the whole machine; this process's CPU;
    the CPU of the children it reaped (and of all they reaped, recursively)."""

    wall: float
    busy: float
    own: float
    children: float

    @property
    def tree(self) -> float:
        return self.own + self.children

    def __sub__(self, other: Usage) -> Usage:
        return Usage(*(a - b for a, b in zip(astuple(self), astuple(other), strict=True)))


def usage_now() -> Usage:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Usage(
        time.perf_counter(),
        busy_seconds(),
        own.ru_utime + own.ru_stime,
        children.ru_utime + children.ru_stime,
    )


def busy_seconds() -> float:
    """CPU seconds every core spent on anything since boot: user, nice, system, irq and softirq
    (/proc/stat's first line; idle, iowait and time stolen by a hypervisor are not work here)."""
    with open("/proc/stat") as stat:
        user, nice, system, _idle, _iowait, irq, softirq = stat.readline().split()[1:8]
    return sum(int(ticks) for ticks in (user, nice, system, irq, softirq)) / TICK


def certify_all(
    items: list[CorpusItem], open_sandbox: Callable[[], Sandbox | InProcessSandbox]
) -> tuple[list[CertificationReport], Usage]:
    """Every scenario certified in a sandbox opened for the pass (its start, about 0.1 s of CPU,
    counted) and closed, its processes reaped, before the end is measured."""
    start = usage_now()
    with open_sandbox() as sandbox:
        reports = [certify_scenario(i.scenario, i.env, sandbox) for i in items]
    return reports, usage_now() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--envs", type=int, default=12)
    parser.add_argument("--scenarios", type=int, default=12)
    args = parser.parse_args()
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"load average at start {load} (1, 5, 15 min) on {os.cpu_count()} cores")
    with Sandbox() as sandbox:
        items = default_corpus(sandbox, args.envs, args.scenarios)
        print(f"{len(items)} scenarios from {args.envs} environments, one process")
        print(f"sandbox isolation: {sandbox.isolation}\n")
        base = timed("six-gate evidence (before)", items, lambda i: six_gate_evidence(i, sandbox))
        certify_all(items, InProcessSandbox)  # warms the factory's caches for both passes
        reports, boxed = certify_all(items, Sandbox)
        print_rate("all gates (now)", boxed.wall, len(items))
        floor_reports, floor = certify_all(items, InProcessSandbox)
        judged = [i for i in items if judges_reply(i.scenario)]
        gate = probe_cost(judged, sandbox) if judged else 0.0
    certified = sum(r.status == "certified" for r in reports)
    print(f"\ncertified now: {certified} of {len(reports)}")
    print(f"cost ratio (now / before): {boxed.wall / base:.2f}x")
    if judged:
        share = gate / (boxed.wall / len(items) * len(judged))
        print(f"judges_text: {gate / len(judged) * 1e3:.1f} ms per judged scenario, {share:.1%} of")
        print(f"  certifying it ({len(judged)} answer, refusal and conditional scenarios)")
    funnel = Counter(r.rejected_gate or "certified" for r in reports)
    print("funnel: " + ", ".join(f"{gate} {n}" for gate, n in funnel.most_common()))
    print_agreement(reports, floor_reports)
    print_floor(boxed, floor, len(items))


def print_agreement(boxed: list[CertificationReport], floor: list[CertificationReport]) -> None:
    """The floor is faithful when every report has the sandboxed one's verdict."""
    pairs = list(zip(boxed, floor, strict=True))
    differ = [
        (a, b) for a, b in pairs if (a.status, a.rejected_gate) != (b.status, b.rejected_gate)
    ]
    reasons = sum(a.gates == b.gates for a, b in pairs)
    agree, count = len(pairs) - len(differ), len(pairs)
    print(f"\nfloor and sandbox, same status and rejected gate: {agree} of {count} scenarios")
    print(f"  the same reason at every gate: {reasons} of {count}")
    for a, b in differ:
        print(f"  DISAGREES on {a.scenario_id}: sandboxed {a.status} ({a.rejected_gate}),")
        print(f"    floor {b.status} ({b.rejected_gate})")


def print_floor(boxed: Usage, floor: Usage, count: int) -> None:
    """Per scenario, in ms: the sandboxed pass, the floor, and their ratio."""
    columns = ("wall", "busy CPU", "this process", "process tree")
    print(f"\n{f'per scenario ({count})':24}" + "".join(f"{c:>14}" for c in columns))
    rows = {
        "sandboxed, ms": per_scenario(boxed, count),
        "in-process floor, ms": per_scenario(floor, count),
    }
    for label, values in rows.items():
        print(f"{label:24}" + "".join(f"{v:14.1f}" for v in values))
    ratios = [a / b if b else math.inf for a, b in zip(*rows.values(), strict=True)]
    print(f"{'sandboxed / floor':24}" + "".join(f"{r:13.2f}x" for r in ratios))
    others = [(u.busy - u.tree) / count * 1e3 for u in (boxed, floor)]
    print(f"busy CPU outside this process tree (whoever else runs): {others[0]:.1f} ms per")
    print(f"  scenario during the sandboxed pass, {others[1]:.1f} during the floor's")
    if others[0] > NOISE * rows["sandboxed, ms"][3]:
        print("  the machine was not quiet: busy CPU counts others' work, the tree does not")
    busy, tree = ratios[1], ratios[3]
    print(f"target, sandboxed CPU <= {TARGET:g}x the floor's: busy CPU {busy:.2f}x ({met(busy)}),")
    print(f"  process tree {tree:.2f}x ({met(tree)})")


def met(ratio: float) -> str:
    return "met" if ratio <= TARGET else "missed"


def per_scenario(usage: Usage, count: int) -> list[float]:
    return [value / count * 1e3 for value in (usage.wall, usage.busy, usage.own, usage.tree)]


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
