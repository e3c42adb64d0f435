"""Sandboxed tool calls against in-process ``exec`` on the same calls; each isolation layer's cost.

Usage: .venv/bin/python -m bench.sandbox [--episodes N]
The environment is the golden clinic module; an episode is a load plus 20 calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox import Sandbox
from envmill.tasks.sandbox.isolation import IsolationLevel, resolve_isolation

ROOT = Path(__file__).resolve().parent.parent
SOURCE = (ROOT / "tests/fixtures/envs/clinic.py").read_text()
SCENARIO = json.loads((ROOT / "tests/fixtures/scenarios/clinic.json").read_text())["certified"][0]
CALLS = [
    ("get_current_time", {}),
    ("get_patient", {"patient_id": "P001"}),
    ("list_doctors_by_specialty", {"specialty": "cardiology"}),
    ("list_unpaid_invoices", {}),
] * 5


def in_process_episode() -> None:
    namespace: dict = {"__name__": "bench"}
    exec(compile(SOURCE, "<clinic>", "exec"), namespace)  # trusted fixture: the baseline
    env = namespace["ClinicSystem"]()
    for key, value in json.loads(json.dumps(SCENARIO["initial_state"])).items():
        setattr(env, key, value)
    for tool, arguments in CALLS:
        json.dumps(getattr(env, tool)(**arguments))
        json.dumps(vars(env))  # the sandbox returns the state with every call; so does the baseline


def sandboxed_episode(box: Sandbox) -> None:
    with box.episode(SOURCE, "ClinicSystem", SCENARIO["initial_state"]) as episode:
        for tool, arguments in CALLS:
            assert episode.call(tool, arguments).result["success"]


def per_call(box: Sandbox, n: int) -> float:
    with box.episode(SOURCE, "ClinicSystem", SCENARIO["initial_state"]) as episode:
        start = time.perf_counter()
        for i in range(n):
            episode.call(*CALLS[i % len(CALLS)])
        return (time.perf_counter() - start) / n


def timed(fn, repeats: int) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=60)
    args = parser.parse_args()
    baseline = timed(in_process_episode, args.episodes)
    baseline_call = timed(lambda: [in_process_call() for _ in range(200)], 5) / 200
    best = resolve_isolation("auto")
    layers = {
        "rlimits only (basic)": IsolationLevel(False, False, False),
        "+ namespaces": IsolationLevel(best.namespaces, False, False),
        "+ chroot + uid per host": IsolationLevel(best.namespaces, best.chroot, best.drop_uid),
        "+ seccomp filter (full)": best,
    }
    print(f"in-process exec: episode {baseline * 1e3:.2f} ms, call {baseline_call * 1e6:.0f} us")
    print(
        f"{'isolation':34} {'episode ms':>10} {'x exec':>8} {'call us':>8} {'x exec':>8} "
        f"{'episodes/s':>10}"
    )
    for name, level in layers.items():
        with Sandbox(SandboxLimits(), level=level) as box:
            episode = timed(lambda box=box: sandboxed_episode(box), args.episodes)
            call = per_call(box, 500)
        print(
            f"{name:34} {episode * 1e3:10.2f} {episode / baseline:8.1f} {call * 1e6:8.0f} "
            f"{call / baseline_call:8.1f} {1 / episode:10.0f}"
        )


_ENV = None


def in_process_call() -> None:
    global _ENV
    if _ENV is None:
        namespace: dict = {"__name__": "bench"}
        exec(compile(SOURCE, "<clinic>", "exec"), namespace)
        _ENV = namespace["ClinicSystem"]()
        for key, value in json.loads(json.dumps(SCENARIO["initial_state"])).items():
            setattr(_ENV, key, value)
    tool, arguments = CALLS[1]
    json.dumps(getattr(_ENV, tool)(**arguments))
    json.dumps(vars(_ENV))


if __name__ == "__main__":
    main()
