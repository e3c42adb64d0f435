"""The ``rollout`` flow: certified scenarios × samples as episodes, fanned out like synthesis.

A batch of episodes runs on one Dask worker (its episodes on threads: they wait on models); its
trajectories, filter verdicts, failures and LLM calls land as one commit. The run is recorded
in ``runs`` (backend ``rollout``); a rerun with the same settings skips finished episodes.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.futures import PrefectFuture

from envmill.flows.fan_out import BATCH_RETRIES, finished_items, gather
from envmill.flows.progress import report
from envmill.flows.run_record import recorded_run
from envmill.flows.runtime.llm_gate import dask_gate
from envmill.schemas.reward import JUDGE_STAGE
from envmill.schemas.rollout import POLICY_STAGE, USER_STAGE, EpisodeBatch
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends import run_llm_client
from envmill.tasks.llm import LlmClient
from envmill.tasks.rollout.batch import rollout_batch, rollout_counts
from envmill.tasks.rollout.plan import episode_batches, episode_key, episode_specs
from envmill.tasks.sandbox.shared import process_sandbox
from envmill.warehouse.episodes import certified_scenario_ids, scenario_rows
from envmill.warehouse.lock import may_write
from envmill.warehouse.rows import write_batch
from envmill.warehouse.store import Warehouse

TASK_THREADS = 4  # batches per worker at once: one waiting on its slowest episode idles no slot
_clients: dict[tuple[str, str, str], LlmClient] = {}
_clients_lock = threading.Lock()


def process_client(settings: EnvmillSettings, run_id: str, data_dir: str) -> LlmClient:
    """One LLM client per worker process and run (connections, cache, call records), its calls
    capped run-wide."""
    key = (settings.llm.model_dump_json(), run_id, data_dir)
    with _clients_lock:
        if key not in _clients:
            _clients[key] = run_llm_client(settings, run_id, Path(data_dir), dask_gate)
        return _clients[key]


def rollout_models(settings: EnvmillSettings) -> dict[str, str]:
    """The models an episode's key names: the policy's and the simulated user's, the LLM
    judge's when it judges (another judge is another episode), and the cache's namespace when
    it has one (the test endpoint's answers are not a model's)."""
    stages = (POLICY_STAGE, USER_STAGE, *([JUDGE_STAGE] if settings.reward.judge == "llm" else []))
    models = {stage: settings.llm.for_stage(stage).model for stage in stages}
    namespace = settings.llm.cache_namespace
    return models | ({"namespace": namespace} if namespace else {})


@task(name="rollout-batch", retries=BATCH_RETRIES, retry_delay_seconds=1)
def rollout_batch_task(
    batch: EpisodeBatch, settings: EnvmillSettings, run_id: str, data_dir: str
) -> dict[str, Any]:
    """One batch of episodes on one worker, committed while the run still lives."""
    root = Path(data_dir)
    if not may_write(root, run_id):
        return {"counts": {}, "seconds": {}, "published": False}
    client = process_client(settings, run_id, data_dir)
    sandbox = process_sandbox(settings.sandbox)
    output = rollout_batch(batch, settings.rollout, sandbox, client, settings.reward.judge)
    written = write_batch(Warehouse(root), output, run_id, lambda: may_write(root, run_id))
    counts = rollout_counts(output) if written else {}
    return {"counts": counts, "seconds": output.seconds, "published": written}


@flow(name="rollout", log_prints=False)
def rollout(settings: EnvmillSettings, data_dir: str, run_id: str | None = None) -> dict[str, Any]:
    """Run the policy model (and a simulated user) on certified scenarios into trajectories."""
    return recorded_run(
        Path(data_dir),
        settings,
        "rollout",
        lambda run: _fan_out(settings, run, data_dir),
        run_id=run_id,
        kind="rollout",
    )


def _fan_out(settings: EnvmillSettings, run_id: str, data_dir: str) -> dict[str, Any]:
    root, rollout_settings = Path(data_dir), settings.rollout
    finished = finished_items(root)
    models = rollout_models(settings)
    ids = certified_scenario_ids(root, rollout_settings.scenarios, rollout_settings.ungrounded)

    def keys(scenario_id: str) -> list[str]:
        samples = range(rollout_settings.samples)
        return [episode_key(scenario_id, k, models, rollout_settings) for k in samples]

    due = [sid for sid in ids if not all(key in finished for key in keys(sid))]
    planned = len(ids) * rollout_settings.samples
    done = sum(key in finished for sid in ids for key in keys(sid))
    report("planned", items=planned, done=done)
    episodes = (
        spec
        for spec in episode_specs(
            scenario_rows(root, due, rollout_settings.ungrounded), models, rollout_settings
        )
        if spec.key not in finished
    )

    def submit(batch: EpisodeBatch) -> PrefectFuture:
        return rollout_batch_task.submit(batch, settings, run_id, data_dir)

    gathered = gather(
        episode_batches(episodes, rollout_settings.episodes_per_batch),
        submit,
        max(8, 4 * settings.workers * TASK_THREADS),
        lambda batch: [spec.key for spec in batch.episodes],
        data_dir=data_dir,
        run_id=run_id,
        stall_seconds=settings.stall_seconds,
    )
    return gathered | {"planned_items": planned, "resumed_items": done, "models": models}
