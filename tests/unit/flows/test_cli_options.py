"""The CLI's refusals of bad options, settings and data folders, through ``main()`` in this
process: one line on stderr, exit code 2, nothing written. (One refusal from the console command
itself: tests/e2e/test_cli_run.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("args", "setup", "fragment"),
    [
        (["run", "--bogus"], None, "No such option"),
        (["run", "--envs", "0"], None, "setting 'envs'"),
        (["run", "--scenarios-per-env", "-3"], None, "setting 'scenarios_per_env'"),
        (["run", "--envs", "many"], None, "Invalid value for '--envs'"),
        (["run", "--domains", "library,atlantis"], None, "unknown domain 'atlantis'"),
        (["run", "--backend", "quantum"], None, "setting 'backend'"),
        (["run", "--backend", "llm"], None, "no LLM endpoint configured"),
        (["run", "--backend", "llm", "--topics", "none.txt"], None, "none.txt"),
        (["run", "--out", "afile"], lambda t: _write(t / "afile", "x"), "afile"),
        (
            ["run", "--out", "foreign"],
            lambda t: _write(t / "foreign" / "notes.txt", "mine"),
            "not an envmill data folder",
        ),
        (
            ["run", "--out", "future"],
            lambda t: _write(
                t / "future" / "envmill.json", '{"format": "envmill-warehouse", "version": "3.0"}'
            ),
            "format 3.0",
        ),
        (["run"], lambda t: _write(t / "envmill.toml", "envs = [broken"), "envmill.toml"),
        (["run"], lambda t: _write(t / "envmill.toml", "envs = -1\n"), "setting 'envs'"),
        (
            ["run"],
            lambda t: _write(t / "envmill.toml", '[reward]\njudge = "oracle"\n'),
            "setting 'reward.judge'",
        ),
        (  # the LLM judge certifies the scenarios: a run without its model stops before it starts
            ["run"],
            lambda t: _write(t / "envmill.toml", '[reward]\njudge = "llm"\n'),
            "no LLM endpoint configured",
        ),
        (["sql", "SELECT 1", "--out", "nowhere"], None, "not an envmill data folder"),
        (["stats", "--out", "nowhere"], None, "not an envmill data folder"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(cli, tmp_path, args, setup, fragment):
    if setup:
        setup(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    done = cli(*args)
    assert done.returncode == 2, done.stderr
    assert fragment in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
