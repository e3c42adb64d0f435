"""The ``synthesize`` flow end to end on Dask, under the session's Prefect test harness."""

from __future__ import annotations

import pytest

from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.pipeline import plan_batches
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import query
from tests.conftest import TEST_LIMITS
from tests.procs import assert_no_new_processes, descendants


@pytest.fixture(scope="module")
def settings():
    return EnvmillSettings(
        envs=4,
        scenarios_per_env=3,
        batch_size=2,
        seed=7,
        sandbox=TEST_LIMITS,
        domains=["library", "clinic"],
    )


def _counts(root) -> dict[str, int]:
    tables = ("environments", "tools", "scenarios", "trajectories", "failures")
    return {t: query(root, f"SELECT count(*) AS n FROM {t}").to_pylist()[0]["n"] for t in tables}


def test_flow_fills_the_warehouse_and_resumes(prefect_harness, settings, tmp_path):
    from prefect_dask import DaskTaskRunner

    from envmill.flows.synthesize import synthesize

    root = Warehouse(tmp_path / "data").root
    before = descendants()
    runner = DaskTaskRunner(
        cluster_kwargs={
            "n_workers": 1,
            "threads_per_worker": 1,
            "processes": True,
            "dashboard_address": None,
        }
    )
    first = synthesize.with_options(task_runner=runner)(
        settings=settings, data_dir=str(root), run_id="run-a"
    )
    assert first["batches"] == len(plan_batches(settings)) == 2 and first["resumed_items"] == 0
    counts = _counts(root)
    assert counts["environments"] == 4 and counts["scenarios"] >= 8
    assert counts["trajectories"] == first["counts"]["certified"] > 0
    envs = (
        query(root, "SELECT DISTINCT domain FROM environments ORDER BY 1")
        .column("domain")
        .to_pylist()
    )
    assert envs == ["clinic", "library"]
    # the same arguments again, in batches of another size: every item is found done
    again = synthesize.with_options(task_runner=runner)(
        settings=settings.model_copy(update={"batch_size": 3}), data_dir=str(root), run_id="run-b"
    )
    assert again["resumed_items"] == 4 and again["batches"] == 0 and again["counts"] == {}
    assert _counts(root) == counts
    runs = query(root, "SELECT run_id, status, isolation FROM runs ORDER BY run_id").to_pylist()
    assert [(r["run_id"], r["status"]) for r in runs] == [
        ("run-a", "finished"),
        ("run-b", "finished"),
    ]
    assert "rlimits" in runs[0]["isolation"]
    assert_no_new_processes(before, settle_seconds=15)


def test_a_batch_whose_retries_are_spent_is_a_failure_row(tmp_path, settings):
    from envmill.flows.fan_out import BATCH_RETRIES, record_failed_batch

    root = Warehouse(tmp_path / "data").root
    batch = plan_batches(settings)[0]
    items = [item.key for item in batch.items]
    record_failed_batch(str(root), "run-x", batch.key, items, MemoryError("worker lost"))
    rows = query(
        root, "SELECT stage, item, error_class, message, attempts FROM failures"
    ).to_pylist()
    assert rows == [
        {"stage": "batch", "item": batch.key, "error_class": "MemoryError",
         "message": "worker lost", "attempts": BATCH_RETRIES + 1}
    ]  # fmt: skip
