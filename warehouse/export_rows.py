"""What an export takes from the warehouse: trajectories joined with their scenario (mode, the
tools it withholds) and environment (domain, backend, tool schemas), filtered, in trajectory_id
order. A scenario's withheld tools are not among the tools its trajectories are exported with,
unless a later user message offers them.

A trajectory that any row of ``verdicts`` marks ``kept = false`` is left out unless asked for;
with no verdicts (the table has no parts) nothing is. A trajectory of a benchmark's scenario
(``source`` other than envmill's own) is held out unless its source is asked for: a test set
trained on by accident makes every later evaluation on it meaningless. A trajectory whose
environment or scenario row is missing cannot be exported (no tool schemas) and is only counted.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from envmill.schemas.benchmarks import SYNTHETIC_SOURCE
from envmill.schemas.export import ExportRecord, ExportSelection
from envmill.warehouse.views import query

SELECTION_SQL = """
WITH dropped AS (
    SELECT trajectory_id, list("filter" ORDER BY "filter") AS dropped_by
    FROM verdicts WHERE NOT kept GROUP BY trajectory_id
), joined AS (
    SELECT t.*, e.domain, e.backend, e.tools_json, s.mode, s.withheld_tools_json, s.turns_json,
           coalesce(s.source, $own_source) AS scenario_source,
           coalesce(d.dropped_by, []::VARCHAR[]) AS dropped_by,
           e.env_id IS NULL OR s.scenario_id IS NULL AS orphan
    FROM trajectories t
    LEFT JOIN environments e ON e.env_id = t.env_id
    LEFT JOIN scenarios s ON s.scenario_id = t.scenario_id
    LEFT JOIN dropped d ON d.trajectory_id = t.trajectory_id
), matched AS (
    SELECT *, scenario_source <> $own_source
              AND NOT list_contains($include_sources, scenario_source) AS held_out,
           NOT orphan AND ($include_dropped OR len(dropped_by) = 0) AND NOT held_out AS taken
    FROM joined
    WHERE ($min_reward IS NULL OR reward >= $min_reward)
      AND ($backend IS NULL OR backend = $backend)
      AND ($domain IS NULL OR domain = $domain)
      AND ($run IS NULL OR run_id = $run)
      AND ($policy IS NULL OR policy = $policy)
)
SELECT trajectory_id, scenario_id, env_id, run_id, policy, reward, success, termination, steps,
       domain, backend, mode, dropped_by, orphan, taken, held_out, scenario_source,
       CASE WHEN taken THEN messages_json END AS messages_json,
       CASE WHEN taken THEN tools_json END AS tools_json,
       CASE WHEN taken THEN withheld_tools_json END AS withheld_tools_json,
       CASE WHEN taken THEN turns_json END AS turns_json
FROM matched ORDER BY trajectory_id
"""


@dataclass
class Selected:
    """The trajectories an export takes, and what the selection left out and why."""

    records: list[ExportRecord]
    matched: int = 0  # matched the filters and have their environment and scenario
    dropped: int = 0  # of those, left out by verdicts (0 with include_dropped)
    dropped_by_filter: Counter[str] = field(default_factory=Counter)
    held_out: Counter[str] = field(default_factory=Counter)  # by benchmark source, not asked for
    orphans: int = 0  # matched, but their environment or scenario row is missing


def select_for_export(root: str | os.PathLike[str], selection: ExportSelection) -> Selected:
    """Read the trajectories ``selection`` takes, as typed records in trajectory_id order.

    Args:
        root: the data folder (only read).
        selection: the filters; ``include_dropped`` keeps what a verdict dropped.

    Returns:
        The records and the counts of what was left out (by verdicts, for missing rows).
    """
    params = {
        "min_reward": selection.min_reward,
        "backend": selection.backend,
        "domain": selection.domain,
        "run": selection.run_id,
        "policy": selection.policy,
        "include_dropped": selection.include_dropped,
        "include_sources": list(selection.include_sources),
        "own_source": SYNTHETIC_SOURCE,
    }
    selected = Selected(records=[])
    for row in query(root, SELECTION_SQL, params).to_pylist():
        if row["orphan"]:
            selected.orphans += 1
            continue
        selected.matched += 1
        if row["taken"]:
            selected.records.append(_record(row))
        elif row["held_out"]:
            selected.held_out[row["scenario_source"]] += 1
        else:
            selected.dropped += 1
            selected.dropped_by_filter.update(row["dropped_by"])
    return selected


def _record(row: dict[str, Any]) -> ExportRecord:
    left = ("orphan", "taken", "held_out", "scenario_source")
    fields = {k: v for k, v in row.items() if k not in left}
    messages = json.loads(fields.pop("messages_json"))
    withheld = set(json.loads(fields.pop("withheld_tools_json") or "[]"))  # NULL before 2.3
    turns = json.loads(fields.pop("turns_json") or "[]")
    withheld -= {tool for turn in turns for tool in turn.get("offers", [])}  # offered later
    tools = [
        tool
        for tool in json.loads(fields.pop("tools_json"))
        if not (isinstance(tool, dict) and (tool.get("function") or {}).get("name") in withheld)
    ]
    return ExportRecord(**fields, messages=messages, tools=tools)
