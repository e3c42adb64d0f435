"""The ``synthesize`` flow: plan batches, fan them out, gather counts, record the run.

The flow body only maps and gathers; the work is ``tasks.pipeline.synthesize_batch`` and the
writes are ``warehouse.rows.write_batch``. The task runner (Dask) is chosen by the caller with
``synthesize.with_options(task_runner=...)``, so the flow itself is runner-agnostic.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.futures import PrefectFuture

from envmill.flows.interrupt import was_interrupted
from envmill.flows.progress import report
from envmill.flows.run_record import RunRecorder, new_run_id, settle_abandoned_runs
from envmill.schemas.run import BatchSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends import Backend, make_backend, task_threads
from envmill.tasks.pipeline import failure_of, iter_batches, synthesize_batch
from envmill.tasks.sandbox.shared import process_sandbox
from envmill.warehouse.lock import folder_lock, grant, may_write, revoke
from envmill.warehouse.resume import CommitIndex, FinishedItems, retract_superseded_failures
from envmill.warehouse.rows import failure_row, write_batch, write_failed_batch
from envmill.warehouse.space import DiskFull, is_disk_full
from envmill.warehouse.store import Warehouse
from envmill.warehouse.verify import sweep

BATCH_RETRIES = 1
_backends: dict[tuple[str, str, str], Backend] = {}
_backends_lock = threading.Lock()


def process_backend(settings: EnvmillSettings, run_id: str, data_dir: str) -> Backend:
    """One backend per worker process and run: the LLM backend's client (connections, cache,
    call records) is shared by every batch the process runs."""
    key = (settings.model_dump_json(), run_id, data_dir)
    with _backends_lock:
        if key not in _backends:
            _backends[key] = make_backend(settings, run_id=run_id, data_dir=Path(data_dir))
        return _backends[key]


@task(name="synthesize-batch", retries=BATCH_RETRIES, retry_delay_seconds=1)
def synthesize_batch_task(
    batch: BatchSpec, settings: EnvmillSettings, run_id: str, data_dir: str
) -> dict[str, Any]:
    """One batch on one worker: synthesize, then commit its parts while the run still lives."""
    root = Path(data_dir)
    if not may_write(root, run_id):
        return {"counts": {}, "seconds": {}}  # the run was stopped: nothing is published
    backend = process_backend(settings, run_id, data_dir)
    output = synthesize_batch(batch, settings, process_sandbox(settings.sandbox), backend)
    written = write_batch(Warehouse(root), output, run_id, lambda: may_write(root, run_id))
    return {"counts": output.counts() if written else {}, "seconds": output.seconds}


@flow(name="synthesize", log_prints=False)
def synthesize(
    settings: EnvmillSettings, data_dir: str, run_id: str | None = None
) -> dict[str, Any]:
    """Synthesize environments, certified scenarios and reference trajectories into the warehouse.

    The run holds the folder's lock, records itself in ``runs`` as running, then finished,
    failed or interrupted; finished batches are kept whatever happens, and a rerun with the same
    settings skips their items.
    """
    root = Path(data_dir)
    with folder_lock(root, "synthesize"):
        settle_abandoned_runs(root)
        started = datetime.now(UTC)
        run_id = run_id or new_run_id(started, settings.seed)
        recorder = RunRecorder(root, run_id, settings, started)
        recorder.write("running", {})
        grant(root, run_id)
        clock = time.perf_counter()
        try:
            summary = _fan_out(settings, run_id, data_dir)
        except BaseException as exc:
            revoke(root, run_id)  # first: batches still finishing stay unpublished
            status = "interrupted" if was_interrupted(exc) else "failed"
            recorder.write(status, {"wall_seconds": time.perf_counter() - clock})
            raise
        revoke(root, run_id)
        retract_superseded_failures(root)
        summary |= {"run_id": run_id, "wall_seconds": time.perf_counter() - clock}
        recorder.write("finished", summary)
        return summary


def _fan_out(settings: EnvmillSettings, run_id: str, data_dir: str) -> dict[str, Any]:
    """Submit the batches not done yet, a window at a time, and gather them as they finish."""
    backend = process_backend(settings, run_id, data_dir)
    finished = _finished_items(Path(data_dir))
    planned, done = _tally(settings, backend, finished)
    for line in finished.redone:
        report("redo", reason=line)
    report("planned", items=planned, done=done)
    counts, seconds, submitted = Counter(), Counter(), 0

    def submit(batch: BatchSpec) -> PrefectFuture:
        return synthesize_batch_task.submit(batch, settings, run_id, data_dir)

    window = max(8, 4 * settings.workers * task_threads(settings))
    batches = iter_batches(settings, backend, finished)
    for batch, future in in_windows(batches, submit, window):
        submitted += 1
        try:
            result = future.result()
        except Exception as exc:  # the batch's own retries are spent: record it, keep going
            if is_disk_full(exc):  # every batch after it would fail the same way
                raise DiskFull(Path(data_dir)) from exc
            _record_failed_batch(data_dir, run_id, batch, exc)
            counts["failed_batches"] += 1
            report("batch_failed", items=len(batch.items), error=str(exc))
            continue
        counts.update(result["counts"])
        seconds.update(result["seconds"])
        report("batch_done", items=len(batch.items), counts=result["counts"])
    return {
        "batches": submitted,
        "planned_items": planned,
        "resumed_items": done,
        "redone_batches": len(finished.redone),
        "counts": dict(counts),
        "work_seconds": dict(seconds),
    }


def _finished_items(root: Path) -> FinishedItems:
    """First set aside what no commit lists; then what is done, each batch checked against its
    commit record when the plan reaches its items."""
    index = CommitIndex(root)
    for finding in sweep(root, index):
        report("set_aside", reason=finding.line())
    return FinishedItems(root, index)


def _tally(settings: EnvmillSettings, backend: Backend, finished: FinishedItems) -> tuple[int, int]:
    """Items planned and items already done, counted without keeping the plan in memory."""
    planned = done = 0
    for batch in iter_batches(settings, backend):
        planned += len(batch.items)
        done += sum(item.key in finished for item in batch.items)
    return planned, done


def in_windows(
    batches: Iterator[BatchSpec], submit: Callable[[BatchSpec], PrefectFuture], window: int
) -> Iterator[tuple[BatchSpec, PrefectFuture]]:
    """Yield ``(batch, future)`` as futures finish, keeping at most ``window`` submitted: a
    plan of a million items never sits in the scheduler (or in memory) at once.

    Ctrl-C or SIGTERM ends the wait even when the library it landed in swallowed it (a submit
    it cut short leaves a future that never finishes)."""
    finished: queue.SimpleQueue[PrefectFuture] = queue.SimpleQueue()
    in_flight: dict[PrefectFuture, BatchSpec] = {}

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
            continue
        yield in_flight.pop(future), future
        fill()


def _record_failed_batch(data_dir: str, run_id: str, batch: BatchSpec, exc: Exception) -> None:
    failure = failure_of("batch", batch.key, exc, attempts=BATCH_RETRIES + 1)
    items = [item.key for item in batch.items]
    write_failed_batch(Warehouse(data_dir), failure_row(failure, run_id), batch.key, items, run_id)
