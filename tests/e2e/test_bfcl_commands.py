"""``envmill import bfcl`` and ``envmill eval`` as a user runs them: a few BFCL multi-turn
tasks imported and certified, the reference replayed through the test endpoint and scored by
BFCL's own checker beside envmill into ``evals``, the export holding them out; and the
commands' refusals, each one line with a non-zero exit."""

from __future__ import annotations

import pytest

from envmill.warehouse.views import query
from tests.cli import envmill_in as envmill

TASKS = "6"


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    home = tmp_path_factory.mktemp("bfcl")
    done = envmill(home, "import", "bfcl", "--limit", TASKS, "--out", str(home / "data"))
    assert done.returncode == 0, done.stderr
    return home, done


def test_the_import_says_what_certified_and_why_the_rest_did_not(imported):
    home, done = imported
    assert "BFCL multi-turn base" in done.stdout
    rows = query(
        home / "data",
        "SELECT status, rejected_gate, source, split, source_id FROM scenarios ORDER BY source_id",
    ).to_pylist()
    assert len(rows) == int(TASKS)  # the first six tasks all import (none calls logarithm)
    assert {(r["source"], r["split"]) for r in rows} == {("bfcl", "eval")}
    for row in rows:
        assert row["source_id"].startswith("multi_turn_base_")
        assert row["status"] in done.stdout
        if row["status"] == "rejected":
            assert row["rejected_gate"] in done.stdout
    origins = query(home / "data", "SELECT DISTINCT origin FROM environments").to_pylist()
    assert origins == [{"origin": "bfcl"}]


def test_eval_scores_the_reference_with_bfcls_checker_and_envmill_alike(imported):
    """With ``--include-ungrounded``: the certified scenarios and those grounded alone rejected
    (every gate of their reward passed); the test endpoint replays the reference trajectory of
    the first and the reference calls of the second. One run, to keep the suite short."""
    home, _ = imported
    data = home / "data"
    counts = query(
        data,
        "SELECT count(*) FILTER (WHERE status = 'certified') AS certified, count(*) FILTER ("
        "WHERE status = 'certified' OR (rejected_gate = 'grounded' AND len(list_filter("
        'from_json(gates_json, \'[{"passed": "BOOLEAN"}]\'), lambda g: NOT g.passed)) = 1))'
        " AS sound FROM scenarios",
    ).to_pylist()[0]
    done = envmill(
        home, "eval", "--benchmark", "bfcl-mt", "--local-llm", "--include-ungrounded",
        "--out", str(data),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "multi_turn_base" in done.stdout and "agreement" in done.stdout
    rows = query(data, "SELECT * FROM evals").to_pylist()
    assert len(rows) == counts["sound"] > counts["certified"] > 0
    assert all(r["checker_valid"] and r["success"] and r["agree"] for r in rows), rows
    held = envmill(
        home, "export", "--format", "openai", "--to", str(home / "sft"), "--out", str(data)
    )
    assert held.returncode == 1 and "--include-source" in held.stderr, held.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["import", "bfcl", "--category", "nope"], "setting 'bfcl.category'"),
        (["import", "bfcl", "--limit", "-1"], "setting 'bfcl.limit'"),
        (["eval", "--benchmark", "tau-bench"], "unknown benchmark 'tau-bench'"),
        (["eval", "--benchmark", "bfcl-mt", "--category", "nope"], "unknown category 'nope'"),
    ],
)
def test_bad_options_are_one_line(cli, tmp_path, args, said):
    done = cli(*args, "--out", str(tmp_path / "data"))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], done.stderr


def test_eval_on_a_folder_without_the_benchmark_says_what_to_run(cli, imported, tmp_path):
    done = cli("eval", "--benchmark", "bfcl-mt", "--out", str(tmp_path / "none"), "--local-llm")
    assert done.returncode == 2 and "envmill import bfcl" in done.stderr, done.stderr
    home, _ = imported
    done = cli(
        "eval", "--benchmark", "bfcl-mt", "--category", "miss_func", "--local-llm",
        "--out", str(home / "data"),
    )  # fmt: skip
    assert done.returncode == 2 and "no certified scenarios match" in done.stderr, done.stderr
