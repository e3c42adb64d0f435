"""``envmill filter``: judge stored trajectories again with the filters' current thresholds.

Rollouts judge their trajectories as they land; this command judges any of them again (new
thresholds, reference trajectories, trajectories made before a filter existed), writing the
verdicts as rows that replace earlier ones of the same trajectory and filter.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from envmill.flows.cli.support import fail


def filter_trajectories(
    out: Annotated[
        Path | None, typer.Option("--out", help="data folder [ENVMILL_HOME, ./envmill-data]")
    ] = None,
    run_id: Annotated[
        str | None, typer.Option("--run", help="only this run's trajectories")
    ] = None,
    policy: Annotated[
        str | None, typer.Option(help="only this policy's (reference, or a model name)")
    ] = None,
    min_reward: Annotated[
        float | None, typer.Option(help="keep a reward at least this [rollout.filters]")
    ] = None,
    require_success: Annotated[
        bool | None,
        typer.Option("--require-success/--any-success", help="keep only full successes"),
    ] = None,
) -> None:
    """Judge trajectories with every filter; the verdicts land in the ``verdicts`` table."""
    from envmill.flows.cli.rollout import rollout_settings
    from envmill.flows.cli.warehouse import _data_dir
    from envmill.schemas.settings import SettingsError
    from envmill.warehouse.lock import FolderBusy, folder_lock

    root = _data_dir(out)
    flags = {"min_reward": min_reward, "require_success": require_success}
    try:
        settings = rollout_settings(home=root, filters=flags)
    except SettingsError as exc:
        fail(str(exc))
    try:
        with folder_lock(root, "envmill filter"):
            tally = judge_stored(root, settings.rollout.filters, run_id, policy)
    except FolderBusy as exc:
        fail(str(exc))
    if not tally:
        fail("no trajectories to judge" + (f" of run {run_id!r}" if run_id else ""), code=1)
    for name, (kept, dropped) in sorted(tally.items()):
        typer.echo(f"{name}: {kept} kept, {dropped} dropped")


def judge_stored(root: Path, filters, run: str | None, policy: str | None) -> dict:
    """Judge every page of trajectories and commit its verdicts; (kept, dropped) per filter."""
    from envmill.schemas.ids import content_id
    from envmill.tasks.rollout import judge_trajectory
    from envmill.tasks.rollout.plan import scenario_of
    from envmill.warehouse.episodes import trajectories_to_judge
    from envmill.warehouse.rows import verdict_row
    from envmill.warehouse.store import Warehouse

    kept, dropped = Counter(), Counter()
    for page in trajectories_to_judge(root, run, policy):
        rows = []
        for row in page:
            verdicts = judge_trajectory(
                stored_trajectory(row),
                scenario_of(row),
                tool_names={tool["function"]["name"] for tool in json.loads(row["tools_json"])},
                state_changing_tools=set(row["state_changing_tools"] or []),
                settings=filters,
            )
            for verdict in verdicts:
                (kept if verdict.kept else dropped)[verdict.filter] += 1
                rows.append(verdict_row(verdict, row["run_id"]))
        key = content_id(
            {"filters": filters.model_dump(), "page": [r["trajectory_id"] for r in page]}
        )
        Warehouse(root).write("verdicts", rows, key=f"judged-{key}")
    return {name: (kept[name], dropped[name]) for name in kept.keys() | dropped.keys()}


def stored_trajectory(row: dict):
    """A ``trajectories`` row as the record the filters judge."""
    from envmill.schemas.trajectory import TrajectoryRecord

    return TrajectoryRecord(
        trajectory_id=row["trajectory_id"],
        scenario_id=row["scenario_id"],
        env_id=row["env_id"],
        policy=row["policy"],
        messages=json.loads(row["messages_json"]),
        check_results=json.loads(row["check_results_json"]),
        reward=row["reward"],
        success=bool(row["success"]),
        steps=row["steps"],
        termination=row["termination"],
    )
