"""Near-duplicate detection at corpus scale: a synthetic 1,000-environment corpus, compared.

Usage: .venv/bin/python -m bench.dedupe [--envs 1000] [--scenarios 12] [--seed 0]

Environments are generated modules of one class: 3–6 entities from a word list, each with a
random subset of operations (get, list, search, create, status change with a rule, quantity
change with a limit, cancel). A quarter of them are rename-only copies of another (other words,
same structure) and must be flagged; the rest differ in structure. Each has ``--scenarios`` tasks
from sentence templates with names, ids and dates filled in, and an initial state of records.
Prints seconds per measure, the pairs found, and the time as a ratio of a baseline measured in
the same run (``json`` round trips of every state and ``ast.parse`` of every module: the least
any comparison must read).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import time
from collections import Counter

from envmill.schemas.dedupe import DedupeSettings, EnvironmentItem, StateItem, TaskItem
from envmill.tasks.dedupe import find_duplicates

NOUNS = (
    "order invoice ticket patient doctor booking flight room guest shipment parcel course "
    "student loan account card claim policy device sensor meter lease tenant vehicle driver "
    "route employee shift payslip asset ticket event venue member book loan recipe supplier"
).split()
FIELDS = "status amount quantity owner note priority due_at region level score label".split()
STATUSES = "open active pending closed shipped paid cancelled archived".split()
OPERATIONS = ("get", "list", "search", "create", "set_status", "adjust", "cancel")
VERBS = "cancel update move refund book close reopen check assign transfer ship renew".split()
FIRST = "Ann Bob Cara Dev Eli Fay Gus Hana Ivo Jun Kai Lea Max Nia Oto Pia".split()
LAST = "Lee Ray Diaz Kim Moss Hale Ng Park Shaw Vo Wu Yu Zane Ortiz Berg".split()


def environment_source(structure: random.Random, words: random.Random) -> tuple[str, list[dict]]:
    """A module whose structure comes from one generator and whose names from another."""
    nouns = words.sample(NOUNS, 6)
    lines = ["class System:", "    def __init__(self, state):", "        self.state = state", ""]
    tools = []
    for noun in nouns[: structure.randint(3, 6)]:
        fields = structure.sample(FIELDS, structure.randint(3, 6))
        for op in [o for o in OPERATIONS if structure.random() < 0.7]:
            lines += _operation(op, noun, fields, structure)
            tools.append(_tool(f"{op}_{noun}", [f"{noun}_id", *fields[: 1 + (op == "create")]]))
    return "\n".join(lines) + "\n", tools


def _operation(op: str, noun: str, fields: list[str], rng: random.Random) -> list[str]:
    limit = rng.randint(1, 500)
    body = {
        "get": [f"        return self.state['{noun}s'].get({noun}_id)"],
        "list": [f"        return [r for r in self.state['{noun}s'].values() if r['{fields[0]}']]"],
        "search": [
            f"        hits = [r for r in self.state['{noun}s'].values() if {noun}_id in str(r)]",
            "        return {'success': True, 'hits': hits}",
        ],
        "create": [
            f"        if len(self.state['{noun}s']) >= {limit}:",
            f"            return {{'success': False, 'error': 'too many {noun}s'}}",
            f"        self.state['{noun}s'][{noun}_id] = {{'{fields[0]}': {fields[0]}}}",
            "        return {'success': True}",
        ],
        "set_status": [
            f"        record = self.state['{noun}s'][{noun}_id]",
            f"        if record['status'] == '{rng.choice(STATUSES)}':",
            f"            return {{'success': False, 'error': 'the {noun} is closed'}}",
            f"        record['status'] = {fields[0]}",
            "        return {'success': True}",
        ],
        "adjust": [
            f"        record = self.state['{noun}s'][{noun}_id]",
            f"        record['{fields[1]}'] = min(record['{fields[1]}'] + {fields[0]}, {limit})",
            "        return {'success': True, 'value': record}",
        ],
        "cancel": [
            f"        record = self.state['{noun}s'].pop({noun}_id, None)",
            "        return {'success': record is not None}",
        ],
    }[op]
    args = f"{noun}_id" + (f", {fields[0]}" if op in ("create", "set_status", "adjust") else "")
    doc = f'        """{op.replace("_", " ").capitalize()} a {noun}."""'
    return [f"    def {op}_{noun}(self, {args}):", doc, *body, ""]


def _tool(name: str, params: list[str]) -> dict:
    properties = {p: {"type": "string"} for p in params}
    parameters = {"type": "object", "properties": properties, "required": params[:1]}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def task_text(rng: random.Random) -> str:
    person = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    noun, verb = rng.choice(NOUNS), rng.choice(VERBS)
    ident = f"{noun[:2].upper()}-{rng.randint(1, 9999):04}"
    day, amount = f"2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}", rng.randint(1, 90)
    templates = (
        f"Hi, please {verb} {noun} {ident} for {person} by {day}.",
        f"Could you {verb} the {noun} of {person}? It is {ident}, and then {rng.choice(VERBS)} it.",
        f"I am {person}. My {noun} {ident} needs a {rng.choice(FIELDS)} change to {amount}.",
        f"Hello! First {verb} {noun} {ident}; next {rng.choice(VERBS)} all {rng.choice(NOUNS)}s.",
    )
    return rng.choice(templates)


def state_of(rng: random.Random) -> dict:
    state: dict = {"current_time": f"2025-02-{rng.randint(10, 28)}T09:15:00"}
    for noun in rng.sample(NOUNS, 3):
        state[f"{noun}s"] = {
            f"{noun[:2].upper()}-{i:05}": {
                "status": rng.choice(STATUSES),
                "amount": round(rng.uniform(1, 500), 2),
                "owner": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
            }
            for i in range(1, rng.randint(4, 9))
        }
    return state


def corpus(envs: int, scenarios: int, seed: int):
    """Environments (a quarter rename-only copies), tasks and states, in corpus order."""
    rng = random.Random(seed)
    environments, tasks, states = [], [], []
    structures = []
    for i in range(envs):
        copy = i >= 4 and rng.random() < 0.25
        structure_seed = rng.choice(structures) if copy else rng.random()
        structures.append(structure_seed)
        source, tools = environment_source(
            random.Random(structure_seed), random.Random(rng.random())
        )
        order = f"{i:06}"
        environments.append(
            EnvironmentItem(item_id=f"{i:016x}", order=order, source=source, tools=tools)
        )
        for j in range(scenarios):
            sid = f"{i * scenarios + j:016x}"
            tasks.append(TaskItem(item_id=sid, order=f"{order}{j:03}", task=task_text(rng)))
            states.append(StateItem(item_id=sid, order=f"{order}{j:03}", state=state_of(rng)))
    return environments, tasks, states


def baseline(environments, states) -> float:
    clock = time.perf_counter()
    for env in environments:
        ast.parse(env.source)
    for item in states:
        json.loads(json.dumps(item.state))
    return time.perf_counter() - clock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=1000)
    parser.add_argument("--scenarios", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    environments, tasks, states = corpus(args.envs, args.scenarios, args.seed)
    base = baseline(environments, states)
    seconds: dict[str, float] = {}

    def progress(measure: str, items: int, took: float) -> None:
        seconds[measure] = took
        print(f"{measure:>9}: {items:6} items  {took:6.2f} s")

    clock = time.perf_counter()
    records = find_duplicates(DedupeSettings(), environments, tasks, states, progress)
    total = time.perf_counter() - clock
    found = Counter(r.measure for r in records)
    flagged = Counter((r.measure, r.item_id) for r in records)
    print(
        f"pairs: {dict(found)}; items flagged per measure: {dict(Counter(m for m, _ in flagged))}"
    )
    print(
        f"total {total:.2f} s for {args.envs} environments x {args.scenarios} scenarios; "
        f"baseline (parse every module, json round trip every state) {base:.2f} s; "
        f"ratio {total / base:.1f}x"
    )


if __name__ == "__main__":
    main()
