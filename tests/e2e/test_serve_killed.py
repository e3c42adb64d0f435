"""``serve`` killed with -9 mid-run: the flow runs it started end with it (issue 24).

Before: the run's engine process and its Dask cluster went on, the flow run stayed ``RUNNING``
for good and the folder's run row ``running`` until the next command. Now the run sees its
parent gone within a second and stops as a SIGTERM stops it: Prefect's flow runs (the deployed
one and the ``synthesize`` under it) ``Crashed``, the run row ``interrupted``, no process left.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

import httpx
import pytest

from envmill.warehouse.views import query
from tests.cli import clean_env
from tests.procs import processes_started_under
from tests.timing import scaled

BIG = {"envs": 40, "scenarios_per_env": 12, "workers": 1, "batch_size": 1, "seed": 3}
SMOKE = "synthesize-on-cluster/synthesize-smoke"


def _until(what, seconds: float):
    deadline = time.monotonic() + scaled(seconds)
    while time.monotonic() < deadline:
        if found := what():
            return found
        time.sleep(0.5)
    return what()


def _status(root) -> str | None:
    try:
        rows = query(root, "SELECT status FROM runs").column("status").to_pylist()
    except Exception:  # no run recorded yet
        return None
    return rows[-1] if rows else None


def _forget_deployments(api: str) -> None:
    """The process's shared server may hold these deployments on a work pool (the register
    tests'), which ``serve`` refuses to take over."""
    for deployment in httpx.post(f"{api}/deployments/filter", json={}).json():
        httpx.delete(f"{api}/deployments/{deployment['id']}").raise_for_status()


@pytest.mark.timeout(300)
def test_a_killed_serve_takes_its_flow_runs_with_it(tmp_path):
    env = clean_env(tmp_path)
    root = tmp_path / "data"
    _forget_deployments(env["PREFECT_API_URL"])
    said = (tmp_path / "serve.log").open("w+")  # a file: an unread pipe fills and stalls serve
    serving = subprocess.Popen(
        [sys.executable, "-m", "envmill.deployments.synthesize_deployments", "serve",
         "--data-dir", str(root)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=said, text=True,
    )  # fmt: skip
    try:
        started = None
        for _ in range(int(scaled(30))):  # until serve has registered the deployment
            time.sleep(1)
            run = subprocess.run(
                [sys.executable, "-m", "prefect", "deployment", "run", SMOKE,
                 "--param", f"settings={json.dumps(BIG)}"],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=scaled(60),
            )  # fmt: skip
            started = re.search(r"flow-run/([0-9a-f-]{36})", run.stdout)
            if started or serving.poll() is not None:
                break
        assert serving.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
        assert started, run.stdout[-1000:] + run.stderr[-1000:]
        assert _until(lambda: _status(root) == "running", 120), _status(root)
    finally:
        serving.send_signal(signal.SIGKILL)
        serving.wait()
        said.close()
    assert _until(lambda: _status(root) == "interrupted", 30), _status(root)
    assert _until(lambda: not processes_started_under(str(tmp_path)), 30), processes_started_under(
        str(tmp_path)
    )
    api = env["PREFECT_API_URL"]
    flow_run = httpx.get(f"{api}/flow_runs/{started[1]}").json()
    assert flow_run["state_type"] == "CRASHED", flow_run["state"]
    under = httpx.post(
        f"{api}/flow_runs/filter",
        json={"flow_runs": {"parent_flow_run_id": {"any_": [started[1]]}}},
    ).json()
    assert under and all(run["state_type"] == "CRASHED" for run in under), under
