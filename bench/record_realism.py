"""Sweep a finished run for records that contradict their domain (raters dock them as unreal).

Usage: ``python -m bench.record_realism /tmp/run`` (a run's ``--out`` folder). Counts, over the
initial state of every scenario and the calls of every reference solution:
- ``after``: a time filled ``after`` another (``filed_at`` after ``incident_on``) that is earlier;
- ``declared``: a declared invariant broken (a child time against its parent's, a status against
  now), as ``state/invariants.py`` reads them;
- ``sequence``: sibling records of one parent whose enum event is out of the order of the enum
  (a shipment ``delivered`` before it was ``booked``);
- ``month``: a ``starts_on``/``ends_on`` pair of a monthly record that is not whole months;
- ``bound``: a number argument of an update past a record field a ``compare`` rule bounds it by
  (approve 4506.10 on a 637.57 claim), or a time argument before the time it replaces;
- ``far``: a number argument assigned to a field, more than twice or less than half its value;
- ``speed``: an ``end_trip`` distance over 130 km per hour since the trip started;
- ``namesake``: two records sharing a label and every other number field.
Refused calls are not in the reference; their rule condition is counted as ``refused_far`` when
the given number is over twice the bound it broke.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.spec.domain import DomainSpec, EntitySpec
from envmill.tasks.backends.procedural.state.invariants import check_invariants

TIMES = ("date", "datetime")
LIMIT = re.compile(r"\((-?\d+(?:\.\d+)?)\) must be (at most|less than) .*?(-?\d+(?:\.\d+)?)\)?$")


def moment(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def day_or_time(a: datetime, b: datetime, kinds: tuple[str, str]) -> tuple[Any, Any]:
    return (a.date(), b.date()) if "date" in kinds else (a, b)


def state_problems(spec: DomainSpec, state: dict[str, Any]) -> Counter:
    found: Counter = Counter()
    for entity in spec.entities.values():
        rows = state.get(entity.plural) or {}
        for row in rows.values():
            found += record_problems(spec, state, entity, row)
        found += sequence_problems(spec, state, entity, rows)
        found += namesake_problems(entity, rows)
    found["declared"] += len(check_invariants(spec, state))
    return found


def record_problems(spec: DomainSpec, state: dict, entity: EntitySpec, row: dict) -> Counter:
    found: Counter = Counter()
    for name, field in entity.fields.items():
        if field.after and field.type in TIMES:
            mine, base = moment(row.get(name)), moment(row.get(field.after))
            kinds = (field.type, entity.fields[field.after].type)
            if mine and base and (lambda a, b: a < b)(*day_or_time(mine, base, kinds)):
                found["after"] += 1
    if "starts_on" in row and "ends_on" in row and "monthly_fee" in row:
        start, end = moment(row["starts_on"]), moment(row["ends_on"])
        month_end = end is not None and (end + timedelta(days=1)).day == 1
        clamped = start is not None and month_end and start.day > end.day
        if start and end and end.day != start.day and not clamped and row.get("status") != "ended":
            found["month"] += 1
    return found


def sequence_problems(spec, state, entity, rows) -> Counter:
    """Siblings of one parent whose enum event runs against its time order."""
    found: Counter = Counter()
    enums = [n for n, f in entity.fields.items() if f.type == "enum"]
    times = [n for n, f in entity.fields.items() if f.type in TIMES]
    refs = [n for n, f in entity.fields.items() if f.type == "ref"]
    if entity.status is not None or len(enums) != 1 or len(times) != 1 or not refs:
        return found
    order = entity.fields[enums[0]].values
    parent = spec.entities.get(entity.fields[refs[0]].entity or "")
    if parent is None or parent.status is None or len(set(order) & set(parent.machine.states)) < 2:
        return found  # not a record of the parent's statuses (a deposit, a withdrawal)
    groups: dict[Any, list] = {}
    for row in rows.values():
        groups.setdefault(row.get(refs[0]), []).append(row)
    for group in groups.values():
        group.sort(key=lambda r: str(r.get(times[0])))
        ranks = [order.index(r[enums[0]]) for r in group if r.get(enums[0]) in order]
        pairs = zip(ranks, ranks[1:], strict=False)
        found[f"sequence:{entity.name}"] += sum(1 for a, b in pairs if b < a)
    return found


def namesake_problems(entity: EntitySpec, rows: dict) -> Counter:
    found: Counter = Counter()
    numbers = [n for n, f in entity.fields.items() if f.type in ("int", "float")]
    if not entity.label or len(numbers) < 2:
        return found
    by_label: dict[Any, list] = {}
    for row in rows.values():
        by_label.setdefault(row.get(entity.label), []).append(row)
    for group in by_label.values():
        if len(group) > 1 and all(len({str(r.get(n)) for r in group}) == 1 for n in numbers):
            found["namesake"] += 1
    return found


def call_problems(spec: DomainSpec, state: dict, tool: str, args: dict) -> Counter:
    found: Counter = Counter()
    op = next((o for o in spec.operations() if tool in o.names), None)
    if op is None or op.kind != "update":
        return found
    entity = spec.entities[op.entity]
    target = (state.get(entity.plural) or {}).get(args.get(entity.id_field)) or {}
    for pre in op.preconditions:
        if pre.kind == "compare" and pre.left in args and isinstance(pre.right, str):
            bound = path_value(spec, state, entity, target, pre.right)
            given = args[pre.left]
            if not _ordered(given, pre.op, bound):
                found["bound"] += 1
    for effect in op.effects:
        if effect.kind != "assign" or not isinstance(effect.value, str):
            continue
        field = effect.path.split(".", 1)[1] if effect.path.startswith("target.") else None
        given, old = args.get(effect.value), target.get(field) if field else None
        if isinstance(given, int | float) and isinstance(old, int | float) and old > 0:
            found["far"] += int(not 0.5 <= given / old <= 2)
        earlier = moment(given) and moment(old) and moment(given) < moment(old)
        if earlier and field and "." not in field:
            found["bound"] += int(op.name.startswith(("delay", "postpone", "extend")))
    if "distance_km" in args and target.get("started_at"):
        driven = moment(state["current_time"]) - moment(target["started_at"])
        hours = driven.total_seconds() / 3600
        found["speed"] += int(args["distance_km"] > 130 * max(hours, 0.25))
    return found


def _ordered(given: Any, op: str, bound: Any) -> bool:
    if not isinstance(given, int | float) or not isinstance(bound, int | float):
        return True
    return {"<": given < bound, "<=": given <= bound, ">": given > bound, ">=": given >= bound}.get(
        op, True
    )


def path_value(spec, state, entity, record, path):
    parts = path.split(".")
    if parts[0] != "target":
        return None
    for hop in parts[1:-1]:
        target = spec.entities[entity.fields[hop].entity]
        record = (state.get(target.plural) or {}).get(record.get(hop)) or {}
        entity = target
    return record.get(parts[-1])


def rows_of(out: str) -> list[dict]:
    query = (
        "select e.domain, s.kind, s.initial_state_json, s.reference_solution_json, s.refusal_json,"
        " s.status from scenarios s join environments e using (env_id)"
    )
    cmd = [
        str(Path(sys.executable).with_name("envmill")),
        "sql",
        "--out",
        out,
        "--format",
        "json",
        query,
    ]
    return json.loads(subprocess.run(cmd, capture_output=True, check=True, text=True).stdout)


def main(out: str) -> None:
    totals: Counter = Counter()
    by_domain: dict[str, Counter] = {}
    specs: dict[str, DomainSpec] = {}
    seen_states: set[str] = set()
    for row in rows_of(out):
        spec = specs.setdefault(row["domain"], load_domain(row["domain"]))
        state = json.loads(row["initial_state_json"])
        found: Counter = Counter()
        if row["initial_state_json"] not in seen_states:
            seen_states.add(row["initial_state_json"])
            found += state_problems(spec, state)
        for step in json.loads(row["reference_solution_json"] or "[]"):
            found += call_problems(spec, state, step["tool"], step.get("arguments") or {})
        for rule in json.loads(row["refusal_json"] or "{}").get("rules", []):
            hit = LIMIT.search(rule.get("condition", ""))
            if hit and float(hit[3]) > 0 and float(hit[1]) > 2 * float(hit[3]):
                found["refused_far"] += 1
        found[f"status:{row['status']}"] += 1
        totals += found
        by_domain.setdefault(row["domain"], Counter()).update(found)
    print(json.dumps(dict(sorted(totals.items())), indent=1))
    for domain, counts in sorted(by_domain.items()):
        bad = {k: v for k, v in counts.items() if not k.startswith("status:")}
        if bad:
            print(domain, dict(sorted(bad.items())))


if __name__ == "__main__":
    main(sys.argv[1])
