"""``envmill env check`` and ``envmill env call``: the runtime, by hand, on one module."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from envmill.flows.cli.support import (
    echo_error,
    fail,
    load_json_file,
    non_finite_at,
    parse_json_object,
    print_json,
    read_source,
)

if TYPE_CHECKING:
    from envmill.schemas.scenario import ScenarioSpec

app = typer.Typer(help="Check an environment module or call one of its tools, in the sandbox.")


def _sandbox():
    from envmill.schemas.settings import SettingsError, load_settings
    from envmill.tasks.sandbox import Sandbox

    try:
        return Sandbox(load_settings().sandbox)
    except SettingsError as exc:
        fail(str(exc))


def _prepare(source: str, sandbox):
    from envmill.tasks.envs import EnvironmentRejected, admit_environment

    try:
        return admit_environment(source, sandbox)
    except EnvironmentRejected as exc:
        print_json(
            {
                "ok": False,
                "stage": exc.stage,
                "reason": exc.reason,
                "violations": [v.model_dump() for v in exc.violations],
            }
        )
        echo_error(f"rejected at {exc.stage}: {exc.reason}")
        raise typer.Exit(1) from None


@app.command("check")
def check(file: Annotated[Path, typer.Argument(help="environment module (.py)")]) -> None:
    """Policy, contract, load and probe calls in the sandbox; print the schemas as JSON."""
    source = read_source(file)
    with _sandbox() as sandbox:
        env = _prepare(source, sandbox)
        print_json(
            {
                "ok": True,
                "env_id": env.env_id,
                "class_name": env.class_name,
                "isolation": sandbox.isolation,
                "checked": env.checked,
                "warnings": [str(warning) for warning in env.warnings],
                "tool_kinds": env.tool_kinds,
                "tools": [t.model_dump() for t in env.tools],
                "state_schema": env.state_schema,
                "default_state": env.default_state,
            }
        )


@app.command("call")
def call(
    file: Annotated[Path, typer.Argument(help="environment module (.py)")],
    tool: Annotated[str, typer.Argument(help="tool (public method) to call")],
    args: Annotated[str, typer.Option("--args", help="arguments: JSON object or @file")] = "{}",
    state: Annotated[
        str | None, typer.Option("--state", help="initial state: JSON object or @file")
    ] = None,
) -> None:
    """One tool call in the sandbox; print the result and the state diff as JSON."""
    from envmill.tasks.core.statekit import diff_states, state_hash

    source = read_source(file)
    arguments = parse_json_object(args, "--args")
    initial = parse_json_object(state, "--state") if state is not None else None
    with _sandbox() as sandbox:
        env = _prepare(source, sandbox)
        if tool not in env.tool_kinds:
            fail(f"{env.class_name} has no tool {tool!r} (tools: {', '.join(env.tool_kinds)})")
        with sandbox.episode(env.source, env.class_name, initial) as episode:
            if not episode.loaded:
                fail(f"the state does not load: {episode.load_outcome.error}", code=1)
            before = episode.state()
            outcome = episode.call(tool, arguments)
        if not outcome.ok:
            fail(f"the call was stopped ({outcome.error_class}): {outcome.error}", code=1)
        print_json(
            {
                "result": outcome.result,
                "diff": diff_states(before, outcome.state),
                "state_hash": state_hash(outcome.state or {}),  # ok: the host sent one
            }
        )


@app.command("certify")
def certify(
    file: Annotated[Path, typer.Argument(help="environment module (.py)")],
    scenarios: Annotated[Path, typer.Argument(help="a scenario JSON object, or a list of them")],
) -> None:
    """Certify hand-written scenarios against a module; print each gate's verdict as JSON.

    Exit code 0 when every scenario is certified, 1 when any is rejected.
    """

    from envmill.tasks.certify import certify_scenario

    items = load_json_file(scenarios)
    items = items if isinstance(items, list) else [items]
    if not items:
        fail(f"{scenarios} holds no scenario: give a scenario object or a non-empty list")
    with _sandbox() as sandbox:
        env = _prepare(read_source(file), sandbox)
        verdicts = []
        for number, item in enumerate(items, 1):
            spec = _parsed(item, env.env_id, f"{scenarios}: scenario {number}")
            if isinstance(spec, str):
                verdicts.append({"scenario": number, **_rejected_unread(spec)})
                continue
            try:
                report = certify_scenario(spec, env, sandbox)
            except Exception as exc:  # a record the parse let through: this scenario only
                problem = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                echo_error(f"{scenarios}: scenario {number} rejected: {problem}")
                verdicts.append({"scenario": number, **_rejected_unread(problem)})
                continue
            verdicts.append(
                {
                    "scenario_id": report.scenario_id,
                    "status": report.status,
                    "rejected_gate": report.rejected_gate,
                    "gates": [g.model_dump() for g in report.gates],
                    "check_results": report.check_results,
                }
            )
    print_json(verdicts)
    if any(v["status"] != "certified" for v in verdicts):
        raise typer.Exit(1)


def _parsed(item: Any, env_id: str, name: str) -> ScenarioSpec | str:
    """The scenario, or (said on stderr too) the one line naming it and the field at fault: a
    malformed one is rejected, the others are still certified."""
    from pydantic import ValidationError

    from envmill.schemas.scenario import ScenarioSpec, first_problem

    try:
        if not isinstance(item, dict):
            raise TypeError(f"not a JSON object but {type(item).__name__}")
        if (where := non_finite_at(item)) is not None:  # json reads NaN, nothing writes it
            raise ValueError(f"{where} is not a finite number")
        spec = ScenarioSpec(**{"env_id": env_id, **item})
        spec.scenario_id  # noqa: B018 - its canonical JSON must encode (no lone surrogate)
        return spec
    except ValidationError as exc:
        problem = first_problem(exc)
    except (TypeError, ValueError, ArithmeticError) as exc:  # UnicodeError is a ValueError
        problem = f"{type(exc).__name__}: {exc}"[:300]
    echo_error(f"{name} rejected: {problem}")
    return problem


def _rejected_unread(problem: str) -> dict[str, Any]:
    """The verdict of a scenario that did not parse: rejected at ``loads``, for the reason."""
    return {
        "status": "rejected",
        "rejected_gate": "loads",
        "gates": [{"gate": "loads", "passed": False, "reason": problem}],
        "check_results": [],
    }
