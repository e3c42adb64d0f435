"""What a run settles before anything starts: its data folder, its topics, a plan that works.

``envmill run`` and the deployed flows (``flows/deployed.py``) share these, so a scheduled run
resolves and refuses exactly what the command would. No Prefect import here: the command checks
before it exports the Prefect API that Prefect reads once, when it is first imported.
"""

from __future__ import annotations

from pathlib import Path

from envmill.flows.runtime.cluster import scheduler_unreachable
from envmill.schemas.settings import EnvmillSettings
from envmill.schemas.topics import TopicSource
from envmill.tasks.backends import PlanError, make_backend, run_judges, run_llm_client
from envmill.tasks.pipeline import iter_batches
from envmill.warehouse.space import check_free_space
from envmill.warehouse.store import MARKER, Warehouse, resolve_data_dir
from envmill.warehouse.views import query


def data_folder(settings: EnvmillSettings, data_dir: str | None = None) -> Path:
    """``data_dir``, else the settings' ``home`` (``--out``), else ``ENVMILL_HOME``, else
    ``./envmill-data``, as an absolute path."""
    chosen = data_dir or (str(settings.home) if settings.home else None)
    return resolve_data_dir(chosen)


def selected_topics(root: Path) -> list[str]:
    """The topics ``envmill topics mine`` selected in the data folder, best first."""
    if not (root / MARKER).is_file():
        return []
    sql = "SELECT topic FROM topics WHERE status = 'selected' ORDER BY selection_rank, topic"
    return [row["topic"] for row in query(root, sql).to_pylist() if row["topic"]]


def with_topic_sources(settings: EnvmillSettings, root: Path) -> EnvmillSettings:
    """The settings with what ``envmill topics mine`` knew of each of their topics (its
    introduction and source request), for the planner; a topic it never mined has none."""
    if not settings.topics or not (root / MARKER).is_file():
        return settings
    sql = (
        "SELECT topic, arg_min(introduction, selection_rank) AS introduction, "
        "arg_min(text, selection_rank) AS request FROM topics "
        "WHERE status = 'selected' AND list_contains($topics, topic) GROUP BY topic"
    )
    rows = query(root, sql, {"topics": settings.topics}).to_pylist()
    sources = {
        row["topic"]: TopicSource(introduction=row["introduction"] or "", request=row["request"])
        for row in rows
    }
    return settings.model_copy(update={"topic_sources": {**sources, **settings.topic_sources}})


def check_run(settings: EnvmillSettings, root: Path) -> Path:
    """Plan the run and ask the model's endpoint once (a bad domain, backend, URL or key is one
    line here, before the folder is touched), then open the data folder; its absolute path.

    Raises:
        PlanError: the backend cannot plan these settings, or its endpoint does not answer.
        WarehouseError: the folder is of another format or cannot be written.
        DiskFull: the folder's disk has too little room to start.
    """
    if settings.dask_address and (problem := scheduler_unreachable(settings.dask_address)):
        raise PlanError(problem)
    backend = make_backend(settings)
    next(iter_batches(settings, backend), None)  # the plan itself stays lazy
    for client in (
        getattr(backend, "client", None),
        getattr(run_judges(settings, "", None), "client", None),
    ):
        if client is not None and (problem := client.unreachable()):
            raise PlanError(problem)
    check_free_space(root)
    return Warehouse(root).root


def chosen_scenarios(settings: EnvmillSettings, root: Path) -> list[str]:
    """The certified scenarios a rollout would run: a bad ``--scenarios`` condition, or one
    that chooses nothing, is one line.

    Raises:
        PlanError: no scenario to run, or a condition that does not work.
    """
    import duckdb

    from envmill.warehouse.episodes import certified_scenario_ids
    from envmill.warehouse.views import NotAQuery

    condition = settings.rollout.scenarios
    try:
        chosen = certified_scenario_ids(root, condition, settings.rollout.ungrounded)
    except NotAQuery as exc:
        raise PlanError(f"--scenarios refused: {exc}") from None
    except duckdb.Error as exc:
        raise PlanError(f"--scenarios {condition!r}: {str(exc).splitlines()[0]}") from None
    if not chosen:
        where = f" match {condition!r}" if condition.strip() else " are in this folder"
        raise PlanError(f"no certified scenarios{where}; envmill run makes some")
    return chosen


def check_endpoint(settings: EnvmillSettings, root: Path) -> None:
    """The model's endpoint answers, and the disk has room to start.

    Raises:
        PlanError: no endpoint configured, or it does not answer.
        DiskFull: too little room.
    """
    client = run_llm_client(settings, "", root)
    if problem := client.unreachable():
        raise PlanError(problem)
    check_free_space(root)
