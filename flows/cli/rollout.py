"""``envmill rollout``: a policy model (and a simulated user) on certified scenarios."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from envmill.flows.cli.support import fail


def rollout(
    out: Annotated[
        Path | None, typer.Option("--out", help="data folder [ENVMILL_HOME, ./envmill-data]")
    ] = None,
    policy_model: Annotated[
        str | None, typer.Option(help="the agent's model [llm.stages.policy, llm.default]")
    ] = None,
    user_model: Annotated[
        str | None,
        typer.Option(help="the simulated user's model [llm.stages.rollout_user, llm.default]"),
    ] = None,
    scenarios: Annotated[
        str | None,
        typer.Option(
            help="SQL condition on certified scenarios, e.g. \"mode = 'conversational' AND "
            "domain = 'banking'\" [all]"
        ),
    ] = None,
    samples: Annotated[int | None, typer.Option(help="episodes per scenario [1]")] = None,
    max_steps: Annotated[int | None, typer.Option(help="agent turns per episode [30]")] = None,
    workers: Annotated[int | None, typer.Option(help="local Dask worker processes [2]")] = None,
    dask_address: Annotated[str | None, typer.Option(help="use an existing Dask scheduler")] = None,
    local_llm: Annotated[
        bool,
        typer.Option(
            "--local-llm",
            help="envmill's test endpoint plays both roles: the agent replays each scenario's "
            "reference solution (no cost)",
        ),
    ] = False,
) -> None:
    """Run a policy model against certified scenarios: trajectories with rewards and verdicts."""
    from envmill.flows.cli.warehouse import _data_dir
    from envmill.schemas.settings import SettingsError

    root = _data_dir(out)
    try:
        settings = rollout_settings(
            home=root,
            workers=workers,
            dask_address=dask_address,
            policy_model=policy_model,
            user_model=user_model,
            rollout={"scenarios": scenarios, "samples": samples, "max_steps": max_steps},
        )
    except SettingsError as exc:
        fail(str(exc))
    _start(settings, root, local_llm)


def rollout_settings(
    *,
    policy_model: str | None = None,
    user_model: str | None = None,
    rollout: dict[str, Any] | None = None,
    filters: dict[str, Any] | None = None,
    **flags: Any,
):
    """Settings with the command's flags on top (``rollout`` and ``filters``: the groups'
    fields, None for not given); the models go to their stages."""
    from pydantic import ValidationError

    from envmill.schemas.llm import StageModel
    from envmill.schemas.rollout import POLICY_STAGE, USER_STAGE, RolloutSettings
    from envmill.schemas.settings import SettingsError, load_settings

    settings = load_settings(**flags)
    given = {key: value for key, value in (rollout or {}).items() if value is not None}
    thresholds = {key: value for key, value in (filters or {}).items() if value is not None}
    given["filters"] = settings.rollout.filters.model_dump() | thresholds
    stages = dict(settings.llm.stages)
    for stage, model in ((POLICY_STAGE, policy_model), (USER_STAGE, user_model)):
        if model is not None:
            old = stages.get(stage)
            kept = old.model_dump(include=old.model_fields_set) if old else {}
            stages[stage] = StageModel.model_validate(kept | {"model": model})
    try:
        chosen = RolloutSettings.model_validate(settings.rollout.model_dump() | given)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise SettingsError(f"setting 'rollout.{where}': {error['msg']}") from None
    llm = settings.llm.model_copy(update={"stages": stages})
    return settings.model_copy(update={"rollout": chosen, "llm": llm})


def _start(settings, root: Path, local_llm: bool) -> None:
    """Choose the scenarios, check the endpoint, take the folder, run."""
    from envmill.flows.preflight import PlanError, check_endpoint, chosen_scenarios
    from envmill.flows.runtime.watchdog import RunStalled
    from envmill.warehouse.lock import FolderBusy, folder_lock
    from envmill.warehouse.space import DiskFull
    from envmill.warehouse.store import WarehouseError

    try:
        chosen = chosen_scenarios(settings, root)
        with _model_endpoint(settings, root, chosen, local_llm) as running:
            check_endpoint(running, root)
            with folder_lock(root, "envmill rollout"):
                _run_and_record(running, root)
    except (PlanError, WarehouseError, FolderBusy, DiskFull, RunStalled) as exc:
        fail(str(exc))


def _run_and_record(settings, root: Path) -> None:
    from envmill.flows.cli.report import ProgressBar, print_rollout_summary
    from envmill.flows.runtime.cluster import rollout_on_dask
    from envmill.flows.runtime.leftovers import reap_leftovers
    from envmill.flows.runtime.prefect_api import prefect_api
    from envmill.flows.timeline import mark

    reap_leftovers(root)
    with prefect_api(root / "_prefect") as api, rollout_on_dask(settings) as rollout_flow:
        mark("cluster_up")
        api.wait()
        mark("flow_start")
        bar = ProgressBar(
            "rolling out",
            items="episodes",
            unit="episodes",
            tally="successes",
            tally_label="successes",
        )
        with bar:
            summary = rollout_flow(settings=settings, data_dir=str(root))
        mark("flow_done")
    mark("cluster_closed")
    print_rollout_summary(root, summary)


@contextmanager
def _model_endpoint(settings, root: Path, chosen: list[str], local_llm: bool) -> Iterator[Any]:
    """The settings to run with: as given, or pointed at envmill's test endpoint, where the
    agent replays each chosen scenario's reference trajectory and the user answers from its
    facts (zero cost, answers cached apart from a real model's)."""
    if not local_llm:
        yield settings
        return
    from envmill.tasks.offline_llm import serve_endpoint

    with serve_endpoint() as endpoint:
        endpoint.scripts(reference_scripts(root, chosen))
        llm = settings.llm.model_copy(
            update={"base_url": endpoint.url, "cache_namespace": "local-endpoint"}
        )
        yield settings.model_copy(update={"llm": llm})


def reference_scripts(root: Path, chosen: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The test endpoint's policy script per scenario: its reference trajectory's assistant
    messages, or for one without (rejected by ``grounded`` alone) its reference calls; keyed by
    the opening the agent will see (the task, or the rule-based user's opening, which is the
    reference's), by each longer run of its user messages, and by those with the tools then
    offered (two scenarios may differ only there: BFCL's miss_func withholds a tool)."""
    from envmill.tasks.offline_llm import conversation_keys, oracle_script, solution_script
    from envmill.tasks.rollout.plan import scenario_of
    from envmill.warehouse.episodes import reference_conversations_of, scenario_rows

    references = reference_conversations_of(root, chosen)
    scripts: dict[str, list[dict[str, Any]]] = {}
    for row in scenario_rows(root, chosen, ungrounded=True):
        scenario = scenario_of(row)
        messages = references.get(row["scenario_id"])
        if messages is not None:
            users = [m["content"] for m in messages if m["role"] == "user"]
            script = oracle_script(messages)
        elif scenario.mode == "non_conversational":  # its opening is its task
            users = scenario.user_messages
            steps = [step.model_dump() for step in scenario.reference_solution]
            script = solution_script(users, steps, [0, *(t.first_step for t in scenario.turns)])
        else:
            continue
        names = [tool["function"]["name"] for tool in json.loads(row["tools_json"])]
        for count in range(len(users), 0, -1):
            offered = [name for name in names if name not in scenario.withheld_at(count - 1)]
            for key in conversation_keys(users[:count], offered):
                scripts.setdefault(key, script)  # the first scenario keeps a shared opening
    return scripts
