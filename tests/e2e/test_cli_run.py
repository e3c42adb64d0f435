"""``envmill run`` as a user runs it: bad input, SIGTERM, resume, idempotence, no leftovers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envmill.warehouse.views import query
from tests.cli import clean_env as _env
from tests.cli import envmill_in as envmill
from tests.procs import processes_started_under
from tests.timing import scaled

# Enough batches that seconds of work remain when the first one finishes (each takes about a
# second on a calm machine, two workers take two at once, and the signal follows within 0.1 s):
# SIGTERM lands while the run is still working, even on a loaded machine.
ENVS = 5
RUN = ["run", "--envs", str(ENVS), "--scenarios-per-env", "1", "--batch-size", "1",
       "--workers", "2", "--domains", "library,banking,airline,support"]  # fmt: skip


def _counts(root: Path) -> dict[str, int]:
    tables = ("environments", "tools", "scenarios", "trajectories")
    return {t: query(root, f"SELECT count(*) AS n FROM {t}").to_pylist()[0]["n"] for t in tables}


def _terminate_after_first_batch(tmp_path: Path, root: Path) -> subprocess.CompletedProcess[str]:
    """Start a run and send SIGTERM to its process, as a supervisor does, once a batch has
    finished."""
    command = [sys.executable, "-c", "from envmill.flows.cli import main; main()", *RUN]
    command += ["--out", str(root)]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=_env(tmp_path),
        start_new_session=True,
    )
    deadline = time.monotonic() + scaled(240)
    while time.monotonic() < deadline and process.poll() is None:
        if _batch_commits(root):
            process.terminate()
            break
        time.sleep(0.1)
    out, err = process.communicate(timeout=scaled(120))
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def _batch_commits(root) -> list:
    """Commit records of batches (a run's own row is committed too, under ``runs-…``)."""
    folder = root / "_commits"
    names = [p.name for p in folder.glob("*.json")] if folder.is_dir() else []
    return [n for n in names if re.fullmatch(r"[0-9a-f]{16}\.json", n)]


@pytest.mark.timeout(300)  # three runs and three reads: a hang guard on a loaded machine
def test_sigterm_then_resume_and_rerun(tmp_path, cli):
    """SIGTERM, as a supervisor sends it, ends a run as Ctrl-C does (exit 143); the same command
    resumes, and once more changes nothing. Ctrl-C itself (exit 130, no process or folder left):
    tests/sandbox/test_process_lifetime.py. The reads after it run in this process (``cli``):
    the runs are the processes under test."""
    root = tmp_path / "data"
    interrupted = _terminate_after_first_batch(tmp_path, root)
    assert interrupted.returncode == 143, interrupted.stderr[-2000:]
    assert interrupted.stderr.strip().splitlines()[-1] == (
        "envmill: error: terminated; finished batches are kept, rerun the same command to resume"
    )
    kept = len(_batch_commits(root))
    assert 1 <= kept < ENVS
    (run,) = query(root, "SELECT status, finished_at FROM runs").to_pylist()
    assert run["status"] == "interrupted"
    assert _counts(root)["environments"] >= kept  # finished batches are readable
    published = [(root / "_commits" / name).stat().st_mtime for name in _batch_commits(root)]
    assert max(published) <= run["finished_at"].timestamp()  # no worker wrote after the stop

    resumed = envmill(tmp_path, *RUN, "--out", str(root))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming" in resumed.stderr
    assert "distributed." not in resumed.stderr  # Dask's workers start and close quietly
    after = _counts(root)
    assert after["environments"] == ENVS and after["scenarios"] >= ENVS
    assert (
        after["trajectories"]
        == query(
            root, "SELECT count(*) AS n FROM scenarios WHERE status = 'certified'"
        ).to_pylist()[0]["n"]
    )

    again = envmill(tmp_path, *RUN, "--out", str(root), "--batch-size", "4")
    assert again.returncode == 0 and _counts(root) == after  # idempotent: nothing duplicated
    listed = json.loads(cli("runs", "--out", str(root), "--format", "json").stdout)
    assert [r["status"] for r in listed] == ["interrupted", "finished", "finished"]
    assert listed[1]["environments"] >= 1 and listed[1]["seconds"] > 0 and listed[1]["envs"] == ENVS
    assert listed[2]["environments"] is None and "rlimits" in listed[2]["isolation"]
    sql = """SELECT count(*) AS n FROM scenarios
             WHERE json_extract_string(provenance_json, '$.parent.env_id') = env_id
               AND json_extract_string(provenance_json, '$.run_id') = run_id
               AND json_extract_string(provenance_json, '$.generator') LIKE 'procedural-%'"""
    assert query(root, sql).to_pylist()[0]["n"] == after["scenarios"]
    assert processes_started_under(str(tmp_path)) == []

    stats = cli("stats", "--out", str(root), "--format", "json")
    funnel = json.loads(stats.stdout)["certification_funnel"]
    assert [row["gate"] for row in funnel][:2] == ["loads", "solution_runs"]
    scenario_id = query(root, "SELECT scenario_id FROM scenarios LIMIT 1").to_pylist()[0][
        "scenario_id"
    ]
    shown = cli("show", "scenario", scenario_id[:8], "--out", str(root))
    assert shown.returncode == 0 and json.loads(shown.stdout)["scenario_id"] == scenario_id
    env_id = query(root, "SELECT env_id FROM environments LIMIT 1").to_pylist()[0]["env_id"]
    shown = cli("show", "env", env_id, "--out", str(root))
    assert shown.returncode == 0 and "# source" in shown.stdout and "class " in shown.stdout


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_bad_option_is_one_line_from_the_command(tmp_path):
    """The console command's own exit (every refusal is checked in-process:
    tests/unit/flows/test_cli_options.py)."""
    done = envmill(tmp_path, "run", "--bogus", timeout=60)
    assert done.returncode == 2, done.stderr
    assert "No such option" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_settings_precedence(tmp_path, monkeypatch):
    from envmill.schemas.settings import load_settings

    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "envmill.toml", "envs = 5\nseed = 3\n[sandbox]\nwall_seconds = 9\n")
    monkeypatch.setenv("ENVMILL_SEED", "4")
    settings = load_settings(seed=None, envs=7)
    assert (settings.envs, settings.seed, settings.sandbox.wall_seconds) == (
        7,
        4,
        9,
    )  # flag > env > toml
    monkeypatch.delenv("ENVMILL_SEED")
    assert load_settings().seed == 3 and load_settings().scenarios_per_env == 12  # toml > default


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        ({"seed": 2**63}, "setting 'seed': Input should be less than 9223372036854775808"),
        ({"seed": -1}, "setting 'seed': Input should be greater than or equal to 0"),
        ({"envs": 10**9}, "setting 'envs': Input should be less than or equal to 1000000"),
        ({"scenarios_per_env": 10**6}, "setting 'scenarios_per_env': Input should be less than"),
    ],
)
def test_impossible_sizes_and_seeds_are_one_line_before_anything_runs(tmp_path, flags, said):
    from envmill.schemas.settings import SettingsError, load_settings

    with pytest.raises(SettingsError) as refused:
        load_settings(**flags)
    assert str(refused.value).startswith(said)


