"""The ``envmill`` command. Each group lives in its own module; heavy imports stay lazy."""

from __future__ import annotations

import atexit
import functools
import gc
import sys
import warnings

import typer

from envmill.flows.cli import (
    benchmarks,
    dedupe,
    doctor,
    env,
    export,
    filter,
    llm,
    maintain,
    mcp,
    report_html,
    rollout,
    run,
    serve_env,
    topics,
    warehouse,
)
from envmill.flows.cli.support import CommandError, echo_error
from envmill.flows.runtime.interrupt import was_interrupted, was_terminated, watch_for_interrupt
from envmill.flows.timeline import mark
from envmill.warehouse.space import DiskFull, is_disk_full

app = typer.Typer(
    name="envmill",
    help="Synthesize tool-interactive environments, certified scenarios and trajectories.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("run")(run.run)
app.command("retry-failed")(run.retry_failed)
app.command("rollout")(rollout.rollout)
app.command("serve-env")(serve_env.serve_env)
app.command("stats")(warehouse.stats)
app.command("sql")(warehouse.sql)
app.command("runs")(warehouse.runs)
app.command("show")(warehouse.show)
app.command("verify")(maintain.verify)
app.command("compact")(maintain.compact)
app.command("doctor")(doctor.doctor)
app.command("report")(report_html.report)
app.command("export")(export.export)
app.command("filter")(filter.filter_trajectories)
app.command("dedupe")(dedupe.dedupe)
app.command("eval")(benchmarks.evaluate)
app.command("mcp")(mcp.mcp)
app.add_typer(benchmarks.import_app, name="import")
app.add_typer(env.app, name="env")
app.add_typer(llm.app, name="llm")
app.add_typer(topics.app, name="topics")


INTERRUPTED = 130
TERMINATED = 143  # 128 + SIGTERM, as a shell reports it


def main() -> None:
    """Console entry point: user errors become one line on stderr and a non-zero exit."""
    mark("cli_imported")
    _skip_the_last_collections()
    watch_for_interrupt()
    warnings.showwarning = _show_warning
    try:
        returned = app(standalone_mode=False)  # typer hands back Exit codes, 130 for Ctrl-C
    except CommandError as exc:
        echo_error(str(exc))
        sys.exit(exc.code)
    except typer.Exit as exc:
        returned = exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        returned = INTERRUPTED
    except Exception as exc:  # usage errors and anything unforeseen: still one line
        if not was_interrupted(exc):  # else a library turned our signal into its own error
            _exit_with(exc)
        returned = INTERRUPTED
    if returned == INTERRUPTED and was_terminated():
        echo_error("terminated; finished batches are kept, rerun the same command to resume")
        returned = TERMINATED
    elif returned == INTERRUPTED:
        echo_error("interrupted; finished batches are kept, rerun the same command to resume")
    if isinstance(returned, int) and returned:
        sys.exit(returned)


@functools.cache  # once per process, however often main() is called in it
def _skip_the_last_collections() -> None:
    """At exit, after every other hook (the first registered runs last), freeze what is left:
    the interpreter's closing collections walked every object a run's imports made, about half a
    second of CPU per command, to free memory the exit frees anyway."""
    atexit.register(gc.freeze)


def _disk_full_message(exc: BaseException | None) -> str:
    """DiskFull's own words when the run raised it, else the kernel's (a write elsewhere)."""
    while exc is not None and not isinstance(exc, DiskFull):
        exc = exc.__cause__ or exc.__context__
    if exc is not None:
        return str(exc)
    return "the disk is full (no space left on device); finished batches are kept: free some \
space and rerun the same command to resume"


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning is one line for a person, not a source excerpt."""
    echo_error(str(message), prefix="warning")


def _exit_with(exc: Exception) -> None:
    format_message, exit_code = getattr(exc, "format_message", None), getattr(exc, "exit_code", 1)
    if callable(format_message) and hasattr(exc, "exit_code"):  # typer's click errors
        echo_error(str(format_message()))
        sys.exit(exit_code)
    if is_disk_full(exc):
        echo_error(_disk_full_message(exc))
        sys.exit(1)
    echo_error(f"{type(exc).__name__}: {exc}")
    sys.exit(1)
