"""What a rollout reads: certified scenarios with the environment that serves each.

``--scenarios`` is a SQL condition over the ``scenario`` relation below (every ``scenarios``
column, plus the environment's ``domain``, ``topic`` and ``env_backend``). It runs through the
warehouse's read-only query path, so a condition can only ever read; and since text spliced into
SQL can reshape the query around it, what it returns is only a proposal: the ids are kept only
where a query of our own, with no user text in it, finds a certified scenario.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from envmill.warehouse.views import query

SCENARIO_RELATION = """
SELECT s.*, e.domain, e.topic, e.backend AS env_backend
FROM scenarios s JOIN environments e ON s.env_id = e.env_id
"""
DETAILS = """
SELECT scenario.*, e.class_name, e.source AS module_source, e.tools_json, e.introduction,
       e.business_rules_json,
       (SELECT list(name ORDER BY name) FROM tools t
        WHERE t.env_id = scenario.env_id AND t.kind = 'state_change') AS state_changing_tools
FROM ({relation}) AS scenario JOIN environments e ON scenario.env_id = e.env_id
WHERE scenario.scenario_id IN (SELECT unnest($ids)) AND {runnable}
ORDER BY scenario.scenario_id
"""
CERTIFIED = "SELECT DISTINCT scenario_id FROM scenarios AS scenario WHERE {runnable}"


def runnable(alias: str = "scenario") -> str:
    """What a rollout may run: a certified scenario, or with ``$ungrounded`` one whose only
    failed gate is ``grounded`` (every gate of its reward passed; its reference is no training
    data, which certification refused it for)."""
    return f"""({alias}.status = 'certified' OR ($ungrounded AND {alias}.status = 'rejected'
        AND {alias}.rejected_gate = 'grounded'
        AND len(list_filter(from_json({alias}.gates_json, '[{{"passed": "BOOLEAN"}}]'),
                            lambda g: NOT g.passed)) = 1))"""


PAGE = 256  # scenarios read per query: the plan never holds every state and source at once


def certified_scenario_ids(
    root: str | os.PathLike[str], condition: str = "", ungrounded: bool = False
) -> list[str]:
    """Ids of the certified scenarios that meet ``condition``, sorted; with ``ungrounded``,
    also those rejected by ``grounded`` alone (``RUNNABLE``).

    Raises:
        NotAQuery: the condition made the query something other than one read.
        duckdb.Error: the condition does not parse or names an unknown column.
    """
    sql = CERTIFIED.format(runnable=runnable())
    certified = set(query(root, sql, {"ungrounded": ungrounded}).column(0).to_pylist())
    if not condition.strip():
        return sorted(certified)
    # on lines of its own, so a trailing "-- comment" ends with the condition
    sql = f"SELECT scenario_id FROM ({SCENARIO_RELATION}) AS scenario WHERE (\n{condition}\n)"
    proposed = query(root, sql).column(0).to_pylist()
    return sorted(certified.intersection(map(str, proposed)))


def environment_scenarios(root: str | os.PathLike[str], env_id: str) -> dict[str, str] | None:
    """Every scenario of environment ``env_id`` with its status, by id; None when the folder
    holds no such environment."""
    known = query(
        root, "SELECT count(*) AS n FROM environments WHERE env_id = $env", {"env": env_id}
    )
    if not known.column(0)[0].as_py():
        return None
    sql = "SELECT scenario_id, status FROM scenarios WHERE env_id = $env ORDER BY scenario_id"
    rows = query(root, sql, {"env": env_id}).to_pylist()
    return {row["scenario_id"]: row["status"] for row in rows}


def scenario_environment(root: str | os.PathLike[str], scenario_id: str) -> str | None:
    """The environment of scenario ``scenario_id``; None when the folder holds no such scenario."""
    sql = "SELECT env_id FROM scenarios WHERE scenario_id = $id LIMIT 1"
    rows = query(root, sql, {"id": scenario_id}).to_pylist()
    return rows[0]["env_id"] if rows else None


def scenario_rows(
    root: str | os.PathLike[str], ids: list[str], ungrounded: bool = False
) -> Iterator[dict[str, Any]]:
    """Each scenario of ``ids`` with its environment's source, tools and state-changing tools,
    read a page at a time, in id order."""
    sql = DETAILS.format(relation=SCENARIO_RELATION, runnable=runnable())
    for start in range(0, len(ids), PAGE):
        page = ids[start : start + PAGE]
        yield from query(root, sql, {"ids": page, "ungrounded": ungrounded}).to_pylist()


def reference_conversations_of(
    root: str | os.PathLike[str], ids: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """The reference trajectory's messages of each scenario of ``ids`` that has one, by id."""
    sql = (
        "SELECT scenario_id, messages_json FROM trajectories WHERE policy = 'reference' "
        "AND scenario_id IN (SELECT unnest($ids)) ORDER BY scenario_id"
    )
    found: dict[str, list[dict[str, Any]]] = {}
    for start in range(0, len(ids), PAGE):
        for row in query(root, sql, {"ids": ids[start : start + PAGE]}).to_pylist():
            found[row["scenario_id"]] = json.loads(row["messages_json"])
    return found


def reference_conversations(
    root: str | os.PathLike[str], ids: list[str]
) -> Iterator[list[dict[str, Any]]]:
    """The reference trajectory's messages of each scenario of ``ids`` that has one."""
    sql = (
        "SELECT messages_json FROM trajectories WHERE policy = 'reference' "
        "AND scenario_id IN (SELECT unnest($ids)) ORDER BY scenario_id"
    )
    for start in range(0, len(ids), PAGE):
        for row in query(root, sql, {"ids": ids[start : start + PAGE]}).to_pylist():
            yield json.loads(row["messages_json"])


JUDGED = """
SELECT t.*, s.mode, s.task, s.user_facts_json, s.initial_state_json, s.reference_solution_json,
       s.checks_json, s.backend, s.reference_answer, s.expected_answer_json, s.refusal_json,
       s.kind, s.turns_json, s.withheld_tools_json, s.expected_results_json, s.source, s.split,
       e.tools_json,
       (SELECT list(name ORDER BY name) FROM tools x
        WHERE x.env_id = t.env_id AND x.kind = 'state_change') AS state_changing_tools
FROM trajectories t
JOIN scenarios s ON s.scenario_id = t.scenario_id
JOIN environments e ON e.env_id = t.env_id
WHERE ($run IS NULL OR t.run_id = $run) AND ($policy IS NULL OR t.policy = $policy)
  AND t.trajectory_id > $after
ORDER BY t.trajectory_id
LIMIT {page}
"""


def trajectories_to_judge(
    root: str | os.PathLike[str], run: str | None = None, policy: str | None = None
) -> Iterator[list[dict[str, Any]]]:
    """Pages of trajectories (of ``run``, of ``policy``) with their scenario and tools."""
    after = ""
    while True:
        params = {"run": run, "policy": policy, "after": after}
        page = query(root, JUDGED.format(page=PAGE), params).to_pylist()
        if not page:
            return
        yield page
        after = page[-1]["trajectory_id"]
