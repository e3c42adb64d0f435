"""The corpus section and the worked example: what a paper's corpus section shows.

The share of scenario kinds and modes per backend, the size of tasks, reference solutions and
trajectories, the reward each policy earned, one row per domain, and one certified reference
trajectory printed message by message. Sizes are counted here from the rows the named queries
return, with the diversity section's tokens, so the two sections count words alike.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from envmill.warehouse.report.diversity import tokenize
from envmill.warehouse.report.model import Reader, Section, Table, Turn
from envmill.warehouse.report.svg import PALETTE, BarChart, BarRow, histogram_rows

TOKENS_PER_WORD = 1.3  # an estimate: no tokenizer is assumed, and a reference calls no model
REWARD_BINS = ("0", "(0, 0.5)", "[0.5, 1)", "1")
SYSTEM_CHARS = 1200  # of the worked example's system message
RESULT_CHARS = 300  # of each tool result in the worked example
SIZE_COLUMNS = ("measure", "group", "n", "mean", "median", "p90", "min", "max")
REWARD_COLUMNS = ("policy", "trajectories", "mean reward", *REWARD_BINS)
DOMAIN_COLUMNS = ("domain", "environments", "tools", "scenarios", "certified", "trajectories")


def count_words(text: str) -> int:
    """Tokens that are not punctuation (the diversity section's words)."""
    return sum(1 for t in tokenize(text) if t[0].isalnum() or t[0] == "_")


@dataclass(frozen=True)
class Spread:
    """A distribution in six numbers; p90 is the nearest-rank 90th percentile."""

    n: int
    mean: float
    median: float
    p90: float
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        ordered = sorted(values)
        p90 = ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]
        return cls(len(ordered), round(statistics.fmean(ordered), 2),
                   statistics.median(ordered), p90, ordered[0], ordered[-1])  # fmt: skip


def trajectory_sizes(messages: list[dict[str, Any]]) -> dict[str, float]:
    """Turns (assistant messages), user messages, tool calls and estimated tokens of one
    trajectory; tokens are the words of every message's text, tool names and arguments × 1.3."""
    calls = [c.get("function") or {} for m in messages for c in m.get("tool_calls") or []]
    texts = [m.get("content") or "" for m in messages]
    texts += [f"{c.get('name', '')} {c.get('arguments', '')}" for c in calls]
    words = sum(count_words(t if isinstance(t, str) else json.dumps(t)) for t in texts)
    return {
        "turns": sum(m.get("role") == "assistant" for m in messages),
        "user messages": sum(m.get("role") == "user" for m in messages),
        "tool calls": len(calls),
        "tokens (≈ words × 1.3)": round(words * TOKENS_PER_WORD),
    }


def reward_bin(reward: float) -> str:
    if reward <= 0:
        return REWARD_BINS[0]
    if reward >= 1:
        return REWARD_BINS[3]
    return REWARD_BINS[1] if reward < 0.5 else REWARD_BINS[2]


def corpus_section(reader: Reader) -> Section:
    kinds = reader.rows("scenario_kinds")
    scenarios = reader.rows("scenario_sizes")
    trajectories = reader.rows("trajectory_messages")
    section = Section(
        key="corpus",
        title="The corpus",
        text="What the corpus holds, as a paper's corpus section shows it. Scenario figures count "
        "certified scenarios; a kind is the generator's label for what a scenario asks (NULL "
        "reads '(none)'); shares are within a backend. Words are the diversity section's words; "
        "tokens are an estimate, words × 1.3, not a tokenizer's count. A turn is one assistant "
        "message. Steps are the calls of the reference solution; tools are its distinct tools.",
    )
    if not kinds and not trajectories:
        section.note = "No certified scenario and no trajectory in the runs covered."
    section.charts = [c for c in (_kind_chart(kinds), _steps_chart(scenarios)) if c.rows]
    section.charts += [c for c in (_reward_chart(trajectories),) if c.rows]
    section.tables = [
        Table.of(_shares(kinds, "kind"), ("backend", "kind", "scenarios", "share"), "Kinds"),
        Table.of(_shares(kinds, "mode"), ("backend", "mode", "scenarios", "share"), "Modes"),
        Table.of(_size_rows(scenarios, trajectories), SIZE_COLUMNS, "Sizes"),
        Table.of(_reward_rows(trajectories), REWARD_COLUMNS, "Reward by policy"),
        Table.of(reader.rows("domain_table"), DOMAIN_COLUMNS, "Per domain"),
    ]
    return section


def _shares(kinds: list[dict[str, Any]], column: str) -> list[dict[str, Any]]:
    """Certified scenarios per (backend, value of ``column``) and their share of the backend's."""
    counts: Counter[tuple[str, str]] = Counter()
    for r in kinds:
        counts[(r["backend"], r[column])] += r["scenarios"]
    totals = Counter[str]()
    for (backend, _), n in counts.items():
        totals[backend] += n
    return [
        {"backend": b, column: v, "scenarios": n, "share": f"{n / totals[b]:.1%}"}
        for (b, v), n in sorted(counts.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1]))
    ]


