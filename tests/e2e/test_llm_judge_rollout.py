"""The optional LLM judge through ``envmill rollout`` (issue 31, item 6): with
``ENVMILL_REWARD__JUDGE=llm`` against the offline model, each judged episode makes one
``reward_judge`` call recorded in ``llm_calls``, the rewards are the rules' rewards, a wrong
reply fails with the judge's reason, and a rerun is served from the cache (no new requests).

One rollout pair: the first run on a copy of the corpus, the rerun on a fresh copy holding the
first run's cache.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from llm_server import spawn_endpoint

from envmill.schemas.reward import JUDGE_STAGE
from envmill.schemas.scenario import ScenarioSpec
from envmill.schemas.settings import EnvmillSettings, SandboxLimits
from envmill.tasks.backends.procedural.scenarios import generate as scenarios
from envmill.tasks.judge import judge_reply
from envmill.tasks.offline_llm import oracle_script, script_key
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from envmill.tasks.rollout.plan import scenario_of
from envmill.tasks.sandbox import Sandbox
from envmill.warehouse.episodes import reference_conversations
from envmill.warehouse.views import query
from tests.cli import envmill_in as envmill
from tests.corpus import make_corpus

ROLLED = "SELECT * FROM trajectories WHERE policy <> 'reference'"
REFERENCE = "SELECT scenario_id, reward FROM trajectories WHERE policy = 'reference'"
JUDGE_CALLS = f"SELECT * FROM llm_calls WHERE stage = '{JUDGE_STAGE}'"
WRONG_ANSWER = "I could not find anything about that, sorry."
WRONG_REFUSAL = "Sorry, I can't do that: only a supervisor may approve such requests."


@pytest.fixture(scope="module")
def judged_corpus(tmp_path_factory, sandbox) -> Path:
    shares = {"answer": 0.3, "refusal": 0.6, "change": 0.1}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scenarios, "KIND_SHARES", shares)
        root = tmp_path_factory.mktemp("judged") / "data"
        return make_corpus(root, sandbox, domains=("clinic", "hotel", "library"), per_env=4)


def _rows(root: Path, sql: str) -> list[dict]:
    return query(root, sql).to_pylist()


def _specs(root: Path) -> dict[str, ScenarioSpec]:
    rows = _rows(root, "SELECT * FROM scenarios WHERE status = 'certified'")
    return {row["scenario_id"]: scenario_of(row) for row in rows}


def _scripts(root: Path, wrong: dict[str, str]) -> dict[str, list]:
    """Each reference replayed, its last words replaced by ``wrong[scenario_id]`` if any."""
    ids = sorted(_specs(root))
    scripts = {}
    for scenario_id, messages in zip(ids, reference_conversations(root, ids), strict=True):
        opening = next(m["content"] for m in messages if m["role"] == "user")
        script = oracle_script(messages)
        if scenario_id in wrong:
            script[-1] = {"content": wrong[scenario_id]}
        scripts[script_key(opening)] = script
    return scripts


def _roll_out(tmp_path: Path, root: Path, url: str) -> None:
    env = {"ENVMILL_LLM__BASE_URL": url, "ENVMILL_REWARD__JUDGE": "llm"}
    done = envmill(tmp_path, "rollout", "--out", str(root), "--workers", "1", extra_env=env)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.timeout(600)
def test_the_llm_judge_judges_each_reply_once_like_the_rules_and_a_rerun_hits_the_cache(
    tmp_path, judged_corpus
):
    specs = _specs(judged_corpus)
    judged = {i for i, s in specs.items() if s.expected_answer or s.refusal}
    answers = sorted(
        i for i in judged if specs[i].expected_answer and specs[i].mode != "conversational"
    )
    refusals = sorted(i for i in judged if specs[i].refusal and specs[i].mode != "conversational")
    assert answers and refusals, {i: s.kind for i, s in specs.items()}
    wrong = {answers[0]: WRONG_ANSWER, refusals[0]: WRONG_REFUSAL}
    first = Path(shutil.copytree(judged_corpus, tmp_path / "first", symlinks=True))
    again = Path(shutil.copytree(judged_corpus, tmp_path / "again", symlinks=True))
    with spawn_endpoint() as endpoint:
        endpoint.scripts(_scripts(judged_corpus, wrong))
        _roll_out(tmp_path, first, endpoint.url)
        asked = endpoint.requests(JUDGE_STAGE)
        shutil.copytree(first / "_llm_cache", again / "_llm_cache", dirs_exist_ok=True)
        _roll_out(tmp_path, again, endpoint.url)
        assert len(endpoint.requests(JUDGE_STAGE)) == len(asked)  # the rerun sent none

    rolled = {row["scenario_id"]: row for row in _rows(first, ROLLED)}
    assert set(rolled) == set(specs)
    calls = _rows(first, JUDGE_CALLS)
    by_item = {row["item"] for row in calls}
    assert len(calls) == len(by_item) == len(judged) == len(asked)  # one call per judged episode
    assert not any(row["cache_hit"] for row in calls)
    reference = {row["scenario_id"]: row["reward"] for row in _rows(first, REFERENCE)}
    for scenario_id, row in rolled.items():
        if scenario_id in wrong:
            continue
        assert row["reward"] == reference[scenario_id], scenario_id  # as the rules judged it
    for scenario_id, reply in wrong.items():
        spec, row = specs[scenario_id], rolled[scenario_id]
        rules = judge_reply(spec, spec.initial_state, reply)
        assert rules is not None and not rules.passed
        assert json.loads(row["check_results_json"])[-1] is False and not row["success"]
        details = json.loads(row["details_json"])
        assert rules.reason in details["check_errors"]
        assert details["verdict"] == {"passed": False, "reason": rules.reason}
    passed = [json.loads(rolled[i]["details_json"]).get("verdict") for i in judged - set(wrong)]
    assert all(v and v["passed"] and v["reason"] for v in passed)  # each verdict recorded

    rerun = _rows(again, JUDGE_CALLS)
    assert len(rerun) == len(calls) and all(row["cache_hit"] for row in rerun)
    assert {r["scenario_id"]: r["reward"] for r in _rows(again, ROLLED)} == {
        i: r["reward"] for i, r in rolled.items()
    }


@pytest.mark.timeout(300)
def test_a_run_with_the_llm_judge_certifies_by_its_verdicts_what_the_rules_certify(tmp_path):
    """``[reward] judge = "llm"`` in ``envmill run``: certification asks the ``reward_judge``
    stage about every reply it probes, recorded under each environment's item; against the
    local endpoint (which answers by the rules) the run certifies exactly the rules' scenarios."""
    run = ["--envs", "2", "--scenarios-per-env", "6", "--domains", "clinic,library"]
    root = tmp_path / "data"
    extra = {"ENVMILL_REWARD__JUDGE": "llm"}
    done = envmill(tmp_path, "run", "--local-llm", *run, "--out", str(root), extra_env=extra)
    assert done.returncode == 0, done.stderr[-2000:]
    settings = EnvmillSettings(
        envs=2,
        scenarios_per_env=6,
        domains=["clinic", "library"],
        sandbox=SandboxLimits(wall_seconds=5),
    )  # the run's, judged by the rules in this process
    with Sandbox(settings.sandbox) as sandbox:
        by_rules = [
            spec.scenario_id
            for batch in plan_batches(settings)
            for spec in synthesize_batch(batch, settings, sandbox).scenarios
            if spec.status == "certified"
        ]
    certified = _rows(root, "SELECT scenario_id FROM scenarios WHERE status = 'certified'")
    assert sorted(r["scenario_id"] for r in certified) == sorted(by_rules)
    calls = _rows(root, JUDGE_CALLS)
    assert len(calls) > len(by_rules)  # the probes' replies, the reference's among them
    assert {r["item"].split("#")[0] for r in calls} == {"clinic", "library"}
    assert all(r["outcome"] == "ok" for r in calls)
