"""Scheduled runs of the ``synthesize`` flow.

``python -m envmill.deployments.synthesize_deployments`` registers and serves them against the
Prefect API in ``PREFECT_API_URL`` (a ``prefect server start`` of yours). Their flows
(``flows/deployed.py``) do what ``envmill run`` and ``envmill retry-failed`` do, on the Dask
cluster their settings ask for; entrypoints are module paths, so a run imports the installed
package. Names follow ``<flow>-<profile>``.
"""

from __future__ import annotations

from prefect.deployments.runner import RunnerDeployment
from prefect.types.entrypoint import EntrypointType

from envmill.flows.deployed import retry_failed, synthesize_on_cluster
from envmill.schemas.settings import EnvmillSettings
from envmill.warehouse.store import resolve_data_dir

NIGHTLY_CRON = "0 3 * * *"
RETRY_CRON = "0 5 * * *"  # after the nightly run: the llm topics that failed, again
SMOKE_INTERVAL_SECONDS = 6 * 3600


def _parameters(settings: EnvmillSettings) -> dict:
    """Settings as deployment parameters, without the API key: a masked key sent back would be
    used as the key; the worker reads the real one from its own environment."""
    return settings.model_dump(mode="json", exclude={"llm": {"api_key"}})


def build_deployments(data_dir: str | None = None) -> list[RunnerDeployment]:
    """The nightly corpus run, a small smoke run and the nightly retry of failed llm topics;
    Prefect checks the parameters at build time."""
    target = str(resolve_data_dir(data_dir))
    flow = synthesize_on_cluster
    nightly = EnvmillSettings(envs=240, scenarios_per_env=20, seed=0)
    smoke = EnvmillSettings(envs=4, scenarios_per_env=3, seed=0)
    return [
        flow.to_deployment(
            name="synthesize-nightly",
            cron=NIGHTLY_CRON,
            tags=["envmill", "nightly"],
            parameters={"settings": _parameters(nightly), "data_dir": target},
            entrypoint_type=EntrypointType.MODULE_PATH,
        ),
        flow.to_deployment(
            name="synthesize-smoke",
            interval=SMOKE_INTERVAL_SECONDS,
            tags=["envmill", "smoke"],
            parameters={"settings": _parameters(smoke), "data_dir": target},
            entrypoint_type=EntrypointType.MODULE_PATH,
        ),
        retry_failed.to_deployment(
            name="retry-failed-nightly",
            cron=RETRY_CRON,
            tags=["envmill", "retry"],
            parameters={
                "settings": _parameters(EnvmillSettings(backend="llm")),
                "data_dir": target,
            },
            entrypoint_type=EntrypointType.MODULE_PATH,
        ),
    ]


if __name__ == "__main__":
    from prefect import serve

    serve(*build_deployments())
