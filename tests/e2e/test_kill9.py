"""A run killed with SIGKILL, then run again: nothing left behind, nothing lost, nothing twice.

The run's own process is killed (what the OOM killer or ``kill -9`` does), never its group: every
child it started must end by itself. The next command on the folder then finds no process and no
temporary folder of the dead run, records it ``interrupted``, and makes exactly what an
uninterrupted run makes, without asking the model again what it already answered.
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from envmill.flows.runtime.leftovers import SERVER_RECORD
from envmill.schemas.settings import EnvmillSettings, SandboxLimits
from envmill.tasks.offline_llm import serve_endpoint
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from envmill.tasks.sandbox import Sandbox
from envmill.warehouse.resume import CommitIndex
from envmill.warehouse.rows import write_batch
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import query
from tests.cli import clean_env
from tests.procs import processes_started_under
from tests.timing import scaled

RUN = ["run", "--envs", "4", "--scenarios-per-env", "2", "--batch-size", "1", "--workers", "2",
       "--domains", "library,clinic,banking"]  # fmt: skip
CLI = [sys.executable, "-c", "from envmill.flows.cli import main; main()"]
# a sandbox request's wall time: what a run makes must not hang on how busy the machine is
WALL = "20"


def _env(folder: Path, own_server: bool) -> dict[str, str]:
    """Helper files under ``folder/tmp``; a run starts its own Prefect server (the one a kill
    must not leave behind) or reports to the test process's shared one."""
    (folder / "tmp").mkdir(exist_ok=True)
    wall = {"ENVMILL_SANDBOX__WALL_SECONDS": WALL}
    return clean_env(folder / "tmp", own_server=own_server) | wall


def _envmill(folder: Path, *args: str, own_server: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=scaled(240),
        cwd=folder,
        env=_env(folder, own_server),
    )


def _batch_commits(root: Path) -> int:
    folder = root / "_commits"
    names = [p.name for p in folder.glob("*.json")] if folder.is_dir() else []
    return sum(bool(re.fullmatch(r"[0-9a-f]{16}\.json", n)) for n in names)


def _killed(folder: Path, root: Path, when: str, *extra: str, own_server: bool = True) -> None:
    """Start a run and SIGKILL its process: ``starting`` (server and cluster coming up) or
    ``working`` (a first batch committed, others under way)."""
    process = subprocess.Popen(
        [*CLI, *RUN, *extra, "--out", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=folder,
        env=_env(folder, own_server),
        start_new_session=True,  # the test's own group is never in the line of fire
    )
    deadline = time.monotonic() + scaled(180)
    while process.poll() is None and time.monotonic() < deadline:
        started = (root / "_prefect").is_dir() if when == "starting" else _batch_commits(root)
        if started:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=scaled(30))


def _corpus(root: Path) -> dict[str, object]:
    """What a run made, by id and content; and how many raw rows its commits hold."""

    def rows(sql: str) -> list[tuple]:
        return sorted(tuple(r.values()) for r in query(root, sql).to_pylist())

    index = CommitIndex(root)
    raw = Counter()
    for commit in index.commits.values():
        for table, info in commit.parts.items():
            raw[table] += info.rows
    return {
        "environments": rows("SELECT env_id, md5(source) FROM environments"),
        "scenarios": rows(
            "SELECT scenario_id, status, task, md5(checks_json), md5(initial_state_json) "
            "FROM scenarios"
        ),
        "trajectories": rows("SELECT trajectory_id, reward FROM trajectories"),
        "raw": {t: raw[t] for t in ("environments", "scenarios", "trajectories")},
    }


def _why_not(root: Path, run: subprocess.CompletedProcess[str]) -> str:
    """What a resumed run that made less than an uninterrupted one says of itself: its failure
    rows (a batch can fail on a machine too busy for the sandbox's wall time) and its output."""
    failures = query(root, "SELECT stage, item, message FROM failures").to_pylist()
    return f"failures: {failures}\nrun output: {run.stdout[-3000:]}{run.stderr[-2000:]}"


