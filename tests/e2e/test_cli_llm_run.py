"""``envmill run --backend llm`` and ``envmill retry-failed`` as a user runs them, against a real
local endpoint: a topic that fails is retried without paying again for what finished."""

from __future__ import annotations

import json
import re

import pytest

from envmill.tasks.offline_llm import serve_endpoint
from envmill.warehouse.views import query
from tests.cli import envmill_in as envmill

TOPICS = "public library lending\nclinic appointment booking\n"


def _rows(root, sql):
    return query(root, sql).to_pylist()


@pytest.fixture
def endpoint():
    with serve_endpoint() as served:
        yield served


def _settings(folder, url: str) -> None:
    (folder / "envmill.toml").write_text(f'workers = 1\n[llm]\nbase_url = "{url}"\n')


@pytest.mark.timeout(300)  # four runs against the model: a hang guard on a loaded machine
def test_a_failed_topic_is_retried_and_finished_calls_are_free(tmp_path, endpoint):
    (tmp_path / "topics.txt").write_text(TOPICS)
    _settings(tmp_path, endpoint.url)
    root = tmp_path / "data"
    run = ["run", "--backend", "llm", "--topics", "topics.txt", "--scenarios-per-env", "2"]
    run += ["--out", str(root)]

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
    assert resumed.returncode == 0 and "already done" in resumed.stdout, resumed.stdout
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
    per_topic = _rows(  # the retry built as many scenarios as the run it failed in asked for
        root,
        "SELECT e.topic, count(*) AS n FROM scenarios JOIN environments e USING (env_id) "
        "GROUP BY 1 ORDER BY 1",
    )
    assert [r["n"] for r in per_topic] == [2, 2], per_topic
    assert 0 < spent < fresh_topic  # plan, state code and operations came from the cache

    again = envmill(tmp_path, "retry-failed", "--out", str(root))
    assert again.returncode == 0 and "no failed topics to retry" in again.stderr


def test_an_llm_run_records_its_topics_as_its_envs(tmp_path, endpoint):
    """A topic backend makes one environment per topic: ``envmill runs`` shows that, not the
    procedural default of 24."""
    (tmp_path / "topics.txt").write_text("clinic appointment booking\n")
    _settings(tmp_path, endpoint.url)
    root = tmp_path / "data"
    run = ["run", "--backend", "llm", "--topics", "topics.txt", "--scenarios-per-env", "1"]
    done = envmill(tmp_path, *run, "--out", str(root))
    assert done.returncode == 0, done.stderr[-2000:]
    listed = envmill(tmp_path, "runs", "--out", str(root), "--format", "json")
    (row,) = json.loads(listed.stdout)
    assert (row["backend"], row["envs"], row["per_env"]) == ("llm", 1, 1)
    settings = _rows(root, "SELECT settings_json FROM runs")[0]["settings_json"]
    assert json.loads(settings)["envs"] == 1


