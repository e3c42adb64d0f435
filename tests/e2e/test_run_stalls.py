"""A run that cannot make progress ends in one line instead of waiting forever (issue 24: a
resumed LLM run sat 8 minutes with no Dask worker alive; nothing printed, nothing timed out)."""

from __future__ import annotations

import logging

import pytest
from distributed import LocalCluster

from envmill.warehouse.views import query
from tests.cli import envmill_in


@pytest.mark.timeout(240)
def test_a_run_on_a_scheduler_with_no_worker_ends_in_one_line(tmp_path):
    with LocalCluster(
        n_workers=0,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=logging.CRITICAL,
    ) as cluster:
        run = ("run", "--envs", "1", "--scenarios-per-env", "1", "--out", str(tmp_path / "data"))
        done = envmill_in(
            tmp_path,
            *run,
            "--dask-address",
            cluster.scheduler_address,
            extra_env={"ENVMILL_STALL_SECONDS": "3"},
            timeout=180,
        )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr[-2000:]
    assert "no batch finished and no Dask worker was alive for 3 s" in lines[-1], lines[-3:]
    assert "Traceback" not in done.stderr
    statuses = query(tmp_path / "data", "SELECT status FROM runs").column("status").to_pylist()
    assert statuses == ["failed"]
