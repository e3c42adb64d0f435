"""``envmill dedupe``: recompute near-duplicates over the whole corpus at the current thresholds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from envmill.flows.cli.support import fail


def dedupe(
    out: Annotated[
        Path | None, typer.Option("--out", help="data folder [ENVMILL_HOME, ./envmill-data]")
    ] = None,
) -> None:
    """Compare every environment, task and initial state with every other (thresholds:
    [dedupe] settings); the pairs replace earlier passes in the ``duplicates`` table."""
    from envmill.flows.cli.warehouse import _data_dir
    from envmill.flows.dedupe import dedupe_corpus
    from envmill.flows.progress import set_reporter
    from envmill.schemas.settings import SettingsError, load_settings
    from envmill.warehouse.lock import FolderBusy
    from envmill.warehouse.store import WarehouseError

    root = _data_dir(out)
    try:
        settings = load_settings(home=root)
    except SettingsError as exc:
        fail(str(exc))
    set_reporter(print_dedupe_progress)
    try:
        summary = dedupe_corpus(settings, root)
    except (FolderBusy, WarehouseError) as exc:
        fail(str(exc))
    finally:
        set_reporter(None)
    typer.echo(
        f"{summary['duplicates']} duplicate pairs recorded in {summary['dedupe_seconds']:.1f} s "
        f"(run {summary['run_id']}); rates: envmill stats --out {root}"
    )


def print_dedupe_progress(event: str, details: dict[str, Any]) -> None:
    """One line per step of a dedupe pass, on stderr (the run's progress bar uses it too)."""
    if event == "dedupe_read":
        typer.echo(
            f"dedupe: {details['environments']} environments, {details['scenarios']} certified "
            "scenarios",
            err=True,
        )
    elif event == "dedupe_failed":
        typer.echo(
            f"dedupe failed (a failures row; envmill dedupe reruns it): {details['error']}",
            err=True,
        )
    elif event == "dedupe_cache":
        typer.echo(f"dedupe: {details['problem']} (the next pass shingles again)", err=True)
    elif event == "dedupe":
        typer.echo(
            f"dedupe: {details['measure']} compared over {details['items']} items in "
            f"{details['seconds']:.2f} s",
            err=True,
        )
