"""``envmill run``: the main job, from settings to a filled warehouse and a summary table."""

from __future__ import annotations

import platform
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any

import typer

from envmill.flows.cli_support import fail

PACKAGES = ("envmill", "prefect", "dask", "distributed", "duckdb", "pyarrow", "pandera", "openai")


def run(
    out: Annotated[Path | None, typer.Option("--out", help="data folder [ENVMILL_HOME, ./envmill-data]")] = None,
    seed: Annotated[int | None, typer.Option(help="seed of the whole run [0]")] = None,
    envs: Annotated[int | None, typer.Option(help="environments to synthesize [24]")] = None,
    scenarios_per_env: Annotated[int | None, typer.Option(help="scenarios per environment [12]")] = None,
    domains: Annotated[str | None, typer.Option(help="comma-separated domains [all]")] = None,
    backend: Annotated[str | None, typer.Option(help="procedural (default) or llm")] = None,
    batch_size: Annotated[int | None, typer.Option(help="environments per worker task [4]")] = None,
    workers: Annotated[int | None, typer.Option(help="local Dask worker processes [2]")] = None,
    dask_address: Annotated[str | None, typer.Option(help="use an existing Dask scheduler")] = None,
) -> None:
    """Synthesize environments, certified scenarios and reference trajectories into the warehouse."""
    from envmill.schemas.settings import SettingsError, load_settings
    from envmill.tasks.pipeline import PlanError, plan_batches
    from envmill.warehouse.store import Warehouse, WarehouseError, resolve_data_dir

    domain_list = [d.strip() for d in domains.split(",") if d.strip()] if domains is not None else None
    try:
        settings = load_settings(
            home=out, seed=seed, envs=envs, scenarios_per_env=scenarios_per_env, domains=domain_list,
            backend=backend, batch_size=batch_size, workers=workers, dask_address=dask_address,
        )
        if settings.backend != "procedural":
            fail("the llm backend is not available in this version; use --backend procedural")
        plan_batches(settings)  # an unknown domain fails here, before anything starts
        warehouse = Warehouse(resolve_data_dir(str(settings.home) if settings.home else None))
    except (SettingsError, PlanError, WarehouseError) as exc:
        fail(str(exc))
    _run_and_record(settings, warehouse.root)


def _run_and_record(settings, root: Path) -> None:
    from envmill.flows.prefect_api import prefect_api
    from envmill.flows.run_report import ProgressBar, print_summary
    from envmill.tasks.sandbox.isolation import resolve_isolation

    started = datetime.now(UTC)
    run_id = f"run-{started:%Y%m%dT%H%M%S}-{settings.seed}"
    isolation = resolve_isolation(settings.sandbox.isolation).describe()
    record = _RunRecorder(root, run_id, settings, started, isolation)
    record.write("running", {})
    clock = time.perf_counter()
    try:
        with prefect_api(root / "_prefect"), ProgressBar():
            summary = _run_flow(settings, run_id, root)
    except KeyboardInterrupt:
        record.write("interrupted", {"wall_seconds": time.perf_counter() - clock})
        raise
    except Exception:
        record.write("failed", {"wall_seconds": time.perf_counter() - clock})
        raise
    summary["wall_seconds"] = time.perf_counter() - clock
    record.write("finished", summary)
    print_summary(root, run_id, summary)


def _run_flow(settings, run_id: str, root: Path) -> dict[str, Any]:
    from prefect_dask import DaskTaskRunner

    from envmill.flows.cluster import dask_scheduler
    from envmill.flows.synthesize import synthesize

    with dask_scheduler(settings.dask_address, settings.workers) as address:
        runner = DaskTaskRunner(address=address)
        return synthesize.with_options(task_runner=runner)(
            settings=settings, run_id=run_id, data_dir=str(root)
        )


class _RunRecorder:
    """The ``runs`` row, rewritten under one key as the run moves from running to its end."""

    def __init__(self, root: Path, run_id: str, settings, started: datetime, isolation: str):
        self.root, self.run_id, self.settings = root, run_id, settings
        self.started, self.isolation = started, isolation

    def write(self, status: str, summary: dict[str, Any]) -> None:
        from envmill.warehouse.store import Warehouse

        row = {
            "run_id": self.run_id,
            "started_at": self.started,
            "finished_at": None if status == "running" else datetime.now(UTC),
            "status": status,
            "backend": self.settings.backend,
            "seed": self.settings.seed,
            "settings_json": self.settings.model_dump(mode="json"),
            "versions_json": {"python": platform.python_version(), **{p: version(p) for p in PACKAGES}},
            "counts_json": summary.get("counts", {}),
            "timings_json": {k: v for k, v in summary.items() if k.endswith("seconds")},
            "isolation": self.isolation,
        }
        Warehouse(self.root).write("runs", [row], key=self.run_id)
