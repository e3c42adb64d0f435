"""``envmill import bfcl`` and ``envmill eval``: a benchmark's tasks in as certified scenarios,
and a policy scored on them by the benchmark's own checker beside envmill's reward."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from envmill.flows.cli.support import fail
from envmill.schemas.benchmarks import (
    BFCL_BENCHMARK,
    BFCL_CATEGORIES,
    BFCL_SOURCE,
)

OutOption = Annotated[
    Path | None, typer.Option("--out", help="data folder [ENVMILL_HOME, ./envmill-data]")
]
CategoryOption = Annotated[
    str, typer.Option(help=f"the BFCL multi-turn category: {', '.join(BFCL_CATEGORIES)}")
]

import_app = typer.Typer(no_args_is_help=True, help="Import a benchmark's tasks as scenarios.")


@import_app.command("bfcl")
def import_bfcl(
    out: OutOption = None,
    category: CategoryOption = "base",
    limit: Annotated[int | None, typer.Option(help="the category's first N tasks [all]")] = None,
    workers: Annotated[int | None, typer.Option(help="local Dask worker processes [2]")] = None,
) -> None:
    """BFCL multi-turn (from the pinned bfcl-eval package): each set of classes becomes an
    environment, each task a certified multi-turn scenario held out as evaluation data."""
    from envmill.flows.cli.run import _start
    from envmill.flows.preflight import data_folder
    from envmill.schemas.backends import BFCL
    from envmill.schemas.settings import SettingsError, load_settings
    from envmill.warehouse.store import WarehouseError

    try:
        bfcl = {"category": category} | ({"limit": limit} if limit is not None else {})
        settings = load_settings(home=out, backend=BFCL, bfcl=bfcl, workers=workers)
        root = data_folder(settings)
    except (SettingsError, WarehouseError) as exc:
        fail(str(exc))
    summary = _start(settings, root, local_llm=False)
    _print_import(root, category, summary)


def _print_import(root: Path, category: str, summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from envmill.warehouse.benchmarks import import_outcome

    outcome = import_outcome(root, BFCL_SOURCE, task_prefix(category), summary.get("run_id", ""))
    table = Table(title=f"BFCL multi-turn {category}", show_header=True)
    for column in ("what", "why", "count"):
        table.add_column(column, justify="right" if column == "count" else "left")
    for row in outcome["scenarios"]:
        table.add_row(row["status"], row["gate"], str(row["n"]))
    for row in outcome["failures"]:
        table.add_row(f"not imported ({row['stage']})", row["code"], str(row["n"]))
    Console().print(table)
    for row in outcome["failures"]:
        typer.echo(f"e.g. {row['code']}: {row['example']}", err=True)


def task_prefix(category: str) -> str:
    """The ids of a category's tasks start with this (``multi_turn_base_0``)."""
    return f"multi_turn_{category}_"


def evaluate(
    benchmark: Annotated[str, typer.Option(help=f"the benchmark: {BFCL_BENCHMARK}")],
    out: OutOption = None,
    category: Annotated[
        str | None, typer.Option(help=f"one category: {', '.join(BFCL_CATEGORIES)} [all]")
    ] = None,
    policy_model: Annotated[
        str | None, typer.Option(help="the agent's model [llm.stages.policy, llm.default]")
    ] = None,
    samples: Annotated[int | None, typer.Option(help="episodes per scenario [1]")] = None,
    max_steps: Annotated[int | None, typer.Option(help="agent turns per episode [30]")] = None,
    workers: Annotated[int | None, typer.Option(help="local Dask worker processes [2]")] = None,
    include_ungrounded: Annotated[
        bool,
        typer.Option(
            "--include-ungrounded",
            help="also the scenarios rejected by `grounded` alone: every gate of their reward "
            "passed; only their ground truth used a value the conversation never showed",
        ),
    ] = False,
    local_llm: Annotated[
        bool,
        typer.Option(
            "--local-llm", help="envmill's test endpoint replays each reference (no cost)"
        ),
    ] = False,
) -> None:
    """Roll a policy out on imported benchmark scenarios, then score every trajectory with the
    benchmark's own checker beside envmill's reward; results land in ``evals``."""
    from envmill.flows.cli import rollout as rollout_cli
    from envmill.flows.cli.warehouse import _data_dir
    from envmill.schemas.rollout import POLICY_STAGE
    from envmill.schemas.settings import SettingsError

    if benchmark != BFCL_BENCHMARK:
        fail(f"unknown benchmark {benchmark!r}; benchmarks: {BFCL_BENCHMARK}")
    if category is not None and category not in BFCL_CATEGORIES:
        fail(f"unknown category {category!r}; categories: {', '.join(BFCL_CATEGORIES)}")
    root = _data_dir(out, made_by="envmill import bfcl")
    prefix = task_prefix(category) if category else "multi_turn_"
    chosen = f"source = '{BFCL_SOURCE}' AND starts_with(source_id, '{prefix}')"
    try:
        settings = rollout_cli.rollout_settings(
            home=root,
            workers=workers,
            policy_model=policy_model,
            rollout={
                "scenarios": chosen,
                "samples": samples,
                "max_steps": max_steps,
                "ungrounded": include_ungrounded,
            },
        )
    except SettingsError as exc:
        fail(str(exc))
    rollout_cli._start(settings, root, local_llm)
    policy = settings.llm.for_stage(POLICY_STAGE).model
    _score(root, [category] if category else list(BFCL_CATEGORIES), prefix, policy)


def _score(root: Path, categories: list[str], prefix: str, policy: str) -> None:
    """BFCL's verdict on each of the policy's trajectories, written to ``evals``, then the
    table per category."""
    from envmill.tasks.backends.imported.bfcl.package import BfclDataError, read_tasks
    from envmill.tasks.backends.imported.official import official_rows
    from envmill.warehouse.benchmarks import episodes_to_score, scores
    from envmill.warehouse.store import Warehouse
    from envmill.warehouse.views import format_table

    episodes = episodes_to_score(root, BFCL_SOURCE, prefix, policy)
    if not episodes:
        fail(f"no trajectories of {policy} on imported BFCL scenarios to score in {root}", 1)
    try:
        tasks = {
            task.id: task
            for category in categories
            for task in read_tasks(f"multi_turn_{category}")
        }
    except BfclDataError as exc:
        fail(str(exc))
    rows = official_rows(episodes, tasks, BFCL_BENCHMARK)
    Warehouse(root).write("evals", rows, key=f"{BFCL_BENCHMARK}-{policy}-{prefix}")
    typer.echo(format_table(scores(root, BFCL_BENCHMARK, prefix, policy)))
