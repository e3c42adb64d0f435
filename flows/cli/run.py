"""``envmill run``: the main job, from settings to a filled warehouse and a summary table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from envmill.flows.cli.support import fail
from envmill.schemas.backends import (  # the registry's names, without loading a backend
    LLM,
    LLM_SCENARIOS,
    OWN_SCENARIOS,
    TRAITS,
    backend_help,
    default_batch_sizes,
)


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
    backend: Annotated[str | None, typer.Option(help=backend_help())] = None,
    scenarios_from: Annotated[
        str | None,
        typer.Option(
            help=f"{OWN_SCENARIOS} (default: its own way) or {LLM_SCENARIOS} "
            "(ScenGenerator, any backend)"
        ),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(help=f"environments per worker task [{default_batch_sizes()}]"),
    ] = None,
    workers: Annotated[int | None, typer.Option(help="local Dask worker processes [2]")] = None,
    dask_address: Annotated[str | None, typer.Option(help="use an existing Dask scheduler")] = None,
    dashboard: Annotated[
        str | None,
        typer.Option(help="HOST:PORT of the local cluster's dashboard [127.0.0.1, a free port]"),
    ] = None,
    topics: Annotated[
        Path | None,
        typer.Option(
            help=f"{LLM}: topics to build, a list or a corpus [the folder's selected topics]"
        ),
    ] = None,
    local_llm: Annotated[
        bool, typer.Option("--local-llm", help="use envmill's test endpoint as the model (no cost)")
    ] = False,
    max_topics: Annotated[
        int | None, typer.Option(help="the most topics a run takes from --topics [1000]")
    ] = None,
) -> None:
    """Synthesize environments, certified scenarios and reference trajectories."""
    from envmill.flows.preflight import data_folder
    from envmill.schemas.settings import SettingsError, load_settings
    from envmill.tasks.backends.llm.topics.sources import CorpusError
    from envmill.warehouse.store import WarehouseError

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
            scenarios_from=scenarios_from,
            batch_size=batch_size,
            workers=workers,
            dask_address=dask_address,
            dashboard=dashboard,
            max_topics=max_topics,
        )
        root = data_folder(settings)
        if TRAITS[settings.backend].takes_topics:
            settings = _with_topics(settings, topics, root)
    except (SettingsError, WarehouseError, CorpusError) as exc:
        fail(str(exc))
    _start(settings, root, local_llm)


def retry_failed(
    out: Annotated[
        Path | None, typer.Option("--out", help="data folder [ENVMILL_HOME, ./envmill-data]")
    ] = None,
    run_id: Annotated[
        str | None, typer.Option("--run", help="the run whose failed topics to retry [latest]")
    ] = None,
    stage: Annotated[str | None, typer.Option(help="only topics that failed at this stage")] = None,
    local_llm: Annotated[
        bool, typer.Option("--local-llm", help="use envmill's test endpoint (no cost)")
    ] = False,
) -> None:
    """Build again exactly the topics that ended failed; finished LLM calls come from the cache."""
    from envmill.flows.preflight import data_folder
    from envmill.flows.retry import RetryError, check_retry_folder, failed_topics, retry_settings
    from envmill.schemas.settings import SettingsError, load_settings

    try:
        settings = load_settings(home=out, backend=LLM)
    except SettingsError as exc:
        fail(str(exc))
    root = data_folder(settings)
    try:
        check_retry_folder(root)
        topics = failed_topics(root, run_id, stage)
    except RetryError as exc:
        fail(str(exc))
    if not topics:
        typer.echo("no failed topics to retry", err=True)
        return
    typer.echo(f"retrying {len(topics)} failed topic(s)", err=True)
    _start(retry_settings(settings, root, topics, run_id), root, local_llm)


def _start(settings, root: Path, local_llm: bool) -> dict[str, Any]:
    """Plan (a bad domain, backend or endpoint fails here, before anything starts), take the
    folder (a second run on it is refused at once), then run; the run's summary."""
    from envmill.flows.preflight import check_run
    from envmill.flows.runtime.watchdog import RunStalled
    from envmill.tasks.backends import PlanError
    from envmill.warehouse.lock import FolderBusy, folder_lock
    from envmill.warehouse.space import DiskFull
    from envmill.warehouse.store import WarehouseError

    if local_llm:
        return _run_on_local_endpoint(settings, root)
    try:
        root = check_run(settings, root)
        with folder_lock(root, "envmill run"):
            return _run_and_record(settings, root)
    except (PlanError, WarehouseError, FolderBusy, DiskFull, RunStalled) as exc:
        fail(str(exc))


def _with_topics(settings, topics: Path | None, root: Path):
    """A topic backend's topics: ``--topics`` (a list or a corpus), else the selected topics
    ``envmill topics mine`` left in the data folder; with what mining knew of each."""
    from envmill.flows.preflight import selected_topics, with_topic_sources
    from envmill.tasks.backends.llm.topics.sources import check_topics, read_candidates

    if topics is not None:
        chosen = [candidate.text for candidate in read_candidates(topics)]
        check_topics(topics, chosen, settings.max_topic_chars, settings.max_topics)
    else:
        chosen = settings.topics or selected_topics(root)
    return with_topic_sources(settings.model_copy(update={"topics": chosen}), root)


def _run_on_local_endpoint(settings, root: Path) -> dict[str, Any]:
    """The whole run against envmill's test endpoint: a zero-cost dry run of the LLM path, its
    answers cached apart from a real model's."""
    from envmill.tasks.offline_llm import serve_endpoint

    with serve_endpoint() as endpoint:
        llm = settings.llm.model_copy(
            update={"base_url": endpoint.url, "cache_namespace": "local-endpoint"}
        )
        return _start(settings.model_copy(update={"llm": llm}), root, local_llm=False)


def _run_and_record(settings, root: Path) -> dict[str, Any]:
    from envmill.flows.cli.report import print_summary
    from envmill.flows.runtime.leftovers import reap_leftovers
    from envmill.flows.runtime.prefect_api import prefect_api
    from envmill.flows.timeline import mark

    reap_leftovers(root)  # what a run killed by SIGKILL left: temp folders, its Prefect server
    with prefect_api(root / "_prefect") as api:
        mark("server_started")
        summary = _run_flow(settings, root, api)
    mark("server_stopped")
    print_summary(root, summary)
    return summary


def _nothing_left(settings, root: Path) -> bool:
    """Whether a committed batch holds every item the run plans (a rerun of a finished run,
    a retry with nothing to retry): the flow then records the run and starts no cluster. A
    batch found damaged then is redone in the flow's own process, as safely (generated code
    runs in the sandbox either way)."""
    from envmill.tasks.pipeline import iter_batches
    from envmill.warehouse.resume import CommitIndex

    commits = CommitIndex(root).commits.values()
    done = {item for commit in commits if commit.kind == "batch" for item in commit.items}
    try:
        return done != set() and next(iter_batches(settings, done=done), None) is None
    except Exception:  # the flow reports a plan it cannot make, in its own words
        return False


def _run_flow(settings, root: Path, api) -> dict[str, Any]:
    """Start (and warm) the cluster while the Prefect server starts, then run the flow."""
    from envmill.flows.cli.report import ProgressBar
    from envmill.flows.runtime.cluster import synthesize_on_dask
    from envmill.flows.timeline import mark

    with synthesize_on_dask(settings, _nothing_left(settings, root)) as synthesize:
        mark("cluster_up")
        api.wait()
        mark("flow_start")
        with ProgressBar():
            summary = synthesize(settings=settings, data_dir=str(root))
        mark("flow_done")
    mark("cluster_closed")
    return summary
