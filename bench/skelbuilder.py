"""SkelBuilder end to end against the local endpoint: topics → checked environments.

Usage: .venv/bin/python -m bench.skelbuilder [--topics 20] [--latency 0] [--cap 32]
       [--item-threads 16] [--slips]
The endpoint runs in its own process; the topics are what its ``topics`` responder makes of
corpus-like requests. Every topic goes through ``LlmBackend`` and the shared pipeline
(``synthesize_batch``, one batch, topics on ``item_threads`` threads). Prints: accepted, failed
by stage, LLM calls per accepted environment (target ≤ 50; EnvScaler spends about 84), calls per
stage, probes and verdicts, wall time, and at a latency above 0 the ratio of wall time to the
bound the cap sets (calls × latency ÷ cap).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from envmill.schemas.llm import LlmSettings, StageModel
from envmill.schemas.settings import EnvmillSettings
from envmill.schemas.skeleton import SkeletonSettings
from envmill.tasks.backends.llm.backend import LlmBackend
from envmill.tasks.llm import LlmClient
from envmill.tasks.offline_llm import Endpoint
from envmill.tasks.offline_llm.topics import REQUEST_OBJECTS, REQUEST_VERBS, verdict_for
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from envmill.tasks.sandbox import Sandbox

MODEL = StageModel(model="bench", timeout_seconds=60, deadline_seconds=300)
# --slips: the first topics each get one slip (persistent ones cannot be repaired)
SLIP_MIX = [
    {"kind": "syntax"},
    {"kind": "uuid_ids"},
    {"kind": "hostile"},
    {"kind": "state_set"},
    {"kind": "bad_state"},
    {"kind": "few_operations"},
    {"kind": "judge_fails_all"},
    {"kind": "syntax", "persistent": True},
    {"kind": "hostile", "persistent": True},
]


def make_topics(count: int) -> list[str]:
    """``count`` distinct topics, spread over the catalog's domains (objects vary fastest)."""
    tasks = [f"{verb} {thing}" for verb in REQUEST_VERBS for thing in REQUEST_OBJECTS]
    tasks += [f"{task} for my manager" for task in tasks]
    return list(dict.fromkeys(verdict_for(task)["topic"] for task in tasks))[:count]


def spawn_endpoint(latency: float) -> tuple[subprocess.Popen, Endpoint]:
    command = [sys.executable, "-m", "envmill.tasks.offline_llm", "--latency", str(latency)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    return process, Endpoint(process.stdout.readline().strip())


def run(count: int, latency: float, cap: int, item_threads: int, slips: bool, folder: Path) -> None:
    topics = make_topics(count)
    process, endpoint = spawn_endpoint(latency)
    try:
        if slips:
            mix = [{**slip, "topic": topic} for slip, topic in zip(SLIP_MIX, topics, strict=False)]
            endpoint.configure(slips=mix)
        llm = LlmSettings(base_url=endpoint.url, default=MODEL, max_concurrency=cap)
        client = LlmClient(llm, cache_dir=folder / "_llm_cache", gate_dir=folder / "_llm_gate")
        backend = LlmBackend(client, topics, SkeletonSettings(item_threads=item_threads))
        settings = EnvmillSettings(envs=len(topics), batch_size=len(topics))
        (batch,) = plan_batches(settings, backend)
        with Sandbox(settings.sandbox) as sandbox:
            start = time.perf_counter()
            output = synthesize_batch(batch, settings, sandbox, backend)
            wall = time.perf_counter() - start
        stats = endpoint.stats()
    finally:
        process.terminate()
        process.wait()
    report(backend, output, wall, stats, latency, cap, len(topics))


def report(backend, output, wall, stats, latency, cap, topics) -> None:
    generation = [f for f in output.failures if f.stage not in ("scenarios", "certify")]
    failed = Counter(f.stage for f in generation)
    per_topic = Counter(c.item for c in output.llm_calls if c.stage.startswith("skeleton"))
    calls = [n for item, n in per_topic.items() if item not in {f.item for f in generation}]
    probes = output.env_probes
    tools = [len(env.tools) for env in output.environments]
    print(f"topics {topics}: accepted {len(output.environments)}, failed by stage {dict(failed)}")
    if calls:
        print(
            f"LLM calls per accepted environment: mean {statistics.mean(calls):.1f}, "
            f"max {max(calls)} (target <= 50; EnvScaler ~84); tools per environment: "
            f"mean {statistics.mean(tools):.1f}, min {min(tools)}"
        )
    print(f"calls by stage: {dict(Counter(r.stage for r in output.llm_calls))}")
    print(f"probes {len(probes)}: {dict(Counter(p.verdict for p in probes))}")
    print(success_line(output))
    print(
        f"wall {wall:.2f}s at latency {latency}s, cap {cap}: {stats['requests']} requests, "
        f"peak in flight {stats['peak_in_flight']}; work seconds by stage "
        f"{ {stage: round(seconds, 1) for stage, seconds in output.seconds.items()} }"
    )
    if latency > 0:
        bound = stats["requests"] * latency / cap
        print(f"cap bound {bound:.2f}s: wall / bound {wall / bound:.3f}")


def success_line(output) -> str:
    """How far the accepted environments' state-changing tools were tested on their success path:
    successful positive probes per such tool, and the share of them that never succeeded."""
    accepted = {env.env_id for env in output.environments}
    changing = {
        (env.env_id, name)
        for env in output.environments
        for name, kind in env.tool_kinds.items()
        if kind == "state_change"
    }
    wins = Counter(
        (p.env_id, p.tool)
        for p in output.env_probes
        if p.env_id in accepted and p.kind == "positive" and p.result.get("success") is True
    )
    if not changing:
        return "state-changing tools: none"
    never = sum(1 for key in changing if not wins[key])
    per_tool = sum(wins[key] for key in changing) / len(changing)
    return (
        f"state-changing tools {len(changing)}: successful probes per tool {per_tool:.2f}, "
        f"never succeeded {never} ({never / len(changing):.0%})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--cap", type=int, default=32)
    parser.add_argument("--item-threads", type=int, default=16)
    parser.add_argument("--slips", action="store_true", help="a slip for each of the first 9")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        run(args.topics, args.latency, args.cap, args.item_threads, args.slips, Path(folder))


if __name__ == "__main__":
    main()
