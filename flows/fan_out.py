"""Fan a run's batches out and gather them: the part every run shares, whatever a batch does.

Batches are submitted a window at a time and gathered as they finish; a batch whose retries
are spent becomes a failure row committed with the items it did not make (a later batch that
makes them supersedes it); a full disk ends the run at once, since every batch after it would
fail the same way.
"""

from __future__ import annotations

import queue
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture

from envmill.flows.progress import report
from envmill.flows.runtime.interrupt import was_interrupted
from envmill.flows.runtime.watchdog import Watch, dask_workers
from envmill.tasks.pipeline import failure_of
from envmill.warehouse.resume import CommitIndex, FinishedItems
from envmill.warehouse.rows import failure_row, write_failed_batch
from envmill.warehouse.space import DiskFull, is_disk_full
from envmill.warehouse.store import Warehouse
from envmill.warehouse.verify import sweep

BATCH_RETRIES = 1


class Batch(Protocol):
    key: str


B = TypeVar("B", bound=Batch)


def finished_items(root: Path) -> FinishedItems:
    """First set aside what no commit lists; then what is done, each batch checked against its
    commit record when the plan reaches its items."""
    index = CommitIndex(root)
    for finding in sweep(root, index):
        report("set_aside", reason=finding.line())
    return FinishedItems(root, index)


def gather(
    batches: Iterator[B],
    submit: Callable[[B], PrefectFuture],
    window: int,
    items_of: Callable[[B], list[str]],
    *,
    data_dir: str,
    run_id: str,
    stall_seconds: float,
) -> dict[str, Any]:
    """Run ``batches`` through ``submit`` and add up what each reports (``counts``,
    ``seconds``); ``items_of`` names a batch's item keys for its failure record. With no batch
    finished and no worker alive for ``stall_seconds``, the run ends (``RunStalled``)."""
    counts, seconds, submitted = Counter(), Counter(), 0
    watch = Watch(stall_seconds, dask_workers(_task_runner()))
    for batch, future in in_windows(batches, submit, window, watch):
        submitted += 1
        items = items_of(batch)
        try:
            result = future.result()
        except Exception as exc:  # the batch's own retries are spent: record it, keep going
            if is_disk_full(exc):
                raise DiskFull(Path(data_dir)) from exc
            record_failed_batch(data_dir, run_id, batch.key, items, exc)
            counts["failed_batches"] += 1
            report("batch_failed", items=len(items), error=str(exc))
            continue
        if not result.get("published", True) and not was_interrupted():
            # the run was not stopped, yet its worker found it gone: the items are not done
            lost = UnpublishedBatch()
            record_failed_batch(data_dir, run_id, batch.key, items, lost)
            counts["failed_batches"] += 1
            report("batch_failed", items=len(items), error=str(lost))
            continue
        counts.update(result["counts"])
        seconds.update(result["seconds"])
        report("batch_done", items=len(items), counts=result["counts"])
    return {"batches": submitted, "counts": dict(counts), "work_seconds": dict(seconds)}


class UnpublishedBatch(RuntimeError):
    """A batch made but not published by a worker that took its live run for a stopped one."""

    def __init__(self) -> None:
        super().__init__("the batch was made but not published: its worker found no live run")


def in_windows(
    batches: Iterator[B],
    submit: Callable[[B], PrefectFuture],
    window: int,
    watch: Watch | None = None,
) -> Iterator[tuple[B, PrefectFuture]]:
    """Yield ``(batch, future)`` as futures finish, keeping at most ``window`` submitted: a
    plan of a million items never sits in the scheduler (or in memory) at once.

    Ctrl-C or SIGTERM ends the wait even when the library it landed in swallowed it (a submit
    it cut short leaves a future that never finishes)."""
    finished: queue.SimpleQueue[PrefectFuture] = queue.SimpleQueue()
    in_flight: dict[PrefectFuture, B] = {}

    def fill() -> None:
        while len(in_flight) < window and (batch := next(batches, None)) is not None:
            future = submit(batch)
            in_flight[future] = batch
            future.add_done_callback(finished.put)

    fill()
    while in_flight:
        if was_interrupted():
            raise KeyboardInterrupt
        try:
            future = finished.get(timeout=0.5)
        except queue.Empty:
            if watch is not None:
                watch.check()
            continue
        if watch is not None:
            watch.progressed()
        yield in_flight.pop(future), future
        fill()


def _task_runner() -> Any:
    """The flow's task runner (Dask in a run), whose scheduler the watch asks about workers."""
    context = FlowRunContext.get()
    return context.task_runner if context is not None else None


def record_failed_batch(
    data_dir: str, run_id: str, key: str, items: list[str], exc: Exception
) -> None:
    failure = failure_of("batch", key, exc, attempts=BATCH_RETRIES + 1)
    write_failed_batch(Warehouse(data_dir), failure_row(failure, run_id), key, items, run_id)
