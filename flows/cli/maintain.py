"""``envmill verify`` and ``compact``: commands that check, mend and tidy a data folder (they take
its lock)."""

from __future__ import annotations

from typing import Annotated

import typer

from envmill.flows.cli.support import fail
from envmill.flows.cli.warehouse import OutOption, _data_dir


def verify(
    out: OutOption = None,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="retract damaged commits (their items are redone by the next run), move "
            "unlisted files to _quarantine/, delete temporary files",
        ),
    ] = False,
) -> None:
    """Check every commit against its parts, every part against its table, every file against
    the commits; exit 1 if anything is damaged and was not repaired (what a killed compaction or
    write left, which the next command completes, is a warning)."""
    from envmill.flows.run_record import settle_abandoned_runs
    from envmill.warehouse.lock import FolderBusy, folder_lock
    from envmill.warehouse.verify import verify as check

    root = _data_dir(out)
    try:
        with folder_lock(root, "envmill verify"):
            report = check(root, repair=repair)
            settled = settle_abandoned_runs(root) if repair else []
    except FolderBusy as exc:
        fail(str(exc))
    damaged = [finding for finding in report.findings if not finding.repairable]
    for finding in report.findings:
        typer.echo(finding.line() if not finding.repairable else f"warning: {finding.line()}")
    for run_id in settled:
        typer.echo(f"runs/{run_id}: was left running by a process that is gone (now interrupted)")
    unfinished = len(report.findings) - len(damaged)
    summary = (
        f"{report.commits} commits, {report.parts} parts, {report.rows} rows checked; "
        f"{len(damaged)} problem(s)"
        + (f", {unfinished} unfinished write(s) the next command completes" if unfinished else "")
    )
    if repair and report.findings:
        summary += f"; repaired; the next `envmill run` redoes {report.redo_items} item(s)"
    typer.echo(summary, err=True)
    if damaged and not repair:  # a killed compaction is no reason to page anyone (issue 24)
        raise typer.Exit(1)


def compact(out: OutOption = None) -> None:
    """Merge each table's small parts into few large ones (queries see the same rows throughout;
    a rerun still skips what is done); exit 1 if a table was left as it was."""
    from envmill.warehouse.compact import compact as merge_parts
    from envmill.warehouse.lock import FolderBusy, folder_lock

    root = _data_dir(out)
    try:
        with folder_lock(root, "envmill compact"):
            report = merge_parts(root)
    except FolderBusy as exc:
        fail(str(exc))
    for line in report.finished:
        typer.echo(line)
    for table in report.tables:
        if table.parts_before or table.problem:
            typer.echo(table.line())
    merged = sum(t.parts_before - t.parts_after for t in report.tables)
    typer.echo(f"{merged} parts fewer in {report.seconds:.1f} s", err=True)
    if any(table.problem for table in report.tables):
        raise typer.Exit(1)
