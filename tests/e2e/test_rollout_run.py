"""``envmill rollout`` as a user runs it: the zero-cost run end to end, and kill -9 then resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from llm_server import spawn_endpoint

from envmill.flows.cli.rollout import reference_scripts
from envmill.warehouse.episodes import certified_scenario_ids
from envmill.warehouse.views import query
from tests.cli import clean_env as _env
from tests.cli import envmill_in as envmill
from tests.timing import scaled

ROLLOUTS = "SELECT * FROM trajectories WHERE policy <> 'reference'"


@pytest.fixture
def corpus(corpus_copy):
    return corpus_copy


def _rows(root, sql: str) -> list[dict]:
    return query(root, sql).to_pylist()


@pytest.mark.timeout(300)
def test_a_local_rollout_replays_every_reference(tmp_path, corpus):
    scenarios = len(certified_scenario_ids(corpus))
    done = envmill(tmp_path, "rollout", "--out", str(corpus), "--local-llm", "--samples", "2")
    assert done.returncode == 0, done.stderr
    rows = _rows(corpus, ROLLOUTS)
    # the replay is deterministic, yet each sample is an episode of its own
    assert len(rows) == len({r["trajectory_id"] for r in rows}) == 2 * scenarios
    assert {json.loads(r["details_json"])["sample"] for r in rows} == {0, 1}
    assert all(r["success"] for r in rows)
    assert {r["termination"] for r in rows} == {"finished", "user_stop"}
    (run,) = _rows(corpus, "SELECT * FROM runs WHERE backend = 'rollout'")
    assert run["status"] == "finished"
    assert json.loads(run["counts_json"])["successes"] == 2 * scenarios
    verdicts = _rows(corpus, "SELECT count(*) AS n, bool_and(kept) AS kept FROM verdicts")
    assert verdicts == [{"n": 4 * 2 * scenarios, "kept": True}]
    calls = _rows(corpus, "SELECT count(DISTINCT item) AS n FROM llm_calls")
    assert calls == [{"n": 2 * scenarios}]


@pytest.mark.timeout(300)
def test_kill_9_mid_rollout_then_the_same_command_resumes(tmp_path, corpus):
    ids = certified_scenario_ids(corpus)
    commits = set(os.listdir(corpus / "_commits"))
    with spawn_endpoint("--latency", "0.3") as endpoint:
        endpoint.scripts(reference_scripts(corpus, ids))
        env = _env(tmp_path) | {
            "ENVMILL_LLM__BASE_URL": endpoint.url,
            "ENVMILL_ROLLOUT__EPISODES_PER_BATCH": "1",
            "ENVMILL_ROLLOUT__EPISODE_THREADS": "1",
        }
        command = [sys.executable, "-c", "from envmill.flows.cli import main; main()"]
        command += ["rollout", "--out", str(corpus), "--workers", "1"]
        said = tmp_path / "rollout.log"  # a file: an unread pipe fills and stalls the run
        with said.open("w") as log:
            run = subprocess.Popen(command, env=env, cwd=tmp_path, stderr=log, text=True)
        deadline = time.monotonic() + scaled(200)
        while len(set(os.listdir(corpus / "_commits")) - commits) < 2:  # runs row + a batch
            assert run.poll() is None and time.monotonic() < deadline, said.read_text()
            time.sleep(0.1)
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=scaled(30))
        first = len(_rows(corpus, ROLLOUTS))
        assert 0 < first < len(ids)

        endpoint.configure(latency=0.0)  # slow only so the kill lands mid-run
        again = envmill(tmp_path, "rollout", "--out", str(corpus), extra_env=env)
    assert again.returncode == 0, again.stderr
    assert f"resuming: {first} of {len(ids)} episodes were already done" in again.stderr
    rows = _rows(corpus, ROLLOUTS)
    assert len(rows) == len({r["scenario_id"] for r in rows}) == len(ids)
    statuses = _rows(
        corpus, "SELECT status FROM runs WHERE backend = 'rollout' ORDER BY started_at"
    )
    assert [s["status"] for s in statuses] == ["interrupted", "finished"]
