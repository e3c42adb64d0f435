"""The ``runs`` row: written when a run starts and rewritten under the same key when it ends."""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.sandbox.isolation import resolve_isolation
from envmill.warehouse.lock import is_free
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import query

PACKAGES = ("envmill", "prefect", "dask", "distributed", "duckdb", "pyarrow", "pandera", "openai")


def new_run_id(started: datetime, seed: int) -> str:
    """To the microsecond: two runs started in one second (a retry right after a run) differ."""
    return f"run-{started:%Y%m%dT%H%M%S.%f}-{seed}"


def package_versions() -> dict[str, str]:
    return {"python": platform.python_version(), **{p: version(p) for p in PACKAGES}}


class RunRecorder:
    def __init__(self, root: Path, run_id: str, settings: EnvmillSettings, started: datetime):
        self.root, self.run_id, self.settings, self.started = root, run_id, settings, started
        self.isolation = resolve_isolation(settings.sandbox.isolation).describe()

    def write(self, status: str, summary: dict[str, Any]) -> None:
        row = {
            "run_id": self.run_id,
            "started_at": self.started,
            "finished_at": None if status == "running" else datetime.now(UTC),
            "status": status,
            "backend": self.settings.backend,
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
