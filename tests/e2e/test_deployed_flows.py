"""The flows deployments run behave like ``envmill run`` and ``envmill retry-failed``: the data
folder of the run's own folder, the same refusals before anything is written, the work on a Dask
cluster of the settings' size. Under the session's Prefect test harness."""

from __future__ import annotations

import pytest

from envmill.schemas.settings import EnvmillSettings
from envmill.warehouse.views import query
from tests.conftest import TEST_LIMITS
from tests.procs import assert_no_new_processes, descendants

pytestmark = pytest.mark.timeout(240)


def _settings(**changes) -> EnvmillSettings:
    base = {"envs": 2, "scenarios_per_env": 2, "domains": ["library"], "workers": 1}
    return EnvmillSettings(**(base | {"sandbox": TEST_LIMITS} | changes))


def test_a_deployed_run_fills_the_folder_it_starts_in_then_retry_finds_nothing(
    prefect_harness, tmp_path, monkeypatch
):
    from envmill.flows.deployed import retry_failed, synthesize_on_cluster

    monkeypatch.chdir(tmp_path)  # where a worker's pull step puts the run
    monkeypatch.delenv("ENVMILL_HOME", raising=False)
    before = descendants()
    summary = synthesize_on_cluster(settings=_settings())
    root = tmp_path / "envmill-data"
    runs = query(root, "SELECT run_id, status FROM runs").to_pylist()
    assert runs == [{"run_id": summary["run_id"], "status": "finished"}]
    assert query(root, "SELECT count(*) AS n FROM environments").to_pylist()[0]["n"] == 2
    assert summary["batches"] == 1 and summary["counts"]["certified"] > 0
    assert retry_failed(settings=_settings(backend="llm")) == {"retried_topics": 0}
    assert_no_new_processes(before, settle_seconds=15)  # the run's cluster is closed


def test_a_run_that_cannot_start_is_refused_before_the_folder_is_touched(prefect_harness, tmp_path):
    from envmill.flows.deployed import retry_failed, synthesize_on_cluster
    from envmill.flows.retry import RetryError
    from envmill.tasks.backends import PlanError

    target = tmp_path / "data"
    with pytest.raises(PlanError, match="nowhere"):
        synthesize_on_cluster(settings=_settings(domains=["nowhere"]), data_dir=str(target))
    with pytest.raises(RetryError, match="is not an envmill data folder"):
        retry_failed(settings=_settings(backend="llm"), data_dir=str(target))
    assert not target.exists()
