"""A synthetic warehouse for ``bench.warehouse``: rows shaped like a run's, written as batch
commits (a part per table under the batch key, then the record), without running the pipeline.

One batch commit stands for one environment of the llm backend (a batch each): its tools, its
scenarios, their trajectories, the batch's LLM calls, now and then a failure. Text is drawn from
a fixed pool of sentences with ids mixed in, so it compresses about as real text does.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from envmill.schemas.ids import canonical_json
from envmill.schemas.scenario import GATES
from envmill.schemas.tables import TABLES, TERMINATIONS
from envmill.warehouse.commits import Commit, describe_part, part_name, publish
from envmill.warehouse.store import ROW_GROUP_SIZE

DOMAINS = ["retail", "clinic", "library", "airline", "bank", "hotel", "school", "garage"]
POLICIES = ["reference", "model-a", "model-b", "model-c"]
STAGES = ["draft_environment", "write_tools", "write_scenarios", "judge_scenario", "phrase_task"]
START = datetime(2026, 11, 1, tzinfo=UTC)
_pool = random.Random(7)
_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "der", "pan", "gor", "lin", "ush"]
WORDS = ["".join(_pool.choices(_SYLLABLES, k=_pool.randint(1, 4))) for _ in range(3000)]
SENTENCES = [" ".join(_pool.choices(WORDS, k=_pool.randint(6, 18))) + "." for _ in range(4000)]


@dataclass(frozen=True)
class Shape:
    """Rows per batch commit."""

    scenarios: int = 4
    trajectories_per_scenario: int = 10
    tools: int = 8
    llm_calls: int = 10
    failure_every: int = 10  # a failure row in one batch of this many


def hex16(*parts: object) -> str:
    return hashlib.blake2b(repr(parts).encode(), digest_size=8).hexdigest()


def prose(rng: random.Random, sentences: int) -> str:
    return " ".join(rng.choices(SENTENCES, k=sentences))


def environment(rng: random.Random, i: int, at: datetime, shape: Shape) -> tuple[dict, list]:
    env_id = hex16("env", i)
    tools = [
        {
            "env_id": env_id,
            "name": f"{rng.choice(WORDS)}_{k}",
            "kind": "query" if k < shape.tools - 3 else "state_change",
            "description": prose(rng, 1),
            "parameters_json": canonical_json(
                {"type": "object", "properties": {w: {"type": "string"} for w in WORDS[k : k + 3]}}
            ),
            "n_params": 3,
        }
        for k in range(shape.tools)
    ]
    schemas = [{"name": t["name"], "description": t["description"]} for t in tools]
    row = {
        "env_id": env_id,
        "run_id": "run-bench",
        "domain": DOMAINS[i % len(DOMAINS)],
        "backend": "llm",
        "class_name": f"Env{i}",
        "topic": prose(rng, 1),
        "introduction": prose(rng, 3),
        "business_rules_json": canonical_json([prose(rng, 1) for _ in range(4)]),
        "source": "\n".join(f"    # {s}" for s in rng.choices(SENTENCES, k=60)),
        "tools_json": canonical_json(schemas),
        "state_schema_json": canonical_json({"type": "object", "about": prose(rng, 6)}),
        "n_tools": shape.tools,
        "n_query_tools": shape.tools - 3,
        "n_state_change_tools": 3,
        "checked_json": canonical_json({"policy": "ok"}),
        "seed": i,
        "created_at": at,
    }
    return row, tools


def scenario(rng: random.Random, env: dict, n: int, at: datetime) -> dict:
    rejected = rng.random() < 0.15
    gate = rng.choice(GATES) if rejected else None
    checks = [
        {"description": prose(rng, 1), "code": "return True"} for _ in range(rng.randint(2, 5))
    ]
    return {
        "scenario_id": hex16("scenario", env["env_id"], n),
        "env_id": env["env_id"],
        "run_id": "run-bench",
        "backend": "llm",
        "mode": rng.choice(["non_conversational", "conversational"]),
        "task": prose(rng, 2),
        "user_facts_json": canonical_json({"facts": [prose(rng, 1)]}),
        "initial_state_json": canonical_json({"records": [prose(rng, 1) for _ in range(8)]}),
        "reference_solution_json": canonical_json([{"tool": "t", "arguments": {"x": n}}] * 3),
        "checks_json": canonical_json(checks),
        "n_checks": len(checks),
        "n_steps": 3,
        "status": "rejected" if rejected else "certified",
        "rejected_gate": gate,
        "gates_json": canonical_json([{"gate": g, "passed": g != gate} for g in GATES]),
        "repairs": rng.choice([0, 0, 0, 1, 2]),
        "created_at": at,
    }


def trajectory(rng: random.Random, scenario_row: dict, n: int, at: datetime) -> dict:
    turns = rng.randint(2, 5)
    messages = [
        {"role": "system", "content": prose(rng, 8)},
        {"role": "user", "content": prose(rng, 2)},
    ]
    for k in range(turns):
        call = {"id": f"call_{k}", "function": {"name": rng.choice(WORDS), "arguments": "{}"}}
        messages += [
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{k}", "content": prose(rng, 3)},
        ]
    messages.append({"role": "assistant", "content": prose(rng, 1)})
    reward = rng.choice([0.0, 0.5, 1.0, 1.0])
    return {
        "trajectory_id": hex16("trajectory", scenario_row["scenario_id"], n),
        "scenario_id": scenario_row["scenario_id"],
        "env_id": scenario_row["env_id"],
        "run_id": "run-bench",
        "policy": POLICIES[n % len(POLICIES)],
        "messages_json": canonical_json(messages),
        "check_results_json": canonical_json([reward == 1.0] * 3),
        "reward": reward,
        "success": reward == 1.0,
        "steps": turns,
        "termination": rng.choice(TERMINATIONS),
        "usage_json": canonical_json({"prompt_tokens": rng.randint(500, 5000)}),
        "timings_json": canonical_json({"seconds": round(rng.random() * 9, 3)}),
        "created_at": at,
    }


def llm_call(rng: random.Random, i: int, n: int, at: datetime) -> dict:
    hit = rng.random() < 0.3
    return {
        "call_id": hex16("call", i, n),
        "run_id": "run-bench",
        "stage": rng.choice(STAGES),
        "item": hex16("item", i),
        "model": rng.choice(["model-a", "model-b"]),
        "prompt_hash": hex16("prompt", n % 7),
        "request_hash": hex16("request", i, n),
        "sample": 0,
        "prompt_tokens": rng.randint(200, 4000),
        "completion_tokens": rng.randint(50, 1500),
        "latency_seconds": 0.0 if hit else rng.random() * 20,
        "queue_seconds": rng.random(),
        "cache_hit": hit,
        "attempts": 1,
        "outcome": "ok",
        "error_class": "",
        "error": "",
        "cost_usd": 0.0 if hit else rng.random() / 100,
        "created_at": at,
    }


def failure(rng: random.Random, i: int, at: datetime) -> dict:
    return {
        "failure_id": hex16("failure", i),
        "run_id": "run-bench",
        "stage": rng.choice(STAGES),
        "item": hex16("item", i),
        "error_class": rng.choice(["Timeout", "InvalidReply", "SandboxKilled"]),
        "code": "",
        "message": prose(rng, 1),
        "details_json": canonical_json({"why": prose(rng, 1)}),
        "attempts": rng.randint(1, 3),
        "created_at": at,
    }


def batch_rows(i: int, shape: Shape) -> dict[str, list[dict]]:
    """The rows of batch commit ``i`` by table (always the same for the same ``i``)."""
    rng, at = random.Random(i), START + timedelta(seconds=i)
    env, tools = environment(rng, i, at, shape)
    scenarios = [scenario(rng, env, n, at) for n in range(shape.scenarios)]
    per = shape.trajectories_per_scenario
    trajectories = [trajectory(rng, s, n, at) for s in scenarios for n in range(per)]
    calls = [llm_call(rng, i, n, at) for n in range(shape.llm_calls)]
    rows = {
        "environments": [env],
        "tools": tools,
        "scenarios": scenarios,
        "trajectories": trajectories,
        "llm_calls": calls,
    }
    if i % shape.failure_every == 0:
        rows["failures"] = [failure(rng, i, at)]
    return rows


def write_batches(root: Path, first: int, last: int, shape: Shape) -> tuple[int, int]:
    """Write and commit batches ``first`` … ``last - 1``; returns (parts, bytes)."""
    parts = size = 0
    for i in range(first, last):
        key = hex16("batch", i)
        written = {}
        for table, rows in batch_rows(i, shape).items():
            path = root / table / part_name(key)
            arrow = pa.Table.from_pylist(rows, schema=TABLES[table].arrow_schema)
            pq.write_table(arrow, path, compression="zstd", row_group_size=ROW_GROUP_SIZE)
            written[table] = describe_part(path, arrow.num_rows)
            size += written[table].bytes
        publish(root, Commit(key=key, kind="batch", run_id="run-bench", parts=written, items=[key]))
        parts += len(written)
    return parts, size
