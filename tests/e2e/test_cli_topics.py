"""``envmill topics mine`` / ``topics list`` as a user runs them: the end-to-end run in its own
process, the rest through the same entry point in this one (a process start costs ~3 s)."""

from __future__ import annotations

import json
import subprocess

import pytest

from envmill.tasks.offline_llm import serve_endpoint
from tests.cli import envmill
from tests.conftest import FIXTURES, call_main

CORPUS = FIXTURES / "corpora" / "api_bank_mining.json"
UNREACHABLE = "http://127.0.0.1:9/v1"
NO_ENDPOINT = {"OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", "ENVMILL_HOME": ""}


def topics(*args: str, cwd, env_extra=None) -> subprocess.CompletedProcess[str]:
    """``envmill topics ...`` in a process of its own."""
    return envmill("topics", *args, cwd=cwd, env_extra=NO_ENDPOINT | (env_extra or {}))


@pytest.fixture
def run(monkeypatch, capsys, tmp_path):
    """``envmill ...`` through ``main()`` in this process: (exit code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)
    for name in NO_ENDPOINT:
        monkeypatch.delenv(name, raising=False)

    def invoke(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return call_main(monkeypatch, capsys, args)

    return invoke


def listed(run, data, *args: str) -> list[dict]:
    done = run("topics", "list", "--out", str(data), "--format", "json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_local_mining_selects_writes_and_a_rerun_pays_nothing(tmp_path, run):
    data = tmp_path / "data"
    done = topics("mine", str(CORPUS), "--local", "--select", "2", "--out", str(data), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("9 candidates from 1 file in ")
    summary = {line.split()[0]: line for line in lines[1:]}
    assert "multimodal 1" in summary["screened"] and "not_stateful 2" in summary["rejected"]
    assert summary["selected"].split()[1] == "2" and "0 cache hits" in summary["LLM"]
    assert "from the endpoint" in summary["embeddings"]
    rows = listed(run, data)
    assert len(rows) == 9 and [r["status"] for r in rows[:2]] == ["selected", "selected"]
    assert {r["status"] for r in rows} == {"selected", "accepted", "rejected", "screened_out"}

    again = run("topics", "mine", str(CORPUS), "--local", "--select", "2", "--out", str(data))
    assert again.returncode == 0, again.stderr
    assert "7 cache hits, 0 failed" in again.stdout and "$0.0000" in again.stdout
    assert len(listed(run, data)) == 9  # replaced, not duplicated
    sql = "SELECT count(DISTINCT run_id) AS runs, count(*) AS calls FROM llm_calls"
    calls = run("sql", sql, "--out", str(data), "--format", "json")
    assert json.loads(calls.stdout) == [{"runs": 2, "calls": 14}]
    selected = listed(run, data, "--status", "selected")
    assert len(selected) == 2 and selected[0]["introduction"].count(". ") >= 2


def test_the_configured_endpoint_is_used_and_the_cache_sits_in_the_data_folder(tmp_path, run):
    data = tmp_path / "data"
    with serve_endpoint() as endpoint:
        done = run("topics", "mine", str(CORPUS), "--out", str(data), OPENAI_BASE_URL=endpoint.url)
        assert done.returncode == 0, done.stderr
        assert endpoint.stats()["stages"] == {"topics": 6, "embeddings": 1}
    assert any((data / "_llm_cache").rglob("*.json"))
    assert not (data / "_llm_cache" / "local-endpoint").exists()


def test_no_endpoint_configured_is_one_line(tmp_path, run):
    done = run("topics", "mine", str(CORPUS), "--out", str(tmp_path / "data"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "envmill: error: no LLM endpoint configured: set llm.base_url "
        "(ENVMILL_LLM__BASE_URL) or OPENAI_BASE_URL"
    ]
    assert not (tmp_path / "data").exists()


def test_bad_files_and_options_are_one_line_errors(tmp_path, run):
    bad = tmp_path / "notes.json"
    bad.write_text('[{"something": 1}]')
    data = tmp_path / "data"
    cases = [
        ((str(CORPUS), str(bad)), "notes.json: not API-Bank"),
        ((str(tmp_path / "gone.json"),), "gone.json: cannot read"),
        ((str(CORPUS), "--select", "0"), "--select: Input should be greater than or equal to 1"),
        ((str(CORPUS), "--min-usefulness", "9"), "--min-usefulness: Input should be less"),
    ]
    for args, message in cases:
        done = run("topics", "mine", *args, "--local", "--out", str(data))
        assert done.returncode == 2, (args, done.stderr)
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("envmill: error: " + message), line
    assert not data.exists()  # nothing started
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"conversations": 5}\n{"conversations": [{"from": "gpt"}]}\n')
    done = run("topics", "mine", str(empty), "--local", "--out", str(data))
    assert done.returncode == 1 and not data.exists()
    skipped, refused = done.stderr.strip().splitlines()
    assert skipped == (
        "skipped 2 records (no 'conversations' list of turns 1, "
        "first turn is not a user's request 1)"
    )
    assert refused == "envmill: error: no topic candidates in empty.jsonl"
    done = run("topics", "list", "--status", "nope", "--out", str(data))
    assert done.returncode == 2 and "unknown status 'nope'" in done.stderr


def test_an_unreachable_endpoint_keeps_the_failed_rows_and_exits_1(tmp_path, run):
    data = tmp_path / "data"
    done = run("topics", "mine", str(CORPUS), "--out", str(data), OPENAI_BASE_URL=UNREACHABLE)
    assert done.returncode == 1 and "failed            6  (unreachable 6)" in done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert "cannot reach the LLM endpoint http://127.0.0.1:9/v1" in line
    assert {r["status"] for r in listed(run, data, "--status", "failed")} == {"failed"}
