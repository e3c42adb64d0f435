"""The ``synthesize`` flow: plan batches, fan them out, gather counts, record the run.

The flow body only maps and gathers; the work is ``tasks.pipeline.synthesize_batch`` and the
writes are ``warehouse.rows.write_batch``. The task runner (Dask) is chosen by the caller with
``synthesize.with_options(task_runner=...)``, so the flow itself is runner-agnostic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.futures import PrefectFuture

from envmill.flows.dedupe import dedupe_new_items
from envmill.flows.fan_out import BATCH_RETRIES, finished_items, gather
from envmill.flows.progress import report
from envmill.flows.run_record import recorded_run
from envmill.flows.runtime.llm_gate import dask_gate
from envmill.schemas.backends import TRAITS
from envmill.schemas.run import BatchSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends import Backend, PlanError, make_backend, run_judges, task_threads
from envmill.tasks.pipeline import iter_batches, synthesize_batch
from envmill.tasks.sandbox.shared import process_sandbox
from envmill.warehouse.lock import may_write
from envmill.warehouse.resume import FinishedItems
from envmill.warehouse.rows import write_batch
from envmill.warehouse.store import Warehouse


def run_backend(settings: EnvmillSettings, run_id: str, data_dir: str) -> Backend[Any]:
    """The run's backend, as a batch task or the flow makes it: what it makes comes back with
    its records, so nothing ties a batch to the backend object another batch used (the LLM
    client's connections and limits are shared per process below it)."""
    return make_backend(settings, run_id=run_id, data_dir=Path(data_dir), gate=dask_gate)


@task(name="synthesize-batch", retries=BATCH_RETRIES, retry_delay_seconds=1)
def synthesize_batch_task(
    batch: BatchSpec, settings: EnvmillSettings, run_id: str, data_dir: str
) -> dict[str, Any]:
    """One batch on one worker: synthesize, then commit its parts while the run still lives."""
    root = Path(data_dir)
    if not may_write(root, run_id):
        return {"counts": {}, "seconds": {}, "published": False}  # the run was stopped
    backend = run_backend(settings, run_id, data_dir)
    judges = run_judges(settings, run_id, root, dask_gate)
    output = synthesize_batch(batch, settings, process_sandbox(settings.sandbox), backend, judges)
    written = write_batch(Warehouse(root), output, run_id, lambda: may_write(root, run_id))
    counts = output.counts() if written else {}
    return {"counts": counts, "seconds": output.seconds, "published": written}


@flow(name="synthesize", log_prints=False)
def synthesize(
    settings: EnvmillSettings, data_dir: str, run_id: str | None = None
) -> dict[str, Any]:
    """Synthesize environments, certified scenarios and reference trajectories into the warehouse.

    The run holds the folder's lock, records itself in ``runs`` as running, then finished,
    failed or interrupted; finished batches are kept whatever happens, and a rerun with the same
    settings skips their items.
    """
    settings = _sized_by_topics(settings)
    return recorded_run(
        Path(data_dir),
        settings,
        "synthesize",
        lambda run: _fan_out(settings, run, data_dir),
        run_id=run_id,
    )


def _sized_by_topics(settings: EnvmillSettings) -> EnvmillSettings:
    """A topic backend's settings with ``envs`` = the distinct topics it plans.

    Such a backend makes one environment per topic whatever ``envs`` says, so the run's row
    (``envmill runs``, the report) would otherwise show the procedural default, 24, for a
    one-topic run. A plan it cannot make keeps the settings: the fan-out reports that, as
    the run's failure.
    """
    if not TRAITS[settings.backend].takes_topics:
        return settings
    try:
        planned = sum(1 for _ in make_backend(settings).plan_items(settings))
    except PlanError:
        return settings
    return settings.model_copy(update={"envs": planned})


def _fan_out(settings: EnvmillSettings, run_id: str, data_dir: str) -> dict[str, Any]:
    """Submit the batches not done yet, a window at a time, and gather them as they finish."""
    backend = run_backend(settings, run_id, data_dir)
    finished = finished_items(Path(data_dir))
    planned, done = _tally(settings, backend, finished)
    for line in finished.redone:
        report("redo", reason=line)
    report("planned", items=planned, done=done)

    def submit(batch: BatchSpec) -> PrefectFuture:
        return synthesize_batch_task.submit(batch, settings, run_id, data_dir)

    window = max(8, 4 * settings.workers * task_threads(settings))
    gathered = gather(
        iter_batches(settings, backend, finished),
        submit,
        window,
        lambda batch: [item.key for item in batch.items],
        data_dir=data_dir,
        run_id=run_id,
        stall_seconds=settings.stall_seconds,
    )
    gathered = dedupe_new_items(gathered, settings, run_id, data_dir)
    return gathered | {
        "planned_items": planned,
        "resumed_items": done,
        "redone_batches": len(finished.redone),
    }


def _tally(
    settings: EnvmillSettings, backend: Backend[Any], finished: FinishedItems
) -> tuple[int, int]:
    """Items planned and items already done, counted without keeping the plan in memory."""
    planned = done = 0
    for batch in iter_batches(settings, backend):
        planned += len(batch.items)
        done += sum(item.key in finished for item in batch.items)
    return planned, done
