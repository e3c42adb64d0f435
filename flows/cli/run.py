"""``envmill run``: the main job, from settings to a filled warehouse and a summary table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from envmill.flows.cli.support import fail


def run(
    out: Annotated[
        Path | None, typer.Option("--out", help="data folder [ENVMILL_HOME, ./envmill-data]")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="seed of the whole run [0]")] = None,
    envs: Annotated[int | None, typer.Option(help="environments to synthesize [24]")] = None,
    scenarios_per_env: Annotated[
        int | None, typer.Option(help="scenarios per environment [12]")
    ] = None,
    domains: Annotated[str | None, typer.Option(help="comma-separated domains [all]")] = None,
    backend: Annotated[str | None, typer.Option(help="procedural (default) or llm")] = None,
    batch_size: Annotated[int | None, typer.Option(help="environments per worker task [4]")] = None,
    workers: Annotated[int | None, typer.Option(help="local Dask worker processes [2]")] = None,
    dask_address: Annotated[str | None, typer.Option(help="use an existing Dask scheduler")] = None,
) -> None:
    """Synthesize environments, certified scenarios and reference trajectories."""
    from envmill.schemas.settings import SettingsError, load_settings
    from envmill.tasks.backends import PlanError
    from envmill.tasks.pipeline import plan_batches
    from envmill.warehouse.store import Warehouse, WarehouseError, resolve_data_dir

    domain_list = (
        [d.strip() for d in domains.split(",") if d.strip()] if domains is not None else None
    )
    try:
        settings = load_settings(
            home=out,
            seed=seed,
            envs=envs,
            scenarios_per_env=scenarios_per_env,
            domains=domain_list,
            backend=backend,
            batch_size=batch_size,
            workers=workers,
            dask_address=dask_address,
        )
        plan_batches(settings)  # an unknown domain or backend fails here, before anything starts
        warehouse = Warehouse(resolve_data_dir(str(settings.home) if settings.home else None))
    except (SettingsError, PlanError, WarehouseError) as exc:
        fail(str(exc))
    _run_and_record(settings, warehouse.root)


def _run_and_record(settings, root: Path) -> None:
    from envmill.flows.cli.report import print_summary
    from envmill.flows.prefect_api import prefect_api

    with prefect_api(root / "_prefect") as api:
        summary = _run_flow(settings, root, api)
    print_summary(root, summary)


def _run_flow(settings, root: Path, api) -> dict[str, Any]:
    """Start (and warm) the cluster while the Prefect server starts, then run the flow."""
    from prefect_dask import DaskTaskRunner

    from envmill.flows.cli.report import ProgressBar
    from envmill.flows.cluster import dask_scheduler

    with dask_scheduler(settings.dask_address, settings.workers, settings.sandbox) as address:
        api.wait()
        from envmill.flows.synthesize import synthesize

        with ProgressBar():
            runner = DaskTaskRunner(address=address)
            return synthesize.with_options(task_runner=runner)(
                settings=settings, data_dir=str(root)
            )
