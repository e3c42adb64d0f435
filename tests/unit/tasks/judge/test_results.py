"""The results verdict (tasks/judge/results.py) and the multi-turn fields of a scenario record:
per user message, each expected result must have been obtained by the end of that message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from envmill.schemas.ids import content_id
from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.judge import judge_results, results_by_message

FIXTURES = Path(__file__).parents[3] / "fixtures"
LISTED = {"success": True, "data": ["a.txt", "b.txt"]}
READ = {"success": True, "data": {"name": "a.txt", "content": "hi"}}
OTHER = {"success": True, "data": {"name": "b.txt", "content": "yo"}}


def _multi_turn() -> dict:
    raw = json.loads((FIXTURES / "scenarios" / "file_desk.json").read_text())["multi_turn"]
    return {"env_id": "0123456789abcdef", **raw}


def test_every_expected_result_obtained_by_its_message_holds():
    verdict = judge_results([[LISTED], [], [READ]], [[LISTED], [OTHER], [READ]])
    assert verdict is not None and verdict.passed, verdict


def test_a_result_obtained_early_counts_for_a_later_message():
    verdict = judge_results([[], [READ]], [[READ], []])
    assert verdict is not None and verdict.passed


def test_a_result_obtained_only_after_its_message_was_answered_loses():
    verdict = judge_results([[LISTED], [READ]], [[], [LISTED, READ]])
    assert verdict is not None and not verdict.passed
    assert "user message 1" in verdict.reason and '"a.txt"' in verdict.reason


def test_expected_results_are_a_multiset_compared_by_canonical_json():
    reordered = {"data": {"content": "hi", "name": "a.txt"}, "success": True}
    assert judge_results([[READ]], [[reordered]]).passed  # key order does not matter
    twice = judge_results([[READ, READ]], [[READ]])
    assert twice is not None and not twice.passed  # one read does not count for two
    assert judge_results([[READ, READ]], [[READ], [READ]]) is not None


def test_a_message_never_sent_obtained_nothing_and_none_is_expected_without_results():
    verdict = judge_results([[LISTED], [READ]], [[LISTED]])
    assert verdict is not None and not verdict.passed
    assert judge_results(None, [[LISTED]]) is None


def test_a_flat_run_splits_by_message_and_overflow_goes_to_the_last():
    assert results_by_message([1, 2, 3, 4], [(0, 1), (1, 1), (1, 3)]) == [[1], [], [2, 3, 4]]


def test_a_scenario_without_turns_keeps_its_id_and_each_new_field_changes_it():
    raw = _multi_turn()
    new = ("turns", "withheld_tools", "expected_results", "source", "split")
    plain = {k: v for k, v in raw.items() if k not in new}
    plain["reference_solution"] = plain["reference_solution"][:1]
    spec = ScenarioSpec(**plain)
    legacy = content_id(
        {
            "env_id": spec.env_id,
            "initial_state": spec.initial_state,
            "task": spec.task,
            "reference_solution": [s.model_dump() for s in spec.reference_solution],
            "checks": [c.model_dump() for c in spec.checks],
        }
    )
    assert spec.scenario_id == legacy
    assert (spec.turns, spec.withheld_tools, spec.expected_results) == ([], [], None)
    assert (spec.source, spec.split) == ("envmill", "train")
    relabelled = ScenarioSpec(**{**plain, "source": "bfcl", "split": "eval"})
    assert relabelled.scenario_id == legacy  # labels, not content
    ids = {
        ScenarioSpec(**{**plain, "turns": [{"content": "And then?", "first_step": 1}]}).scenario_id,
        ScenarioSpec(**{**plain, "withheld_tools": ["purge_all"]}).scenario_id,
        ScenarioSpec(**{**plain, "expected_results": [[LISTED]]}).scenario_id,
    }
    assert legacy not in ids and len(ids) == 3


def test_the_fixture_splits_its_steps_by_message():
    spec = ScenarioSpec(**_multi_turn())
    assert spec.turn_bounds() == [(0, 1), (1, 1), (1, 2), (2, 3)]
    assert [spec.turn_of(step) for step in range(4)] == [0, 2, 3, 3]
    assert spec.user_messages[0] == spec.task and len(spec.user_messages) == 4


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"turns": [{"content": "x", "first_step": 9}]}, "turns"),
        (
            {
                "turns": [
                    {"content": "x", "first_step": 2},
                    {"content": "y", "first_step": 1},
                ]
            },
            "turns",
        ),
        ({"expected_results": [[LISTED]]}, "expected_results"),
        ({"withheld_tools": ["write_file"]}, "withheld_tools"),
        ({"split": "test"}, "split"),
    ],
)
def test_a_record_whose_turns_results_or_tools_do_not_fit_is_refused(change, field):
    with pytest.raises(ValidationError) as caught:
        ScenarioSpec(**{**_multi_turn(), **change})
    assert field in str(caught.value)
