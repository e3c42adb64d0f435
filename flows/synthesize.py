"""The ``synthesize`` flow: plan batches, fan them out, gather counts, record the run.

The flow body only maps and gathers; the work is ``tasks.pipeline.synthesize_batch`` and the
writes are ``warehouse.rows.write_batch``. The task runner (Dask) is chosen by the caller with
``synthesize.with_options(task_runner=...)``, so the flow itself is runner-agnostic.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, task, unmapped
from prefect.exceptions import TerminationSignal
from prefect.futures import as_completed

from envmill.flows.interrupt import was_interrupted
from envmill.flows.progress import report
from envmill.flows.run_record import RunRecorder, new_run_id
from envmill.schemas.run import BatchSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends import Backend, make_backend
from envmill.tasks.pipeline import failure_of, plan_batches, synthesize_batch
from envmill.tasks.sandbox.shared import process_sandbox
from envmill.warehouse.rows import failure_row, finished_batch, write_batch
from envmill.warehouse.store import Warehouse

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
    """One batch on one worker: synthesize, then write its parts (idempotent by batch key)."""
    backend = process_backend(settings, run_id, data_dir)
    output = synthesize_batch(batch, settings, process_sandbox(settings.sandbox), backend)
    write_batch(Warehouse(data_dir), output, run_id)
    return {"counts": output.counts(), "seconds": output.seconds}


@flow(name="synthesize", log_prints=False)
def synthesize(
    settings: EnvmillSettings, data_dir: str, run_id: str | None = None
) -> dict[str, Any]:
    """Synthesize environments, certified scenarios and reference trajectories into the warehouse.

    The run records itself in ``runs`` as running, then finished, failed or interrupted; finished
    batches are kept whatever happens, and a rerun with the same settings skips them.
    """
    started = datetime.now(UTC)
    run_id = run_id or new_run_id(started, settings.seed)
    recorder = RunRecorder(Path(data_dir), run_id, settings, started)
    recorder.write("running", {})
    clock = time.perf_counter()
    try:
        summary = _fan_out(settings, run_id, data_dir)
    except BaseException as exc:
        # Prefect turns a SIGTERM into TerminationSignal inside a flow, then sends it again
        stopped = was_interrupted(exc) or isinstance(exc, TerminationSignal)
        status = "interrupted" if stopped else "failed"
        recorder.write(status, {"wall_seconds": time.perf_counter() - clock})
        raise
    summary |= {"run_id": run_id, "wall_seconds": time.perf_counter() - clock}
    recorder.write("finished", summary)
    return summary


def _fan_out(settings: EnvmillSettings, run_id: str, data_dir: str) -> dict[str, Any]:
    batches = plan_batches(settings, process_backend(settings, run_id, data_dir))
    todo = [b for b in batches if finished_batch(Path(data_dir), b.key) is None]
    report("planned", batches=len(batches), todo=len(todo), envs=sum(len(b.items) for b in todo))
    counts, seconds = Counter(), Counter()
    futures = synthesize_batch_task.map(
        todo, settings=unmapped(settings), run_id=unmapped(run_id), data_dir=unmapped(data_dir)
    )
    by_future = dict(zip(futures, todo, strict=True))
    for future in as_completed(futures):
        batch = by_future[future]
        try:
            result = future.result()
        except Exception as exc:  # the batch's own retries are spent: record it, keep going
            _record_failed_batch(data_dir, run_id, batch, exc)
            counts["failed_batches"] += 1
            report("batch_failed", items=len(batch.items), error=str(exc))
            continue
        counts.update(result["counts"])
        seconds.update(result["seconds"])
        report("batch_done", items=len(batch.items), counts=result["counts"])
    return {
        "batches": len(batches),
        "resumed_batches": len(batches) - len(todo),
        "counts": dict(counts),
        "work_seconds": dict(seconds),
    }


def _record_failed_batch(data_dir: str, run_id: str, batch: BatchSpec, exc: Exception) -> None:
    failure = failure_of("batch", batch.key, exc, attempts=BATCH_RETRIES + 1)
    Warehouse(data_dir).write("failures", [failure_row(failure, run_id)], key=f"batch-{batch.key}")
