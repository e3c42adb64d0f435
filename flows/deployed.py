"""The flows deployments run: ``envmill run`` and ``envmill retry-failed`` as flow runs.

A worker or ``serve`` starts them in the project folder (the deployment's working directory), and
each resolves what its command would there: the settings are the run's parameters over
``ENVMILL_*`` variables, ``./envmill.toml`` and the defaults (the settings model validates the
parameters in the run's own process), and the data folder is ``data_dir``, else the settings'
``home``, else ``ENVMILL_HOME``, else ``./envmill-data``. Each checks its plan and the model's
endpoint before the folder is touched, then runs ``synthesize`` as a subflow on the Dask cluster
the settings ask for, as the command does; the LLM key comes from the run's environment
(``OPENAI_API_KEY``), never from a parameter.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from envmill.flows.preflight import check_run, data_folder, selected_topics, with_topic_sources
from envmill.flows.retry import check_retry_folder, failed_topics, retry_settings
from envmill.flows.runtime.cluster import synthesize_on_dask
from envmill.flows.runtime.served import ending_with_server
from envmill.schemas.backends import TRAITS
from envmill.schemas.settings import EnvmillSettings
from envmill.warehouse.lock import folder_lock


@flow(name="synthesize-on-cluster", log_prints=False)
def synthesize_on_cluster(settings: EnvmillSettings, data_dir: str | None = None) -> dict[str, Any]:
    """``envmill run``: synthesize into the data folder on a Dask cluster (llm backend: the
    settings' topics, else the folder's selected ones)."""
    root = data_folder(settings, data_dir)
    if TRAITS[settings.backend].takes_topics:
        topics = settings.topics or selected_topics(root)
        settings = with_topic_sources(settings.model_copy(update={"topics": topics}), root)
    root = check_run(settings, root)
    with ending_with_server(), folder_lock(root, "synthesize-on-cluster"):
        with synthesize_on_dask(settings) as synthesize:
            return synthesize(settings=settings, data_dir=str(root))


@flow(name="retry-failed", log_prints=False)
def retry_failed(
    settings: EnvmillSettings,
    data_dir: str | None = None,
    run_id: str | None = None,
    stage: str | None = None,
) -> dict[str, Any]:
    """``envmill retry-failed``: build again the topics that ended failed (in ``run_id``, or in
    any llm run; at ``stage`` only, if given) on a Dask cluster."""
    root = data_folder(settings, data_dir)
    check_retry_folder(root)
    topics = failed_topics(root, run_id, stage)
    if not topics:
        return {"retried_topics": 0}
    retry = retry_settings(settings, root, topics, run_id)
    check_run(retry, root)
    with ending_with_server(), folder_lock(root, "retry-failed"):
        with synthesize_on_dask(retry) as synthesize:
            return {"retried_topics": len(topics)} | synthesize(settings=retry, data_dir=str(root))
