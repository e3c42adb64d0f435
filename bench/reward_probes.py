"""Rewards by meaning, measured as a user meets them (issue 31): a fresh ``envmill run``, then
``envmill rollout`` twice against the local endpoint playing a scripted policy that replays each
certified reference and ends with a chosen reply: once in the bench's own right words (word
numbers, other date and money forms, another way to decline), once wrong (a rival value from the
state, a neighbouring figure, an invented rule). Not certification's probes: its own.

Usage: .venv/bin/python -m bench.reward_probes [--envs 24] [--scenarios 12] [--out DIR]
Prints, per scenario kind, how many judged scenarios keep full reward when right and lose it when
wrong (the issue asks >= 95 % each), and that the scenarios judged by their state alone keep the
reference's reward both times (the reply is not theirs to judge). tests/e2e/test_reward_probes.py
runs the same replies on a small corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import Any

from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.offline_llm import Endpoint, oracle_script, script_key
from envmill.tasks.rollout.plan import scenario_of
from envmill.warehouse.episodes import reference_conversations
from envmill.warehouse.views import query

SMALL = "zero one two three four five six seven eight nine ten eleven twelve".split()
ROLLED = "SELECT scenario_id, success FROM trajectories WHERE policy <> 'reference'"
CLI = [sys.executable, "-c", "from envmill.flows.cli import main; main()"]


def certified_specs(root: Path) -> dict[str, ScenarioSpec]:
    rows = query(root, "SELECT * FROM scenarios WHERE status = 'certified'").to_pylist()
    return {row["scenario_id"]: scenario_of(row) for row in rows}


def right_reply(spec: ScenarioSpec) -> str | None:
    """The reply a careful person writes, in words the reference did not use."""
    if spec.refusal is not None:
        rule = spec.refusal.rules[0]
        trigger = rule.triggers[0]
        said = _said(trigger) + _what(trigger, rule.condition.lower())
        return f"I'm not able to help with that one, I'm afraid - it's {said}."
    expected = spec.expected_answer
    if expected is None:
        return None
    value = expected.value
    if expected.type in ("count", "number") and float(value).is_integer() and 0 <= value < 13:
        shown = SMALL[int(value)]
    elif expected.type == "money":
        shown = f"{float(value):,.2f} dollars"
    elif expected.type == "list":
        shown = " and ".join(reversed([str(v).replace("_", " ") for v in value]))
    else:
        shown = _said(value)
    return f"I checked that for you: it comes to {shown}, going by the system."


def wrong_reply(spec: ScenarioSpec) -> str | None:
    """A reply that must not earn the reward: a rival or neighbouring value, an invented rule."""
    if spec.refusal is not None:
        return "Sorry, I can't do that: only a supervisor may approve such requests."
    expected = spec.expected_answer
    if expected is None:
        return None
    rivals = [r for r in expected.rivals if str(r) != str(expected.value)]
    if rivals:
        return f"It is {_said(rivals[0])}."
    if expected.type in ("count", "number", "money"):
        return f"It is {float(expected.value) + 7:,.2f}."
    if expected.type in ("date", "datetime"):
        day = date.fromisoformat(str(expected.value)[:10]).replace(year=1999)
        return f"It is {day:%d %B %Y}."
    return "I could not find that."


def _what(figure: Any, condition: str) -> str:
    """What a figure counts, as the rule says it: the word after it ("3 hours") or, where none
    follows, for the word before it ("8.33 for the patient"): a bare small figure names nothing."""
    if isinstance(figure, bool) or not isinstance(figure, int | float):
        return ""
    shown = f"{figure:g}"
    after = re.search(rf"(?<![\d.]){re.escape(shown)}(?:\.0+)?\s+([a-z]{{3,}})", condition)
    if after:
        return f" {after.group(1)}"
    before = re.findall(rf"([a-z]{{4,}})\W+(?:[\w-]*\d[\w-]*\W+)?\(?{re.escape(shown)}", condition)
    return f" for the {before[-1]}" if before else ""


def _said(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:,.2f}" if not float(value).is_integer() else f"{int(value):,}"
    text = str(value)
    if len(text) >= 16 and text[4] == "-" and text[10] in "T ":
        moment = datetime.fromisoformat(text[:16])
        return f"{moment:%B} {moment.day}, {moment.year} at {moment:%H:%M}"
    if len(text) >= 10 and text[4] == "-" and text[7] == "-":
        day = date.fromisoformat(text[:10])
        return f"{day:%B} {day.day}, {day.year}"
    return text.replace("_", " ")


@contextmanager
def local_endpoint() -> Iterator[Endpoint]:
    """The local endpoint in its own process, as a user starts it."""
    command = [sys.executable, "-m", "envmill.tasks.offline_llm", "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        url = (process.stdout.readline() if process.stdout else "").strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the local endpoint did not start: {url!r}")
        yield Endpoint(url)
    finally:
        process.terminate()
        process.wait(timeout=10)


def roll_out(
    corpus: Path, replies: dict[str, str | None], folder: Path, env: dict[str, str]
) -> dict[str, bool]:
    """``envmill rollout`` on a copy of ``corpus`` in ``folder``: each reference replayed, its
    last words replaced by ``replies[scenario_id]`` where there is one; each scenario's success."""
    root = Path(shutil.copytree(corpus, folder / "data", symlinks=True))
    ids = sorted(certified_specs(root))
    scripts, keys = {}, {}
    for scenario_id, messages in zip(ids, reference_conversations(root, ids), strict=True):
        opening = next(m["content"] for m in messages if m["role"] == "user")
        script = oracle_script(messages)
        if replies.get(scenario_id):
            script[-1] = {"content": replies[scenario_id]}
        keys[scenario_id] = script_key(opening)
        scripts[keys[scenario_id]] = script
    # two scenarios opening with the same words (the same request on two states) share a
    # script key, so the endpoint cannot tell them apart: neither is a probe
    shared = {k for k in keys.values() if list(keys.values()).count(k) > 1}
    with local_endpoint() as endpoint:
        endpoint.scripts(scripts)
        command = [*CLI, "rollout", "--out", str(root), "--workers", "1"]
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=folder,
            env={**env, "ENVMILL_LLM__BASE_URL": endpoint.url},
        )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"envmill rollout failed: {done.stderr.strip()[-2000:]}")
    rows = query(root, ROLLED).to_pylist()
    return {
        r["scenario_id"]: r["success"] for r in rows if keys.get(r["scenario_id"]) not in shared
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--envs", type=int, default=24)
    parser.add_argument("--scenarios", type=int, default=12)
    parser.add_argument("--out", type=Path, help="keep the run here [a temp folder]")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="envmill-reward-probes-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENVMILL_", "PREFECT_"))}
    corpus = args.out or work / "corpus"
    run = [*CLI, "run", "--out", str(corpus), "--envs", str(args.envs)]
    subprocess.run([*run, "--scenarios-per-env", str(args.scenarios)], check=True, env=env)
    specs = certified_specs(corpus)
    judged = {i: s for i, s in specs.items() if s.expected_answer or s.refusal}
    right = roll_out(corpus, {i: right_reply(s) for i, s in judged.items()}, work / "right", env)
    wrong = roll_out(corpus, {i: wrong_reply(s) for i, s in judged.items()}, work / "wrong", env)
    judged = {i: s for i, s in judged.items() if i in right}  # scripted apart from the rest
    kinds: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    for scenario_id, spec in judged.items():
        kind = (spec.kind or "?").split("+")[0]
        kinds[kind] += 1
        kept[kind] += bool(right.get(scenario_id))
        lost[kind] += right.get(scenario_id) is not None and wrong.get(scenario_id) is False
    print(f"{len(specs)} certified scenarios, {len(judged)} judged by their reply")
    for kind in [*sorted(kinds), "all"]:
        n = sum(kinds.values()) if kind == "all" else kinds[kind]
        keeps = sum(kept.values()) if kind == "all" else kept[kind]
        loses = sum(lost.values()) if kind == "all" else lost[kind]
        print(f"  {kind:12} {n:4d}  right kept {keeps / max(n, 1):6.1%}  "
              f"wrong lost {loses / max(n, 1):6.1%}")  # fmt: skip
    by_state = [i for i in specs if i not in judged and i in right]  # scripted apart, too
    changed = [i for i in by_state if not (right.get(i) and wrong.get(i))]
    print(f"judged by state alone: {len(by_state)}, reward changed by the reply: {len(changed)}")
    misses = {i: right_reply(judged[i]) for i in judged if not right.get(i)}
    wins = {i: wrong_reply(judged[i]) for i in judged if wrong.get(i)}
    print(json.dumps({"right but lost": misses, "wrong but kept": wins}, indent=1)[:4000])
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
