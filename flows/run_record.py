"""The ``runs`` row: written when a run starts and rewritten under the same key when it ends."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from envmill.flows.runtime.interrupt import was_interrupted
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.sandbox.isolation import resolve_isolation
from envmill.warehouse.lock import folder_lock, grant, is_free, revoke
from envmill.warehouse.resume import retract_superseded_failures
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import query

PACKAGES = ("envmill", "prefect", "dask", "distributed", "duckdb", "pyarrow", "pandera", "openai")


def new_run_id(started: datetime, seed: int) -> str:
    """To the microsecond: two runs started in one second (a retry right after a run) differ."""
    return f"run-{started:%Y%m%dT%H%M%S.%f}-{seed}"


def package_versions() -> dict[str, str]:
    return {"python": platform.python_version(), **{p: version(p) for p in PACKAGES}}


def recorded_run(
    root: Path,
    settings: EnvmillSettings,
    holder: str,
    fan_out: Callable[[str], dict[str, Any]],
    *,
    run_id: str | None = None,
    kind: str | None = None,
) -> dict[str, Any]:
    """Run ``fan_out(run_id)`` as a recorded run of the data folder.

    The run holds the folder's lock, records itself in ``runs`` as running, then finished,
    failed or interrupted, and lets its workers publish only while it lives (the permit is
    revoked first when it stops, so batches still finishing stay unpublished). ``kind`` is the
    ``backend`` column (a rollout says ``rollout``), else the settings' backend.
    """
    with folder_lock(root, holder):
        settle_abandoned_runs(root)
        started = datetime.now(UTC)
        run_id = run_id or new_run_id(started, settings.seed)
        recorder = RunRecorder(root, run_id, settings, started, kind)
        recorder.write("running", {})
        grant(root, run_id)
        clock = time.perf_counter()
        try:
            summary = fan_out(run_id)
        except BaseException as exc:
            revoke(root, run_id)
            status = "interrupted" if was_interrupted(exc) else "failed"
            recorder.write(status, {"wall_seconds": time.perf_counter() - clock})
            raise
        revoke(root, run_id)
        retract_superseded_failures(root)
        summary |= {"run_id": run_id, "wall_seconds": time.perf_counter() - clock}
        recorder.write("finished", summary)
        return summary


class RunRecorder:
    def __init__(
        self,
        root: Path,
        run_id: str,
        settings: EnvmillSettings,
        started: datetime,
        kind: str | None = None,
    ):
        self.root, self.run_id, self.settings, self.started = root, run_id, settings, started
        self.kind = kind or settings.backend
        self.isolation = resolve_isolation(settings.sandbox.isolation).describe()

    def write(self, status: str, summary: dict[str, Any]) -> None:
        row = {
            "run_id": self.run_id,
            "started_at": self.started,
            "finished_at": None if status == "running" else datetime.now(UTC),
            "status": status,
            "backend": self.kind,
            "seed": self.settings.seed,
            "settings_json": self.settings.model_dump(mode="json"),
            "versions_json": package_versions(),
            "counts_json": summary.get("counts", {}),
            "timings_json": {k: v for k, v in summary.items() if k.endswith("seconds")},
            "isolation": self.isolation,
        }
        Warehouse(self.root).write("runs", [row], key=self.run_id)


def settle_abandoned_runs(root: Path) -> list[str]:
    """Record as ``interrupted`` every run still ``running`` while nobody holds the folder: its
    process died without a word (kill -9, a lost machine). Returns the run ids settled."""
    if not is_free(root):
        return []
    rows = query(root, "SELECT * FROM runs WHERE status = 'running'").to_pylist()
    for row in rows:
        row |= {"status": "interrupted", "finished_at": datetime.now(UTC)}
        Warehouse(root).write("runs", [row], key=row["run_id"])
    return [row["run_id"] for row in rows]
