"""``envmill report``: the corpus's figures as one self-contained HTML page (read-only)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Annotated

import typer

from envmill.flows.cli.support import fail
from envmill.flows.cli.warehouse import OutOption, _data_dir

RUNS_SQL = "SELECT run_id, status, started_at FROM runs ORDER BY started_at"


def report(
    to: Annotated[Path, typer.Option("--to", help="the HTML file to write", dir_okay=False)],
    run: Annotated[
        str | None,
        typer.Option("--run", help="only this run's rows (default: every run in the folder)"),
    ] = None,
    out: OutOption = None,
) -> None:
    """Write the corpus report: tools, state, scenarios, funnel, failures, LLM cost, diversity."""
    from envmill.warehouse.report.build import UnknownRun, build_report, render_report

    root = _data_dir(out)
    try:
        page = render_report(build_report(root, run))
    except UnknownRun as exc:
        fail(f'{exc}; list the runs with: envmill sql "{RUNS_SQL}" --out {root}')
    _write_atomic(to, page)
    typer.echo(f"wrote {to}", err=True)


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it: never a half page."""
    temporary = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror}")
    finally:
        temporary.unlink(missing_ok=True)
