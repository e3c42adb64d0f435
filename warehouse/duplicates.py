"""The ``duplicates`` table's read and write side: the items dedupe compares, the pairs it found.

Certified scenarios are compared (a rejected one is not in the corpus); environments all. A pass
writes one part: an incremental pass (the end of a run) under the run's key, so a rerun of that
pass replaces it; a full recompute first retracts every earlier pass, so a pair that no longer
reaches a changed threshold is gone rather than left over.
"""

from __future__ import annotations

import json
from pathlib import Path

from envmill.schemas.dedupe import DuplicateRecord, EnvironmentItem, StateItem, TaskItem
from envmill.warehouse.commits import DamagedRecord, committed_keys, read_commit, retract
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import query

TABLE = "duplicates"
_ENVIRONMENTS = "SELECT env_id, run_id, created_at, source, tools_json FROM environments"
_SCENARIOS = (
    "SELECT scenario_id, run_id, created_at, task, user_facts_json, initial_state_json "
    "FROM scenarios WHERE status = 'certified'"
)


def _order(row: dict, key: str) -> str:
    return f"{row['created_at'].isoformat()} {row[key]}"


def _is_new(row: dict, run_id: str | None) -> bool:
    return run_id is None or row["run_id"] == run_id


def read_environment_items(root: Path, run_id: str | None = None) -> list[EnvironmentItem]:
    """Every environment; those of ``run_id`` are new (all of them when it is None)."""
    return [
        EnvironmentItem(
            item_id=row["env_id"],
            order=_order(row, "env_id"),
            new=_is_new(row, run_id),
            source=row["source"],
            tools=json.loads(row["tools_json"]),
        )
        for row in query(root, _ENVIRONMENTS).to_pylist()
    ]


def read_scenario_items(
    root: Path, run_id: str | None = None
) -> tuple[list[TaskItem], list[StateItem]]:
    """The tasks and initial states of every certified scenario, new as for environments."""
    tasks, states = [], []
    for row in query(root, _SCENARIOS).to_pylist():
        about = {
            "item_id": row["scenario_id"],
            "order": _order(row, "scenario_id"),
            "new": _is_new(row, run_id),
        }
        facts = json.loads(row["user_facts_json"])
        tasks.append(
            TaskItem(**about, task=row["task"], facts=facts if isinstance(facts, dict) else {})
        )
        state = json.loads(row["initial_state_json"])
        states.append(StateItem(**about, state=state if isinstance(state, dict) else {}))
    return tasks, states


def write_duplicates(root: Path, records: list[DuplicateRecord], run_id: str, key: str) -> int:
    """One part of ``duplicates`` under ``key`` (the same key replaces it); the rows written."""
    if records:
        rows = [record.model_dump() | {"run_id": run_id} for record in records]
        Warehouse(root).write(TABLE, rows, key=key)
    return len(records)


def clear_duplicates(root: Path) -> int:
    """Retract every commit that holds ``duplicates`` rows alone (passes, and compactions of
    them); the commits retracted."""
    cleared = 0
    for key in sorted(committed_keys(root)):
        try:
            commit = read_commit(root, key)
        except DamagedRecord:  # `envmill verify` reports it; it is no pass of ours to clear
            continue
        if commit is not None and set(commit.parts) == {TABLE}:
            retract(root, key, [TABLE])
            cleared += 1
    return cleared
