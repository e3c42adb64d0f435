"""Near-duplicate passes over the warehouse: a run's new items at its end, or the whole corpus.

The comparing is ``tasks.dedupe`` (plain functions); this module reads the items from the
warehouse, reports progress and writes the pairs. A pass writes only while its run holds the
folder's permit, as a batch does.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from envmill.flows.progress import report
from envmill.flows.run_record import recorded_run
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.dedupe import find_duplicates
from envmill.tasks.dedupe.detect import shingling_version
from envmill.tasks.pipeline import failure_of
from envmill.warehouse.dedupe_memo import StoredHashMemo
from envmill.warehouse.duplicates import (
    clear_duplicates,
    read_environment_items,
    read_scenario_items,
    write_duplicates,
)
from envmill.warehouse.lock import may_write
from envmill.warehouse.rows import failure_row
from envmill.warehouse.store import Warehouse


def dedupe_new_items(
    summary: dict[str, Any], settings: EnvmillSettings, run_id: str, data_dir: str
) -> dict[str, Any]:
    """The end of a run: its environments and certified scenarios against the whole corpus.
    Returns the run's ``summary`` with ``counts.duplicates`` (rows written) and
    ``dedupe_seconds`` added (unchanged when dedupe is off, the run made nothing new — a rerun
    that resumed everything — or it was stopped)."""
    root = Path(data_dir)
    made = summary.get("counts", {})
    if not settings.dedupe.enabled or not (made.get("environments") or made.get("scenarios")):
        return summary
    if not may_write(root, run_id):
        return summary
    try:
        found = _pass(root, settings, run_id, new_of=run_id)
    except Exception as exc:  # the batches are committed: a failed pass is a row, not a failed run
        failure = failure_of("dedupe", run_id, exc)
        Warehouse(root).write("failures", [failure_row(failure, run_id)], key=f"dedupe-{run_id}")
        report("dedupe_failed", error=str(exc))
        return summary | {"counts": summary.get("counts", {}) | {"dedupe_failed": 1}}
    counts = summary.get("counts", {}) | {"duplicates": found["duplicates"]}
    return summary | {"counts": counts, "dedupe_seconds": found["dedupe_seconds"]}


def dedupe_corpus(settings: EnvmillSettings, root: Path) -> dict[str, Any]:
    """``envmill dedupe``: every item against every other, as a recorded run of its own (kind
    ``dedupe``) whose one part replaces every earlier pass."""

    def recompute(run_id: str) -> dict[str, Any]:
        cleared = clear_duplicates(root)
        found = _pass(root, settings, run_id, new_of=None)
        return found | {"counts": {"duplicates": found["duplicates"]}, "cleared_passes": cleared}

    return recorded_run(root, settings, "envmill dedupe", recompute, kind="dedupe")


def _pass(root: Path, settings: EnvmillSettings, run_id: str, new_of: str | None) -> dict:
    """Read, compare (reporting each measure), write; the summary of the pass."""
    clock = time.perf_counter()
    environments = read_environment_items(root, new_of)
    tasks, states = read_scenario_items(root, new_of)
    report("dedupe_read", environments=len(environments), scenarios=len(tasks))

    def progress(measure: str, items: int, seconds: float) -> None:
        report("dedupe", measure=measure, items=items, seconds=seconds)

    memo = StoredHashMemo(root, shingling_version())  # the corpus as earlier passes hashed it
    records = find_duplicates(settings.dedupe, environments, tasks, states, progress, memo)
    written = 0
    if may_write(root, run_id):
        written = write_duplicates(root, records, run_id, key=run_id)
        if unsaved := memo.save(run_id):
            report("dedupe_cache", problem=unsaved)
    return {"duplicates": written, "dedupe_seconds": round(time.perf_counter() - clock, 3)}
