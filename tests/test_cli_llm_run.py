"""``envmill run --backend llm`` and ``envmill retry-failed`` as a user runs them, against a real
local endpoint: a topic that fails is retried without paying again for what finished."""

from __future__ import annotations

import pytest

from envmill.tasks.llm.endpoint import serve_endpoint
from envmill.warehouse.views import query
from tests.test_cli_run import envmill

TOPICS = "public library lending\nclinic appointment booking\n"


def _rows(root, sql):
    return query(root, sql).to_pylist()


@pytest.fixture
def endpoint():
    with serve_endpoint() as served:
        yield served


def _settings(folder, url: str) -> None:
    (folder / "envmill.toml").write_text(f'workers = 1\n[llm]\nbase_url = "{url}"\n')


def test_a_failed_topic_is_retried_and_finished_calls_are_free(tmp_path, endpoint):
    (tmp_path / "topics.txt").write_text(TOPICS)
    _settings(tmp_path, endpoint.url)
    root = tmp_path / "data"
    run = ["run", "--backend", "llm", "--topics", "topics.txt", "--out", str(root)]

    endpoint.configure(slips=[{"kind": "syntax", "topic": "library", "persistent": True}])
    first = envmill(tmp_path, *run)
    assert first.returncode == 0, first.stderr[-2000:]
    failures = _rows(root, "SELECT stage, item, message FROM failures WHERE stage <> 'scenarios'")
    assert [r["topic"] for r in _rows(root, "SELECT topic FROM environments")] == [
        "clinic appointment booking"
    ], failures
    (failure,) = _rows(root, "SELECT stage, code, item FROM failures WHERE stage <> 'scenarios'")
    assert (failure["stage"], failure["code"]) == ("env_syntax", "syntax")
    assert failure["item"].startswith("public library")
    assert _rows(root, "SELECT count(*) AS n FROM env_probes")[0]["n"] > 0
    assert _rows(root, "SELECT count(*) AS n FROM llm_calls")[0]["n"] > 20

    resumed = envmill(tmp_path, *run)  # a later run that only resumes hides no failed topic
    assert resumed.returncode == 0 and "resumed" in resumed.stdout, resumed.stdout
    for bad, said in (("--run", "no run 'nope'"), ("--stage", "no topic ever failed at stage")):
        refused = envmill(tmp_path, "retry-failed", "--out", str(root), bad, "nope")
        assert refused.returncode == 2 and said in refused.stderr.strip().splitlines()[-1]

    endpoint.configure(slips=[])
    before = endpoint.stats()["requests"]
    retry = envmill(tmp_path, "retry-failed", "--out", str(root))
    assert retry.returncode == 0, retry.stderr[-2000:]
    assert "retrying 1 failed topic" in retry.stderr
    topics = {r["topic"] for r in _rows(root, "SELECT topic FROM environments")}
    assert topics == {"clinic appointment booking", "public library lending"}
    spent = endpoint.stats()["requests"] - before
    fresh_topic = _rows(
        root, "SELECT count(*) AS n FROM llm_calls WHERE item LIKE 'clinic%' AND NOT cache_hit"
    )[0]["n"]
    assert 0 < spent < fresh_topic  # plan, state code and operations came from the cache

    again = envmill(tmp_path, "retry-failed", "--out", str(root))
    assert again.returncode == 0 and "no failed topics to retry" in again.stderr


def test_llm_run_without_topics_is_one_line(tmp_path, endpoint):
    _settings(tmp_path, endpoint.url)
    done = envmill(tmp_path, "run", "--backend", "llm", "--out", str(tmp_path / "d"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("envmill: error: the llm backend needs")
    assert endpoint.stats()["requests"] == 0
