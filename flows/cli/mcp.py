"""``envmill mcp``: one environment's tools over MCP, on one of its certified scenarios.

stdio by default (stdout carries the protocol only; every word for a person goes to stderr);
with ``--port``, streamable HTTP on 127.0.0.1. The logic is ``envmill.tasks.serving``'s.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from envmill.flows.cli.support import fail

ID = re.compile(r"[0-9a-f]{16}")


def mcp(
    env_id: Annotated[str, typer.Argument(help="the environment to serve (its env_id)")],
    scenario: Annotated[
        str | None,
        typer.Option(help="the certified scenario to start from [the first by id]"),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="data folder [ENVMILL_HOME, ./envmill-data]")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(help="serve streamable HTTP on 127.0.0.1:PORT/mcp (0: a free port) [stdio]"),
    ] = None,
    control_token: Annotated[
        str | None,
        typer.Option(
            envvar="ENVMILL_MCP_CONTROL_TOKEN",
            help="what calls of reset_scenario, reward and next_message must carry (the "
            "trainer's, never the agent's) [a random one, shown on stderr]",
        ),
    ] = None,
    max_sessions: Annotated[
        int, typer.Option(help="HTTP sessions held at once, each with a sandbox host")
    ] = 32,
    include_source: Annotated[
        list[str] | None,
        typer.Option("--include-source", help="serve a benchmark's held-out scenarios too"),
    ] = None,
) -> None:
    """Serve an environment's tools over MCP (the trainer's reset_scenario, reward and
    next_message answer calls that carry the control token)."""
    try:
        import mcp as _sdk  # noqa: F401
    except ImportError:
        fail("envmill mcp needs the MCP SDK: pip install 'envmill[mcp]'")
    from envmill.flows.cli.warehouse import _data_dir

    if port is not None and not 0 <= port <= 65535:
        fail(f"--port {port}: not a TCP port (0 to 65535)")
    if max_sessions < 1:
        fail(f"--max-sessions {max_sessions}: at least 1")
    if control_token is not None and len(control_token) < 8:
        fail("--control-token: at least 8 characters (an agent must not guess it)")
    root = _data_dir(out)
    specs, first = served_scenarios(root, env_id, scenario, tuple(include_source or ()))
    token = control_token or _new_token()
    _serve(specs, first, port, token, max_sessions)


def _new_token() -> str:
    """A control token for this server, told to the person who started it (stderr)."""
    import secrets

    token = secrets.token_urlsafe(16)
    print(f"envmill mcp: control token {token}", file=sys.stderr, flush=True)
    return token


def served_scenarios(
    root: Path, env_id: str, scenario: str | None, include_sources: tuple[str, ...] = ()
) -> tuple[dict[str, Any], str]:
    """The certified scenarios of ``env_id`` an agent alone can play (as episode specs, by id)
    and the one to open: not conversational ones (no simulated user answers over MCP: serve
    them with ``envmill serve-env``), nor a benchmark's unless its source is included."""
    from envmill.schemas.benchmarks import SYNTHETIC_SOURCE
    from envmill.schemas.rollout import RolloutSettings
    from envmill.tasks.rollout.plan import episode_specs
    from envmill.warehouse.episodes import environment_scenarios, scenario_rows

    statuses = environment_scenarios(root, env_id) if ID.fullmatch(env_id) else None
    if statuses is None:
        fail(f"no environment {env_id!r} in {root}")
    certified = sorted(sid for sid, status in statuses.items() if status == "certified")
    if scenario is not None and scenario not in certified:
        fail(_not_served(root, env_id, scenario, statuses.get(scenario)))
    if not certified:
        fail(f"environment {env_id} has no certified scenario in {root}")
    rows = scenario_rows(root, certified)
    every = {spec.scenario_id: spec for spec in episode_specs(rows, {}, RolloutSettings())}
    sources = {SYNTHETIC_SOURCE, *include_sources}
    specs = {
        sid: spec
        for sid, spec in every.items()
        if spec.scenario.mode == "non_conversational" and spec.scenario.source in sources
    }
    if scenario is not None and scenario not in specs:
        why = every[scenario].scenario
        fail(
            f"scenario {scenario} is conversational: serve it with envmill serve-env"
            if why.mode == "conversational"
            else f"scenario {scenario} is {why.source}'s, held out: --include-source {why.source}"
        )
    if not specs:
        fail(f"environment {env_id} has no certified scenario an agent alone can play here")
    return specs, scenario or min(specs)


def _not_served(root: Path, env_id: str, scenario: str, status: str | None) -> str:
    """Why ``scenario`` cannot be served as one of ``env_id``'s, in one line."""
    from envmill.warehouse.episodes import scenario_environment

    if status is not None:
        return f"scenario {scenario} is {status}, not certified: only certified ones are served"
    other = scenario_environment(root, scenario) if ID.fullmatch(scenario) else None
    if other is not None:
        return f"scenario {scenario} belongs to environment {other}, not {env_id}"
    return f"no scenario {scenario!r} in {root}"


def _serve(
    specs: dict[str, Any], first: str, port: int | None, token: str, max_sessions: int
) -> None:
    """Open the sandbox and serve until the client hangs up (stdio) or Ctrl-C (HTTP)."""
    import anyio

    from envmill.schemas.settings import load_settings
    from envmill.tasks.sandbox.shared import process_sandbox
    from envmill.tasks.serving import ToolSession
    from envmill.tasks.serving.mcp_server import (
        OWN_TOOLS,
        SessionPool,
        build_server,
        serve_http,
        serve_stdio,
    )

    settings = load_settings()
    if settings.reward.judge != "rules":
        typer.echo("warning: envmill mcp judges replies by envmill's rules", err=True)
    clash = sorted(
        {t["function"]["name"] for spec in specs.values() for t in spec.tools} & set(OWN_TOOLS)
    )
    if clash:
        fail(f"the environment has tools named like envmill's own: {', '.join(clash)}")
    sandbox = process_sandbox(settings.sandbox)
    pool = SessionPool(lambda: ToolSession(specs, sandbox, first), max_sessions)
    intro = ToolSession(specs, sandbox, first).introduction()
    spec = specs[first]
    name = f"envmill-{spec.domain or spec.scenario.env_id}"
    server = build_server(pool, name, token, _instructions(intro))
    try:
        if port is None:
            anyio.run(serve_stdio, server)
        else:
            serve_http(server, port, ready=_say_listening)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the normal way to stop a server
        typer.echo("envmill mcp: stopped", err=True)
    except OSError as exc:  # the port is taken, say
        fail(f"--port {port}: {exc.strerror or exc}")
    finally:
        pool.close()


def _instructions(intro: dict[str, Any]) -> str:
    said = f"Scenario {intro['scenario_id']}. The user's request:\n{intro['task']}"
    return f"{intro['system']}\n\n{said}"


def _say_listening(port: int) -> None:
    print(f"envmill mcp: serving http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
