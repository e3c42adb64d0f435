"""Scheduled runs of the ``synthesize`` flow.

``python -m envmill.deployments.synthesize_deployments`` registers and serves them against the
Prefect API in ``PREFECT_API_URL`` (a ``prefect server start`` of yours); each scheduled run fans
out on a local Dask cluster, or on ``ENVMILL_DASK_ADDRESS`` when set. Names follow
``<flow>-<profile>``.
"""

from __future__ import annotations

import os

from prefect.deployments.runner import RunnerDeployment
from prefect_dask import DaskTaskRunner

from envmill.flows.retry import retry_failed
from envmill.flows.synthesize import synthesize
from envmill.schemas.settings import EnvmillSettings
from envmill.warehouse.store import resolve_data_dir

NIGHTLY_CRON = "0 3 * * *"
RETRY_CRON = "0 5 * * *"  # after the nightly run: the llm topics that failed, again
SMOKE_INTERVAL_SECONDS = 6 * 3600


def _runner() -> DaskTaskRunner:
    address = os.environ.get("ENVMILL_DASK_ADDRESS")
    if address:
        return DaskTaskRunner(address=address)
    return DaskTaskRunner(
        cluster_kwargs={"n_workers": 2, "threads_per_worker": 1, "dashboard_address": None}
    )


def _parameters(settings: EnvmillSettings) -> dict:
    """Settings as deployment parameters, without the API key: a masked key sent back would be
    used as the key; the worker reads the real one from its own environment."""
    return settings.model_dump(mode="json", exclude={"llm": {"api_key"}})


def build_deployments(data_dir: str | None = None) -> list[RunnerDeployment]:
    """The nightly corpus run, a small smoke run and the nightly retry of failed llm topics;
    Prefect checks the parameters at build time."""
    target = str(resolve_data_dir(data_dir))
    flow = synthesize.with_options(task_runner=_runner())
    nightly = EnvmillSettings(envs=240, scenarios_per_env=20, seed=0)
    smoke = EnvmillSettings(envs=4, scenarios_per_env=3, seed=0)
    return [
        flow.to_deployment(
            name="synthesize-nightly",
            cron=NIGHTLY_CRON,
            tags=["envmill", "nightly"],
            parameters={"settings": _parameters(nightly), "data_dir": target},
        ),
        flow.to_deployment(
            name="synthesize-smoke",
            interval=SMOKE_INTERVAL_SECONDS,
            tags=["envmill", "smoke"],
            parameters={"settings": _parameters(smoke), "data_dir": target},
        ),
        retry_failed.with_options(task_runner=_runner()).to_deployment(
            name="retry-failed-nightly",
            cron=RETRY_CRON,
            tags=["envmill", "retry"],
            parameters={
                "settings": _parameters(EnvmillSettings(backend="llm")),
                "data_dir": target,
            },
        ),
    ]


if __name__ == "__main__":
    from prefect import serve

    serve(*build_deployments())
