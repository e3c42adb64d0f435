"""envmill's scheduled runs: the deployments ``prefect.yaml`` defines, served here or registered.

    python -m envmill.deployments.synthesize_deployments serve [--data-dir D]
    python -m envmill.deployments.synthesize_deployments register [--work-pool P] [--data-dir D]
        [--llm-key-block NAME]

``serve`` registers them and runs their flow runs itself until stopped; ``register`` puts them on
a work pool of type ``process``, whose worker (``prefect worker start --pool P``) runs them; both
register exactly what ``prefect deploy --all`` registers from the same file. Either needs a
Prefect API (``PREFECT_API_URL``, or a profile that has one). The folder this runs in is the runs'
working directory, where their ``envmill.toml`` and ``./envmill-data`` are found, as ``prefect
deploy`` records it. Entrypoints are module paths (``envmill.flows.deployed.…``): the flows load
from the installed package, never as loose scripts next to ``tasks/``. The LLM key is the
runs' ``OPENAI_API_KEY``, or, with ``--llm-key-block``, a Secret block the worker reads when a run
starts; only the reference is registered.
"""

from __future__ import annotations

import re
import sys
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

import jsonschema
import typer
import yaml
from prefect.deployments.runner import RunnerDeployment
from prefect.flows import load_flow_from_entrypoint
from prefect.runner.storage import LocalStorage
from prefect.schedules import Cron, Interval, Schedule
from prefect.types.entrypoint import EntrypointType
from prefect.utilities.callables import parameter_schema

from envmill.flows.cli.support import CommandError, echo_error, fail
from envmill.flows.preflight import resolve_data_dir  # the data folder as every command resolves it

# the checkout links it to the root file; a wheel ships a copy
PREFECT_FILE = Path(__file__).with_name("prefect.yaml")
WORK_POOL_TYPE = "process"
BLOCK_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
# what this module reads of an entry; anything else would register differently from
# `prefect deploy`, so it is refused rather than ignored
READ_KEYS = {"name", "description", "tags", "entrypoint", "schedules", "parameters", "work_pool"}
SCHEDULE_KEYS = {"cron", "interval", "timezone"}


class DeploymentError(ValueError):
    """A prefect.yaml entry this module cannot build; one line naming the entry."""