def test_llm_run_without_topics_is_one_line(tmp_path, endpoint):
    _settings(tmp_path, endpoint.url)
    done = envmill(tmp_path, "run", "--backend", "llm", "--out", str(tmp_path / "d"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("envmill: error: the llm backend needs")
    assert endpoint.stats()["requests"] == 0


@pytest.mark.parametrize("backend", ["--backend=llm", "--scenarios-from=llm"])
def test_an_unreachable_endpoint_is_one_line_before_anything_starts(tmp_path, backend):
    import socket

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    _settings(tmp_path, f"http://127.0.0.1:{port}/v1")
    (tmp_path / "topics.txt").write_text(TOPICS)
    done = envmill(tmp_path, "run", backend, "--topics", "topics.txt", "--out", "d")
    assert done.returncode == 2, done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"envmill: error: cannot reach the LLM endpoint http://127.0.0.1:{port}")
    assert not (tmp_path / "d").exists()


def test_the_procedural_backend_takes_its_scenarios_from_the_llm(tmp_path, endpoint):
    """Catalog environments, ScenGenerator's scenarios: every state keeps the domain spec's
    invariants, a refused set of checks is repaired, and a rerun asks the model nothing."""
    import json

    from envmill.tasks.backends.procedural.catalog import load_domain
    from envmill.tasks.backends.procedural.state.invariants import check_invariants

    _settings(tmp_path, endpoint.url)
    root = tmp_path / "data"
    run = ["run", "--envs", "2", "--scenarios-per-env", "3", "--scenarios-from", "llm"]
    run += ["--domains", "airline,banking"]
    run += ["--out", str(root)]
    endpoint.configure(slips=[{"kind": "trivial_checks", "topic": "airline variant"}])
    first = envmill(tmp_path, *run)
    assert first.returncode == 0, first.stderr[-2000:]
    made = _rows(
        root,
        "SELECT e.backend AS env_backend, e.domain, s.backend, s.status, s.repairs, s.kind, "
        "s.initial_state_json FROM scenarios s JOIN environments e USING (env_id)",
    )
    assert {(r["env_backend"], r["backend"], r["status"]) for r in made} == {
        ("procedural", "llm", "certified")
    }
    assert len(made) == 6 and {r["domain"] for r in made} == {"airline", "banking"}
    # trivial checks hold on the initial state: a change is repaired, while a question or a
    # refusal is not trivial whatever its checks say (its reply is judged)
    repaired = {(r["domain"], r["repairs"]) for r in made if r["kind"] not in ("answer", "refusal")}
    assert repaired == {("airline", 1), ("banking", 0)}, made
    assert len({r["kind"] for r in made}) > 1  # the mix of kinds ScenGenerator is asked for
    for row in made:
        state = json.loads(row["initial_state_json"])
        assert check_invariants(load_domain(row["domain"]), state) == []
    stages = {r["stage"] for r in _rows(root, "SELECT DISTINCT stage FROM llm_calls")}
    assert stages == {"scenario_state", "scenario_task", "scenario_checks", "scenario_repair"}
    origin = _rows(root, "SELECT provenance_json AS p FROM scenarios ORDER BY scenario_id LIMIT 1")[
        0
    ]
    made_by = json.loads(origin["p"])
    assert made_by["generator"].startswith("procedural-") and "+scengen-" in made_by["generator"]
    assert (
        set(made_by["models"]) == set(made_by["prompts"]) >= {"scenario_state", "scenario_checks"}
    )
    assert all(len(h) == 16 for h in made_by["prompts"].values()) and made_by["seed"] > 0
    before = endpoint.stats()["requests"]
    again = envmill(tmp_path, *run)
    assert again.returncode == 0 and endpoint.stats()["requests"] == before


def test_a_task_whose_steps_use_unseen_values_goes_back_to_the_model(tmp_path, endpoint):
    """`grounded` at the source: the task writer's first answer names none of the values its
    steps pass; the model is told the step and the value, and its second answer certifies."""
    _settings(tmp_path, endpoint.url)
    root = tmp_path / "data"
    run = ["run", "--envs", "1", "--scenarios-per-env", "1", "--scenarios-from", "llm"]
    run += ["--domains", "banking", "--out", str(root)]
    endpoint.configure(slips=[{"kind": "vague_task"}])
    done = envmill(tmp_path, *run)
    assert done.returncode == 0, done.stderr[-2000:]
    asked = endpoint.requests("scenario_task")
    assert len(asked) == 2, [r["body"]["messages"][-1]["content"][:200] for r in asked]
    told = asked[1]["body"]["messages"][-1]["content"]
    assert "which the agent had not seen" in told and re.search(r"step \d+ \(\w+\)", told), told
    (row,) = _rows(root, "SELECT status, gates_json FROM scenarios")
    grounded = next(g for g in json.loads(row["gates_json"]) if g["gate"] == "grounded")
    assert row["status"] == "certified" and grounded["passed"], row["gates_json"]
