"""``envmill rollout``'s refusals: one line, a non-zero exit, nothing run or written."""

from __future__ import annotations

import shutil

import pytest

from envmill.warehouse.views import query
from tests.cli import envmill_in as envmill


@pytest.fixture(scope="module")
def corpus(corpus, tmp_path_factory):
    """The session's corpus, copied: these tests write to it."""
    return shutil.copytree(corpus, tmp_path_factory.mktemp("rollout-cli") / "data", symlinks=True)


def _commits(root) -> set[str]:
    return {path.name for path in (root / "_commits").iterdir()}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--scenarios", "no_such_column = 1"], "--scenarios 'no_such_column = 1':"),
        (["--scenarios", "1 = 1; DELETE FROM scenarios"], "syntax error"),
        (
            ["--scenarios", "1 = 1); COPY scenarios TO 'x.csv'; SELECT (1"],
            "--scenarios refused: one statement at a time",
        ),
        (["--scenarios", "domain = 'none of these'"], "no certified scenarios match"),
        (["--samples", "0"], "setting 'rollout.samples'"),
        (["--max-steps", "-3"], "setting 'rollout.max_steps'"),
    ],
)
def test_bad_options_are_one_line(cli, corpus, args, said):
    before = _commits(corpus)
    done = cli("rollout", "--out", str(corpus), *args, "--local-llm")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], done.stderr
    assert _commits(corpus) == before


def test_no_endpoint_and_an_unreachable_one(cli, tmp_path, corpus):
    """The first as the console command runs it, the second in-process."""
    done = envmill(tmp_path, "rollout", "--out", str(corpus))
    assert done.returncode == 2 and "no LLM endpoint configured" in done.stderr
    done = cli("rollout", "--out", str(corpus), OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    assert done.returncode == 2 and "cannot reach the LLM endpoint" in done.stderr, done.stderr
    assert query(corpus, "SELECT count(*) AS n FROM runs").to_pylist() == [{"n": 0}]


def test_a_folder_that_is_not_a_data_folder(cli, tmp_path):
    done = cli("rollout", "--out", str(tmp_path / "nothing"), "--local-llm")
    assert done.returncode == 2 and "is not an envmill data folder" in done.stderr


def _verdicts(root, trajectory_id: str) -> dict[str, bool]:
    sql = "SELECT filter, kept FROM verdicts WHERE trajectory_id = $t"
    return {r["filter"]: r["kept"] for r in query(root, sql, {"t": trajectory_id}).to_pylist()}


def test_filter_judges_stored_trajectories_again_and_the_latest_verdict_counts(
    cli, tmp_path, corpus
):
    """The first filter as the console command runs it, the others in-process."""
    from envmill.warehouse.store import Warehouse

    (reference,) = query(
        corpus, "SELECT * FROM trajectories WHERE policy = 'reference' LIMIT 1"
    ).to_pylist()
    half = {**reference, "trajectory_id": "f" * 16, "policy": "half-model", "reward": 0.5}
    half["success"] = False
    Warehouse(corpus).write("trajectories", [half], key="half")
    done = envmill(tmp_path, "filter", "--out", str(corpus))
    assert done.returncode == 0, done.stderr
    assert "reward: " in done.stdout and "1 dropped" in done.stdout
    assert _verdicts(corpus, reference["trajectory_id"]) == dict.fromkeys(
        ("reward", "length", "format", "user_sanity"), True
    )
    assert _verdicts(corpus, "f" * 16)["reward"] is False
    looser = cli(
        "filter", "--out", str(corpus), "--policy", "half-model", "--min-reward", "0.4",
        "--any-success",
    )  # fmt: skip
    assert looser.returncode == 0, looser.stderr
    assert _verdicts(corpus, "f" * 16)["reward"] is True
    nothing = cli("filter", "--out", str(corpus), "--policy", "nobody")
    assert nothing.returncode == 1 and "no trajectories to judge" in nothing.stderr