def test_run_ids_tell_two_runs_in_one_second_apart():
    from datetime import UTC, datetime

    from envmill.flows.run_record import new_run_id
    from envmill.schemas.tables import RUN_ID

    first = datetime(2026, 12, 1, 9, 0, 0, 1000, tzinfo=UTC)
    second = first.replace(microsecond=2000)
    ids = {new_run_id(first, 2**63 - 1), new_run_id(second, 2**63 - 1)}
    assert len(ids) == 2 and all(re.match(RUN_ID, run_id) for run_id in ids)


def test_an_existing_prefect_api_and_dask_scheduler_are_used(prefect_harness, tmp_path):
    """With PREFECT_API_URL and --dask-address, envmill starts neither a server nor a cluster."""
    from distributed import LocalCluster
    from prefect.settings import PREFECT_API_URL

    api_url = PREFECT_API_URL.value()
    root = tmp_path / "data"
    env = {**_env(tmp_path), "PREFECT_API_URL": api_url}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                      env={"PREFECT_API_URL": api_url}) as cluster:  # fmt: skip
        command = [sys.executable, "-c", "from envmill.flows.cli import main; main()", "run",
                   "--envs", "2", "--scenarios-per-env", "2", "--domains", "library",
                   "--out", str(root), "--dask-address", cluster.scheduler_address]  # fmt: skip
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=scaled(300), cwd=tmp_path, env=env
        )
        assert done.returncode == 0, done.stderr[-2000:]
        workers = cluster.scheduler_info["workers"]
        assert workers  # the cluster outlived the run: envmill did not close what it did not start
    assert not (root / "_prefect").exists()  # no embedded server was started
    assert query(root, "SELECT count(*) AS n FROM environments").to_pylist()[0]["n"] == 2
