"""``envmill serve-env``: the certified scenarios of a data folder behind OpenEnv's HTTP API.

The command only chooses and checks (the folder, ``--where``, the port, a user model for
conversational scenarios); the server is ``tasks/serving/openenv``.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Annotated

import typer

from envmill.flows.cli.support import fail


def serve_env(
    out: Annotated[
        Path | None, typer.Option("--out", help="data folder [ENVMILL_HOME, ./envmill-data]")
    ] = None,
    port: Annotated[int, typer.Option(help="TCP port", min=1, max=65535)] = 8000,
    host: Annotated[str, typer.Option(help="address to listen on (loopback by default)")] = (
        "127.0.0.1"
    ),
    where: Annotated[
        str,
        typer.Option(
            help="SQL condition on certified scenarios, as `rollout --scenarios`, e.g. "
            "\"domain = 'banking'\" [all]"
        ),
    ] = "",
    max_sessions: Annotated[
        int, typer.Option(help="sessions (episodes) at once; one more is refused", min=1)
    ] = 8,
    idle_timeout: Annotated[
        float, typer.Option(help="seconds a session may stay silent before it is ended", min=1)
    ] = 300.0,
    include_source: Annotated[
        list[str] | None,
        typer.Option(help="also serve a benchmark's scenarios (e.g. bfcl); repeatable"),
    ] = None,
    local_llm: Annotated[
        bool,
        typer.Option(
            "--local-llm",
            help="envmill's offline model plays the simulated user of conversational scenarios",
        ),
    ] = False,
) -> None:
    """Serve certified scenarios over OpenEnv's HTTP API (reset, step, state; one WebSocket
    session per episode)."""
    from envmill.flows.cli.rollout import _model_endpoint
    from envmill.flows.cli.warehouse import _data_dir
    from envmill.schemas.settings import SettingsError, load_settings

    _check_extra()
    root = _data_dir(out)
    try:
        settings = load_settings(home=root)
    except SettingsError as exc:
        fail(str(exc))
    specs = _chosen_specs(root, where, settings, include_source or [])
    _check_port(host, port)
    ids = [spec.scenario_id for spec in specs]
    with _model_endpoint(settings, root, ids, local_llm) as running:
        _serve(running, root, specs, host, port, max_sessions, idle_timeout)


def _serve(settings, root: Path, specs, host, port, max_sessions, idle_timeout) -> None:
    from envmill.flows.preflight import PlanError, check_endpoint
    from envmill.rl import llm_user
    from envmill.tasks.sandbox.shared import process_sandbox
    from envmill.tasks.serving.openenv import ScenarioPool, build_app, serve

    user = None
    if any(spec.scenario.mode == "conversational" for spec in specs):
        try:
            check_endpoint(settings, root)
        except PlanError as exc:
            fail(
                f"{exc} (conversational scenarios need a user model: --local-llm, or --where "
                "\"mode = 'non_conversational'\")"
            )
        user = llm_user(settings, root)
    sandbox = process_sandbox(settings.sandbox)
    pool = ScenarioPool(specs, sandbox, settings.rollout, user=user, max_open=max_sessions)
    app = build_app(pool, max_sessions=max_sessions, idle_seconds=idle_timeout)
    typer.echo(
        f"serving {len(specs)} certified scenarios on http://{host}:{port} "
        f"(OpenEnv API, {max_sessions} sessions at most); Ctrl-C stops",
        err=True,
    )
    serve(app, port, host)


def _chosen_specs(root: Path, where: str, settings, include_sources: list[str]):
    """The scenarios to serve; a condition that fails or chooses nothing is one line."""
    import duckdb

    from envmill.rl import load_episode_specs
    from envmill.warehouse.views import NotAQuery

    try:
        return load_episode_specs(root, where, settings.rollout, include_sources)
    except NotAQuery as exc:
        fail(f"--where refused: {exc}")
    except duckdb.Error as exc:
        fail(f"--where {where!r}: {str(exc).splitlines()[0]}")
    except ValueError as exc:
        fail(str(exc))


def _check_extra() -> None:
    try:
        import openenv.core  # noqa: F401
    except ImportError:
        fail("envmill serve-env needs the openenv extra: pip install 'envmill[openenv]'")


def _check_port(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # as uvicorn binds: a port whose last server just stopped (its connections in
        # TIME_WAIT) is free, not "in use" for another minute
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            fail(f"cannot listen on {host}:{port}: {exc.strerror}")
