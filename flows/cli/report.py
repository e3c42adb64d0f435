"""What a person sees of a run: a progress bar while it works and a summary table at the end."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envmill.flows.cli.dedupe import print_dedupe_progress
from envmill.flows.progress import set_reporter

console = Console(stderr=True)


class ProgressBar:
    """Items done out of planned, fed by the flow's ``report`` events; ``tally`` is the batch
    count shown beside them (certified scenarios of a synthesis, successes of a rollout)."""

    def __init__(
        self,
        doing: str = "synthesizing",
        items: str = "environments",
        unit: str = "envs",
        tally: str = "certified",
        tally_label: str = "certified scenarios",
    ) -> None:
        self.progress = Progress(
            TextColumn(f"[bold]{doing}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(f"{unit} · {{task.fields[tally]}} {tally_label}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.items, self.tally_key = items, tally
        self.task = None
        self.tally = 0

    def __enter__(self) -> ProgressBar:
        self.progress.start()
        set_reporter(self.on_event)
        return self

    def __exit__(self, *exc: object) -> None:
        set_reporter(None)
        self.progress.stop()

    def on_event(self, event: str, details: dict[str, Any]) -> None:
        if event == "planned":
            todo = details["items"] - details["done"]
            self.task = self.progress.add_task("run", total=todo, tally=0)
            if details["done"]:
                console.print(
                    f"resuming: {details['done']} of {details['items']} {self.items} were "
                    "already done"
                )
        elif event == "redo":
            console.print(f"redoing {details['reason']}", soft_wrap=True, markup=False)
        elif event == "set_aside":
            console.print(f"found {details['reason']}", soft_wrap=True, markup=False)
        elif event.startswith("dedupe"):
            print_dedupe_progress(event, details)
        elif self.task is not None and event in ("batch_done", "batch_failed"):
            self.tally += details.get("counts", {}).get(self.tally_key, 0)
            self.progress.update(self.task, advance=details["items"], tally=self.tally)


def print_summary(root: Path, summary: dict[str, Any]) -> None:
    counts = summary.get("counts", {})
    wall = summary.get("wall_seconds", 0.0)
    table = Table(title=f"run {summary.get('run_id', '')}", show_header=True)
    table.add_column("what")
    table.add_column("this run", justify="right")
    for key in (
        "environments",
        "tools",
        "scenarios",
        "certified",
        "rejected",
        "trajectories",
        "failures",
        "duplicates",
    ):
        table.add_row(key, str(counts.get(key, 0)))
    if summary.get("resumed_items"):
        table.add_row("environments already done", str(summary["resumed_items"]))
    if summary.get("redone_batches"):
        table.add_row("damaged batches redone", str(summary["redone_batches"]))
    if counts.get("failed_batches"):
        table.add_row("batches failed", str(counts["failed_batches"]))
    table.add_row("flow time", f"{wall:.1f} s")
    if "dedupe_seconds" in summary:
        table.add_row("of it dedupe", f"{summary['dedupe_seconds']:.1f} s")
    if wall > 0:
        table.add_row("certified scenarios / s", f"{counts.get('certified', 0) / wall:.1f}")
    Console().print(table)
    folder = shlex.quote(str(root))  # a command to paste, whatever the folder is named
    console.print(f"data: {root}   next: envmill stats --out {folder}", markup=False)


def print_rollout_summary(root: Path, summary: dict[str, Any]) -> None:
    """Episodes, how they ended and how many the filters keep, with the next commands."""
    counts = summary.get("counts", {})
    wall = summary.get("wall_seconds", 0.0)
    episodes = counts.get("episodes", 0)
    table = Table(title=f"rollout {summary.get('run_id', '')}", show_header=True)
    table.add_column("what")
    table.add_column("this run", justify="right")
    table.add_row("episodes", str(episodes))
    table.add_row("successes", str(counts.get("successes", 0)))
    table.add_row("kept by the filters", str(counts.get("kept", 0)))
    for key in sorted(k for k in counts if k.startswith("ended_")):
        table.add_row(f"ended {key.removeprefix('ended_')}", str(counts[key]))
    for key, label in (
        ("failures", "episodes not run (due again)"),
        ("failed_batches", "batches failed"),
        ("llm_calls", "LLM calls"),
    ):
        if counts.get(key):
            table.add_row(label, str(counts[key]))
    if summary.get("resumed_items"):
        table.add_row("episodes already done", str(summary["resumed_items"]))
    table.add_row("flow time", f"{wall:.1f} s")
    if wall > 0:
        table.add_row("episodes / s", f"{episodes / wall:.2f}")
    Console().print(table)
    folder = shlex.quote(str(root))
    console.print(
        f"data: {root}   next: envmill export --format openai --to ./sft --out {folder}",
        markup=False,
    )
