"""Write certified envmill scenarios as the JSON file the verifiers taskset reads (envmill_vf.py),
from envmill's own virtual environment (verifiers' cannot import envmill):

    .venv/bin/python examples/verifiers_mcp/export_scenarios.py --out DATA \
        [--domain D | --env ENV_ID] [--scenario ID ...] [--kind K] [--limit N] > scenarios.json

Each row: ids, domain, kind and task (``envmill sql --format json``), the system message and
opening user message an agent is told (what ``reset_scenario`` returns), the reference steps,
and two scripts for envmill's offline test model (``POST /_scripts``, keyed by the opening):
``reference`` replays the reference solution, ``wrong`` replays it without its last call.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def sql(out: str, query: str) -> list[dict]:
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "envmill"),
            "sql",
            "--out",
            out,
            "--format",
            "json",
            query,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout or "[]")


def quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def main(args: argparse.Namespace) -> None:
    from envmill.flows.cli.mcp import served_scenarios
    from envmill.tasks.core.opening import opening_message
    from envmill.tasks.core.system_message import system_prompt
    from envmill.tasks.offline_llm.rollout import solution_script
    from envmill.tasks.offline_llm.scripts import script_key

    where = ["s.status = 'certified'"]
    if args.domain:
        where.append(f"e.domain = {quoted(args.domain)}")
    if args.env:
        where.append(f"s.env_id = {quoted(args.env)}")
    if args.scenario:
        where.append(f"s.scenario_id IN ({', '.join(map(quoted, args.scenario))})")
    if args.kind:
        where.append(f"s.kind = {quoted(args.kind)}")
    rows = sql(
        args.out,
        "SELECT s.scenario_id, s.env_id, e.domain, s.kind, s.task, s.reference_solution_json"
        " FROM scenarios s JOIN environments e USING (env_id)"
        f" WHERE {' AND '.join(where)} ORDER BY s.env_id, s.scenario_id"
        + (f" LIMIT {int(args.limit)}" if args.limit else ""),
    )
    specs: dict[str, dict] = {}
    exported = []
    for row in rows:
        if row["env_id"] not in specs:
            specs[row["env_id"]] = served_scenarios(Path(args.out), row["env_id"], None)[0]
        spec = specs[row["env_id"]][row["scenario_id"]]
        scenario = spec.scenario
        if scenario.turns:
            continue  # multi-turn: the taskset plays one user message (see README)
        opening = opening_message(scenario)
        steps = json.loads(row["reference_solution_json"] or "[]")
        key = script_key(opening)
        exported.append(
            {
                "scenario_id": row["scenario_id"],
                "env_id": row["env_id"],
                "domain": row["domain"],
                "kind": row["kind"],
                "task": row["task"],
                "system": system_prompt(
                    spec.introduction, spec.business_rules, scenario.initial_state
                ),
                "opening": opening,
                "reference_steps": steps,
                "scripts": {
                    "reference": {key: solution_script([opening], steps, [0])},
                    "wrong": {key: solution_script([opening], steps[:-1], [0])},
                },
            }
        )
    json.dump(exported, sys.stdout, indent=1, ensure_ascii=False)
    print(f"{len(exported)} scenarios", file=sys.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="envmill-data")
    parser.add_argument("--domain")
    parser.add_argument("--env")
    parser.add_argument("--scenario", action="append")
    parser.add_argument("--kind")
    parser.add_argument("--limit", type=int)
    main(parser.parse_args())
