"""Inputs a run cannot use are one line before anything starts: a 10 MB topic line went into
every prompt, a 100,000-line topics file started as many builds, a 200,000-deep scenario file
ended in ``RecursionError``, a NaN argument in ``ValueError: Out of range float values`` (issue
24)."""

from __future__ import annotations

import json
import os

import pytest

ENV_MODULE = '''
class Notes:
    """A note book."""

    def __init__(self):
        self.notes = {"N-1": {"text": "hi"}}

    def read_note(self, note_id: str) -> dict:
        """Read a note.

        Args:
            note_id: the note's id.
        """
        return {"success": True, "data": self.notes.get(note_id)}
'''


def _one_line_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    return lines[0]


def test_a_topic_over_the_limit_is_refused_with_its_line(cli, tmp_path):
    topics = tmp_path / "topics.txt"
    topics.write_text("a pet grooming salon\n\n" + "x" * 2001 + "\n", encoding="utf-8")
    result = cli("run", "--backend", "llm", "--topics", str(topics), "--out", str(tmp_path / "d"))
    assert result.returncode == 2
    line = _one_line_error(result)
    assert "line 3" in line and "2001 characters" in line and "max_topic_chars" in line, line


def test_more_topics_than_the_limit_ask_for_max_topics(cli, tmp_path):
    topics = tmp_path / "topics.txt"
    topics.write_text("".join(f"topic number {n}\n" for n in range(1001)), encoding="utf-8")
    result = cli("run", "--backend", "llm", "--topics", str(topics), "--out", str(tmp_path / "d"))
    assert result.returncode == 2
    assert "--max-topics 1001" in _one_line_error(result)


def test_a_named_pipe_for_a_topics_file_is_refused_not_waited_on(cli, tmp_path):
    pipe = tmp_path / "topics.txt"
    os.mkfifo(pipe)
    result = cli("run", "--backend", "llm", "--topics", str(pipe), "--out", str(tmp_path / "d"))
    assert result.returncode == 2
    assert "not a regular file" in _one_line_error(result)


@pytest.mark.parametrize("depth", [65, 200_000])
def test_a_deeply_nested_scenario_file_is_one_line_naming_it(cli, tmp_path, depth):
    module = tmp_path / "notes.py"
    module.write_text(ENV_MODULE, encoding="utf-8")
    scenarios = tmp_path / "deep.json"
    scenarios.write_text("[" * depth + "]" * depth, encoding="utf-8")
    result = cli("env", "certify", str(module), str(scenarios))
    assert result.returncode == 2
    line = _one_line_error(result)
    assert "deep.json" in line and "64 levels" in line, line


def test_a_nan_argument_names_the_scenario_and_the_field():
    from envmill.flows.cli.support import json_depth, non_finite_at

    scenario = json.loads('{"reference_solution": [{"tool": "t", "arguments": {"x": NaN}}]}')
    assert non_finite_at(scenario) == "reference_solution[0].arguments.x"
    assert non_finite_at({"a": [1, 2.5, "NaN"]}) is None
    assert json_depth([[{"a": [1]}]]) == 4 and json_depth(3) == 0