def read_specs(path: Path | None = None) -> list[dict[str, Any]]:
    """The ``deployments`` of a prefect.yaml (the checkout's by default; anchors and ``<<``
    merges resolved by YAML)."""
    path = path or PREFECT_FILE
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DeploymentError(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        said = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise DeploymentError(f"{path} is not valid YAML ({where}{said})") from None
    specs = loaded.get("deployments") if isinstance(loaded, dict) else None
    if not isinstance(specs, list) or not all(isinstance(spec, dict) for spec in specs):
        raise DeploymentError(f"{path} has no list of deployments")
    return specs


def default_work_pool(specs: list[dict[str, Any]]) -> str:
    """The one work pool the specs name."""
    pools = {(spec.get("work_pool") or {}).get("name") for spec in specs}
    if len(pools) != 1 or None in pools:
        raise DeploymentError(f"the deployments name {len(pools)} work pools, not one")
    return pools.pop()


def to_schedule(spec: dict[str, Any]) -> Schedule:
    """A ``cron`` or ``interval`` (seconds) entry, with its ``timezone``, as ``prefect deploy``
    reads it."""
    if unread := sorted(set(spec) - SCHEDULE_KEYS):
        raise DeploymentError(f"a schedule has keys this module does not read: {unread}")
    timezone = spec.get("timezone")
    if "cron" in spec:
        return Cron(spec["cron"], timezone=timezone)
    if "interval" in spec:
        return Interval(timedelta(seconds=spec["interval"]), timezone=timezone)
    raise DeploymentError(f"a schedule is neither a cron nor an interval: {spec}")


def build_deployment(
    spec: dict[str, Any], data_dir: str | None = None, workdir: Path | None = None
) -> RunnerDeployment:
    """One prefect.yaml entry as a RunnerDeployment: its flow loaded by Prefect's own loader,
    its schedules and its parameters checked against the flow's parameter schema; ``data_dir``
    pins the data folder.
    The runs start in ``workdir`` (default: the current folder)."""
    name = spec.get("name", "?")
    unread = sorted(set(spec) - READ_KEYS) + sorted(set(spec.get("work_pool") or {}) - {"name"})
    if unread:
        raise DeploymentError(f"deployment {name}: keys this module does not read: {unread}")
    try:
        flow = load_flow_from_entrypoint(spec["entrypoint"], use_placeholder_flow=False)
        parameters = dict(spec.get("parameters") or {})
        if data_dir is not None:
            parameters["data_dir"] = str(resolve_data_dir(data_dir))
        deployment = flow.to_deployment(
            name=name,
            description=spec.get("description"),
            tags=spec.get("tags"),
            parameters=parameters,
            schedules=[to_schedule(schedule) for schedule in spec.get("schedules") or []],
            entrypoint_type=EntrypointType.MODULE_PATH,
        )
        # what the API checks on registration (enforce_parameter_schema), checked here first
        jsonschema.validate(parameters, parameter_schema(flow).model_dump_for_openapi())
    except DeploymentError as exc:
        raise DeploymentError(f"deployment {name}: {exc}") from None
    except jsonschema.ValidationError as exc:
        where = ".".join(str(part) for part in exc.absolute_path) or "parameters"
        raise DeploymentError(f"deployment {name}: {where}: {exc.message}") from None
    except Exception as exc:  # a missing flow, a bad cron or parameter: one line per entry
        said = " ".join(str(exc).split())  # pydantic's errors span lines
        raise DeploymentError(f"deployment {name}: {type(exc).__name__}: {said}") from None
    deployment.storage = LocalStorage(str(workdir or Path.cwd()))
    return deployment


def build_deployments(
    data_dir: str | None = None, path: Path | None = None
) -> list[RunnerDeployment]:
    """Every deployment of the prefect.yaml: the nightly corpus run, a small smoke run and the
    nightly retry of failed llm topics."""
    return [build_deployment(spec, data_dir) for spec in read_specs(path)]


def key_reference(block: str) -> dict[str, Any]:
    """Job variables that hand a run the LLM key of a Secret block, as a reference the worker
    resolves when the run starts (Prefect stores the reference, not the key)."""
    if not BLOCK_NAME.fullmatch(block):
        raise DeploymentError(f"not a block name: {block!r} (lowercase letters, digits, dashes)")
    return {"env": {"OPENAI_API_KEY": "{{ prefect.blocks.secret." + block + " }}"}}


app = typer.Typer(
    help="Serve envmill's scheduled runs, or register them on a Prefect work pool.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
DataDir = Annotated[
    str | None,
    typer.Option("--data-dir", help="data folder of every run [on the runs' side: ENVMILL_HOME, "
                 "./envmill-data]"),
]  # fmt: skip


@app.command()
def serve(data_dir: DataDir = None) -> None:
    """Register the deployments and run their flow runs in this process until stopped."""
    from prefect import serve as prefect_serve

    from envmill.deployments.checks import require_api, require_unpooled
    from envmill.flows.runtime.served import mark_served_runs

    deployments = _built(data_dir)
    require_api()
    require_unpooled([deployment.full_name for deployment in deployments])
    mark_served_runs()  # they end with this process, kill -9 too
    prefect_serve(*deployments)


@app.command()
def register(
    work_pool: Annotated[
        str | None, typer.Option("--work-pool", help="a process work pool [prefect.yaml's]")
    ] = None,
    data_dir: DataDir = None,
    llm_key_block: Annotated[
        str | None,
        typer.Option(help="a Secret block with the LLM key [the worker's OPENAI_API_KEY]"),
    ] = None,
) -> None:
    """Register the deployments on a work pool; a worker started on it runs them."""
    from envmill.deployments.checks import require_api, require_pool, require_secret

    try:
        specs = read_specs()
        pool = work_pool or default_work_pool(specs)
        job_variables = key_reference(llm_key_block) if llm_key_block else {}
    except DeploymentError as exc:
        fail(str(exc))
    deployments = _built(data_dir)
    require_api()
    require_pool(pool, WORK_POOL_TYPE)
    if llm_key_block:
        require_secret(llm_key_block)
    for deployment in deployments:
        deployment.work_pool_name = pool
        deployment.job_variables = job_variables
        try:
            deployment.apply()
        except Exception as exc:  # the API refused it: one line, not a traceback
            fail(f"registering {deployment.full_name}: {' '.join(str(exc).split())}")
        typer.echo(f"registered {deployment.full_name} on work pool '{pool}'", err=True)
    typer.echo(
        f"runs start in {Path.cwd()}; start a worker with their environment (OPENAI_API_KEY, "
        f"ENVMILL_*): prefect worker start --pool {pool}",
        err=True,
    )


def _built(data_dir: str | None) -> list[RunnerDeployment]:
    try:
        return build_deployments(data_dir)
    except DeploymentError as exc:
        fail(str(exc))


def main() -> None:
    """One line on stderr and exit 2 for what the user can fix."""
    try:
        app(standalone_mode=False)
    except CommandError as exc:
        echo_error(str(exc))
        sys.exit(exc.code)
    except typer.Abort:
        sys.exit(130)
    except Exception as exc:  # typer's usage errors: still one line
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            echo_error(exc.format_message())
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
