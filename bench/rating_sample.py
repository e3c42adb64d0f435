"""Draw the stratified sample an independent rater scores (issue 29's protocol).

Usage: ``python -m bench.rating_sample /tmp/run /tmp/sample [--seed 29] [--n 30]``. Picks ``n``
certified scenarios of a finished run, round-robin over the strata kind x mode (a kind's
``+role`` suffix dropped) in an order a fixed seed draws, and writes one readable file per item
(the system message, the task or the simulated user's instruction with their facts, and the
reference trajectory as the agent and the user saw it) plus ``INDEX.tsv`` with the ids, so a
rating names exactly what it rated and can be drawn again. Each rater (not the code's author)
gets ``bench/rating_prompt.md`` with SAMPLE and OUTFILE filled in; an item's score is the mean of
its realism, clarity and solvability.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

QUERY = """
select s.scenario_id, s.env_id, s.kind, s.mode, s.task, s.user_facts_json, t.messages_json
from scenarios s join trajectories t on t.scenario_id = s.scenario_id
where s.status = 'certified' and t.policy = 'reference'
order by s.scenario_id
"""
RESULT_CHARS = 600  # a tool result beyond this is cut: the rater reads the call, not the rows


def rows(out: Path) -> list[dict[str, Any]]:
    envmill = Path(sys.executable).with_name("envmill")
    done = subprocess.run(
        [str(envmill), "sql", "--out", str(out), "--format", "json", QUERY],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def stratified(items: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """Round-robin over kind x mode, each stratum shuffled, so every stratum a run has is in
    the sample before any has two."""
    rng = random.Random(seed)
    strata: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for item in items:
        strata[(str(item["kind"]).split("+")[0], item["mode"])].append(item)
    for stratum in strata.values():
        rng.shuffle(stratum)
    order = sorted(strata)
    rng.shuffle(order)
    picked: list[dict[str, Any]] = []
    while len(picked) < n and any(strata.values()):
        for key in order:
            if strata[key] and len(picked) < n:
                picked.append(strata[key].pop())
    return picked


def rendered(item: dict[str, Any]) -> str:
    messages = json.loads(item["messages_json"])
    lines = [f"kind: {item['kind']}    mode: {item['mode']}", ""]
    if item["mode"] == "conversational":
        lines += ["## The simulated user's instruction", item["task"], ""]
        facts = json.loads(item["user_facts_json"] or "{}")
        if facts:
            lines += ["What the user knows and says when asked:", json.dumps(facts, indent=1), ""]
    else:
        lines += ["## The task", item["task"], ""]
    lines += ["## The reference trajectory", ""]
    for message in messages:
        lines += [_turn(message), ""]
    return "\n".join(lines)


def _turn(message: dict[str, Any]) -> str:
    role, text = message["role"], message.get("content") or ""
    if role == "tool":
        cut = text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS] + " …"
        return f"TOOL RESULT: {cut}"
    calls = [
        f"  -> {c['function']['name']}({c['function']['arguments']})"
        for c in message.get("tool_calls") or []
    ]
    return "\n".join([f"{role.upper()}: {text}".rstrip(), *calls])


def main(argv: list[str]) -> None:
    out, dest = Path(argv[0]), Path(argv[1])
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 29
    n = int(argv[argv.index("--n") + 1]) if "--n" in argv else 30
    dest.mkdir(parents=True, exist_ok=False)
    index = ["item\tscenario_id\tkind\tmode"]
    for number, item in enumerate(stratified(rows(out), n, seed), 1):
        (dest / f"{number:02d}.md").write_text(rendered(item))
        index.append(f"{number:02d}\t{item['scenario_id']}\t{item['kind']}\t{item['mode']}")
    (dest / "INDEX.tsv").write_text("\n".join(index) + "\n")
    print(f"{len(index) - 1} items in {dest}")


if __name__ == "__main__":
    main(sys.argv[1:])
