"""``envmill rollout``'s refusals: one line, a non-zero exit, nothing run or written."""

from __future__ import annotations

import pytest

from envmill.warehouse.views import query
from tests.corpus import make_corpus
from tests.test_cli_run import envmill


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, sandbox):
    return make_corpus(tmp_path_factory.mktemp("rollout-cli") / "data", sandbox)


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
def test_bad_options_are_one_line(tmp_path, corpus, args, said):
    before = _commits(corpus)
    done = envmill(tmp_path, "rollout", "--out", str(corpus), *args, "--local-llm")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], done.stderr
    assert _commits(corpus) == before


def test_no_endpoint_and_an_unreachable_one(tmp_path, corpus):
    done = envmill(tmp_path, "rollout", "--out", str(corpus))
    assert done.returncode == 2 and "no LLM endpoint configured" in done.stderr
    done = envmill(
        tmp_path,
        "rollout",
        "--out",
        str(corpus),
        extra_env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    assert done.returncode == 2 and "cannot reach the LLM endpoint" in done.stderr, done.stderr
    assert query(corpus, "SELECT count(*) AS n FROM runs").to_pylist() == [{"n": 0}]


def test_a_folder_that_is_not_a_data_folder(tmp_path):
    done = envmill(tmp_path, "rollout", "--out", str(tmp_path / "nothing"), "--local-llm")
    assert done.returncode == 2 and "is not an envmill data folder" in done.stderr