def _leftovers(folder: Path) -> list[str]:
    tmp = folder / "tmp"
    return sorted(p.name for p in tmp.iterdir()) if tmp.is_dir() else []


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict[str, object]:
    """What ``RUN`` makes when nothing stops it: its batches made and committed one after
    another in this process, by the functions the flow's tasks call (a run of its own would cost
    a server's, a cluster's and an interpreter's start-up more and show nothing more)."""
    settings = EnvmillSettings(
        envs=4, scenarios_per_env=2, batch_size=1, workers=2,
        domains=["library", "clinic", "banking"], sandbox=SandboxLimits(wall_seconds=float(WALL)),
    )  # fmt: skip
    warehouse = Warehouse(tmp_path_factory.mktemp("reference") / "data")
    with Sandbox(settings.sandbox) as sandbox:
        for batch in plan_batches(settings):
            assert write_batch(warehouse, synthesize_batch(batch, settings, sandbox), "run-ref")
    return _corpus(warehouse.root)


@pytest.mark.timeout(400)
def test_a_run_killed_twice_leaves_nothing_behind_and_resumes_to_the_same_corpus(
    tmp_path, uninterrupted
):
    """Killed while its server and cluster start, then again once batches are committed (that
    run, and the one that resumes, on the shared server: the first run's own server is the one
    a kill must not leave behind)."""
    root = tmp_path / "data"
    for when in ("starting", "working"):
        _killed(tmp_path, root, when, own_server=when == "starting")
        deadline = time.monotonic() + scaled(20)  # its children notice their parent is gone
        while processes_started_under(str(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_started_under(str(tmp_path)) == [], when

    again = _envmill(tmp_path, *RUN, "--out", str(root), own_server=False)
    assert again.returncode == 0, again.stderr[-2000:]
    made = _corpus(root)
    assert made == uninterrupted, _why_not(root, again)
    for table, ids in made.items():
        if table != "raw":
            assert made["raw"][table] == len(ids), f"{table}: rows committed twice"
    statuses = query(root, "SELECT status FROM runs ORDER BY started_at").column("status")
    assert statuses.to_pylist()[-1] == "finished"
    assert set(statuses.to_pylist()[:-1]) <= {"interrupted"}  # none left running
    assert processes_started_under(str(tmp_path)) == []
    assert [n for n in _leftovers(tmp_path) if n.startswith(("envmill", "dask"))] == []
    assert not (root / "_prefect" / SERVER_RECORD).exists()  # the dead run's server: gone
    assert _envmill(tmp_path, "verify", "--out", str(root)).returncode == 0


@pytest.mark.timeout(300)
def test_a_killed_llm_run_asks_the_model_nothing_it_had_answered(tmp_path):
    with serve_endpoint() as endpoint:
        # one batch at a time: after the first commit, three batches of calls remain, so the
        # kill always lands mid-run (four at once could all finish between two polls)
        (tmp_path / "envmill.toml").write_text(
            f'workers = 1\n[llm]\nbase_url = "{endpoint.url}"\nmax_concurrency = 4\n'
            "[skeleton]\nitem_threads = 1\n"
        )
        root = tmp_path / "data"
        _killed(tmp_path, root, "working", "--scenarios-from", "llm", own_server=False)
        before = _bodies(endpoint.requests())
        llm_run = (*RUN, "--scenarios-from", "llm", "--out", str(root))
        again = _envmill(tmp_path, *llm_run, own_server=False)
        assert again.returncode == 0, again.stderr[-2000:]
        after = _bodies(endpoint.requests())[len(before) :]
    asked_twice = set(before) & set(after)
    # only the calls in flight when the run died (at most the cap) are asked again
    assert len(asked_twice) <= 4, len(asked_twice)
    assert len(before) > len(asked_twice)
    calls = query(root, "SELECT count(*) AS n FROM llm_calls").to_pylist()[0]["n"]
    assert calls >= len(after)
    assert processes_started_under(str(tmp_path)) == []


def _bodies(requests: list[dict]) -> list[str]:
    return [
        hashlib.sha256(json.dumps(r.get("body", r), sort_keys=True).encode()).hexdigest()
        for r in requests
    ]
