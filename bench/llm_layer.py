"""The LLM layer against the local endpoint: throughput under the global cap, and its overhead.

Usage: PYTHONPATH=. .venv/bin/python -m bench.llm_layer [--calls 1000] [--latency 0.2] [--cap 32]
The endpoint runs in its own process (as a real one would), so its threads do not share the
benchmark's interpreter.

1. Throughput: ``--calls`` uncached calls on threads through the layer (cap ``--cap``), server
   latency ``--latency``; the ideal wall time is calls × latency ÷ cap (target ratio ≤ 1.15).
2. Overhead: sequential calls at latency 0, the layer (no cache; cache miss + write; cache hit)
   against a bare ``openai`` call to the same server.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai

from envmill.schemas.llm import LlmSettings, StageModel
from envmill.tasks.llm import STAGE_HEADER, LlmClient
from envmill.tasks.offline_llm import Endpoint

MODEL = StageModel(model="bench", timeout_seconds=30, deadline_seconds=120)


def spawn_endpoint(latency: float) -> tuple[subprocess.Popen, Endpoint]:
    command = [sys.executable, "-m", "envmill.tasks.offline_llm", "--latency", str(latency)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    return process, Endpoint(process.stdout.readline().strip())


def layer(url: str, folder: Path, cap: int, cache: bool) -> LlmClient:
    settings = LlmSettings(base_url=url, default=MODEL, max_concurrency=cap, cache=cache)
    return LlmClient(settings, cache_dir=folder / "_llm_cache", gate_dir=folder / "_llm_gate")


def messages(tag: str, i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{tag} request number {i}: say something short"}]


def throughput(calls: int, latency: float, cap: int, folder: Path) -> None:
    process, endpoint = spawn_endpoint(latency)
    try:
        client = layer(endpoint.url, folder, cap, cache=True)
        client.complete("bench", messages("warm-up", 0))
        endpoint.reset()
        start = time.perf_counter()
        with ThreadPoolExecutor(cap * 2) as pool:
            list(pool.map(lambda i: client.complete("bench", messages("load", i)), range(calls)))
        wall = time.perf_counter() - start
        stats = endpoint.stats()
    finally:
        process.terminate()
        process.wait()
    ideal = calls * latency / cap
    print(
        f"throughput: {calls} calls, latency {latency}s, cap {cap}: wall {wall:.2f}s, "
        f"ideal {ideal:.2f}s, ratio {wall / ideal:.3f}, server peak in flight "
        f"{stats['peak_in_flight']}, requests {stats['requests']}"
    )


def per_call(fn, n: int) -> float:
    samples = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def overhead(n: int, folder: Path) -> None:
    process, endpoint = spawn_endpoint(0.0)
    try:
        bare = openai.OpenAI(
            base_url=endpoint.url,
            api_key="bench",
            max_retries=0,
            timeout=30,
            default_headers={STAGE_HEADER: "bench"},  # as the layer names its stage
        )
        plain = layer(endpoint.url, folder / "plain", 8, cache=False)
        cached = layer(endpoint.url, folder / "cached", 8, cache=True)
        for warm in range(20):
            bare.chat.completions.create(model="bench", messages=messages("warm", warm))
            plain.complete("bench", messages("warm", warm))
        rows = {
            "bare openai": per_call(
                lambda i: bare.chat.completions.create(model="bench", messages=messages("b", i)),
                n,
            ),
            "layer, no cache": per_call(lambda i: plain.complete("bench", messages("p", i)), n),
            "layer, cache miss + write": per_call(
                lambda i: cached.complete("bench", messages("c", i)), n
            ),
            "layer, cache hit": per_call(lambda i: cached.complete("bench", messages("c", i)), n),
        }
    finally:
        process.terminate()
        process.wait()
    base = rows["bare openai"]
    print(f"overhead at latency 0 (median of {n} sequential calls):")
    print(f"  {'path':28} {'ms/call':>8} {'x bare':>7} {'+ms':>7}")
    for name, seconds in rows.items():
        print(
            f"  {name:28} {seconds * 1e3:8.2f} {seconds / base:7.2f} {(seconds - base) * 1e3:7.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--cap", type=int, default=32)
    parser.add_argument("--overhead-calls", type=int, default=300)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="envmill-bench-llm-"))
    try:
        throughput(args.calls, args.latency, args.cap, folder / "throughput")
        overhead(args.overhead_calls, folder / "overhead")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