def _size_rows(scenarios: list[dict], trajectories: list[dict]) -> list[dict[str, Any]]:
    """One row per measure and group: scenarios grouped by backend, trajectories by policy."""
    samples: dict[tuple[str, str], list[float]] = defaultdict(list)
    for s in scenarios:
        sizes = {"task words": count_words(s["task"]), "reference steps": s["steps"],
                 "reference tools": s["tools"]}  # fmt: skip
        for measure, value in sizes.items():
            samples[(measure, f"backend {s['backend']}")].append(value)
    for t in trajectories:
        for measure, value in trajectory_sizes(json.loads(t["messages_json"])).items():
            samples[(f"{measure} per trajectory", f"policy {t['policy']}")].append(value)
    rows = []
    for (measure, group), values in samples.items():
        s = Spread.of(values)
        rows.append({"measure": measure, "group": group, "n": s.n, "mean": s.mean,
                     "median": s.median, "p90": s.p90, "min": s.low, "max": s.high})  # fmt: skip
    return rows


def _reward_rows(trajectories: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_policy: dict[str, list[float]] = defaultdict(list)
    for t in trajectories:
        by_policy[t["policy"]].append(t["reward"])
    rows = []
    for policy, rewards in sorted(by_policy.items()):
        bins = Counter(reward_bin(r) for r in rewards)
        row = {"policy": policy, "trajectories": len(rewards),
               "mean reward": round(statistics.fmean(rewards), 4)}  # fmt: skip
        rows.append(row | {b: f"{bins[b] / len(rewards):.1%}" for b in REWARD_BINS})
    return rows


def _kind_chart(kinds: list[dict[str, Any]]) -> BarChart:
    backends = tuple(sorted({r["backend"] for r in kinds}))
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for r in kinds:
        counts[r["kind"]][r["backend"]] += r["scenarios"]
    order = sorted(counts, key=lambda k: (-sum(counts[k].values()), k))
    rows = tuple(BarRow(k, tuple(float(counts[k][b]) for b in backends)) for k in order)
    return BarChart("Certified scenarios by kind", backends, rows, axis="kind, then backend")


def _steps_chart(scenarios: list[dict[str, Any]]) -> BarChart:
    counts: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for s in scenarios:
        counts[s["backend"]][s["steps"]] += 1
    series = tuple(sorted(counts))
    return BarChart(
        "Certified scenarios by steps of the reference solution",
        series,
        histogram_rows(counts, series),
        stacked=False,
        colors=PALETTE[2:],
        axis="tool calls in the reference solution",
    )


def _reward_chart(trajectories: list[dict[str, Any]]) -> BarChart:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for t in trajectories:
        counts[t["policy"]][reward_bin(t["reward"])] += 1
    policies = tuple(sorted(counts))
    rows = tuple(BarRow(b, tuple(float(counts[p][b]) for p in policies)) for b in REWARD_BINS)
    return BarChart("Trajectories by reward", policies, rows, stacked=False, axis="reward")


def example_section(reader: Reader) -> Section:
    section = Section(
        key="example",
        title="A worked example",
        text="One certified scenario's reference trajectory as a model is trained on it: a "
        "conversational one when there is one, with 2 to 6 tool calls when there is one, then "
        f"the smallest trajectory id. The system message is cut at {SYSTEM_CHARS:,} characters "
        f"and each tool result at {RESULT_CHARS:,}.",
    )
    rows = reader.rows("example_trajectory")
    if not rows:
        section.note = "No certified scenario has a reference trajectory in the runs covered."
        return section
    row = rows[0]
    section.text += f" Domain {row['domain']}, {row['mode']}, kind {row['kind']}."
    section.transcript = transcript(json.loads(row["messages_json"]))
    return section


def transcript(messages: list[dict[str, Any]]) -> list[Turn]:
    """Messages as the page prints them: tool calls as ``name(argument=value, ...)``, the system
    message and tool results cut; a note an assistant wrote beside its calls comes first."""
    turns = []
    for m in messages:
        role, content = m.get("role", "?"), m.get("content") or ""
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        if role == "system":
            turns.append(Turn("system", _cut(content, SYSTEM_CHARS)))
        elif role == "tool":
            turns.append(Turn("tool result", _cut(content, RESULT_CHARS)))
        elif m.get("tool_calls"):
            if content:
                turns.append(Turn("assistant", content))
            turns += [Turn("assistant · tool call", _call(c)) for c in m["tool_calls"]]
        else:
            turns.append(Turn(role, content))
    return turns


def _call(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except ValueError:
        return f"{function.get('name', '?')}({function.get('arguments', '')})"
    if not isinstance(arguments, dict):
        return f"{function.get('name', '?')}({json.dumps(arguments, ensure_ascii=False)})"
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    return f"{function.get('name', '?')}({shown})"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + f"… ({len(text):,} characters)"
