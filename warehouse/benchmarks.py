"""What the benchmark commands read: an import's outcome, and the trajectories an evaluation
scores. A benchmark's scenarios carry ``source`` and their task's id as ``source_id``; a category
is a prefix of the task ids (``multi_turn_base_0``)."""

from __future__ import annotations

import os
from typing import Any

from envmill.warehouse.views import query

OUTCOME_SQL = """
SELECT status, coalesce(rejected_gate, '') AS gate, count(*) AS n
FROM scenarios
WHERE source = $source AND starts_with(source_id, $prefix)
GROUP BY ALL ORDER BY status, n DESC, gate
"""

SKIPPED_SQL = """
SELECT stage, code, count(DISTINCT item) AS n, min(message) AS example
FROM failures WHERE run_id = $run OR (error_class = 'Skipped' AND starts_with(message, $prefix))
GROUP BY ALL ORDER BY n DESC, stage, code
"""

EPISODES_SQL = """
SELECT t.trajectory_id, t.scenario_id, t.run_id, t.policy, t.reward, t.success,
       t.messages_json, t.details_json, s.source_id
FROM trajectories t JOIN scenarios s ON s.scenario_id = t.scenario_id
WHERE s.source = $source AND starts_with(s.source_id, $prefix) AND t.policy = $policy
ORDER BY t.trajectory_id
"""

SCORES_SQL = """
SELECT category, count(*) AS episodes,
       round(avg(checker_valid::INT), 3) AS checker_accuracy,
       round(avg(success::INT), 3) AS envmill_success,
       round(avg(reward), 3) AS envmill_reward,
       round(avg(agree::INT), 3) AS agreement
FROM evals WHERE benchmark = $benchmark AND policy = $policy AND starts_with(task_id, $prefix)
GROUP BY category ORDER BY category
"""


def import_outcome(
    root: str | os.PathLike[str], source: str, prefix: str, run_id: str
) -> dict[str, list[dict[str, Any]]]:
    """The imported scenarios by status and rejecting gate, and what was not imported by
    stage and code, with one example each: this run's failures (environments not admitted) and
    every run's skipped tasks of the category (a resumed import skipped them before)."""
    params = {"source": source, "prefix": prefix}
    return {
        "scenarios": query(root, OUTCOME_SQL, params).to_pylist(),
        "failures": query(root, SKIPPED_SQL, {"run": run_id, "prefix": prefix}).to_pylist(),
    }


def episodes_to_score(
    root: str | os.PathLike[str], source: str, prefix: str, policy: str
) -> list[dict[str, Any]]:
    """The policy's trajectories on a benchmark's scenarios, with each scenario's task id."""
    params = {"source": source, "prefix": prefix, "policy": policy}
    return query(root, EPISODES_SQL, params).to_pylist()


def scores(root: str | os.PathLike[str], benchmark: str, prefix: str, policy: str):
    """Per category: the benchmark checker's accuracy beside envmill's success and reward on
    the same trajectories, and how often the two verdicts agree."""
    params = {"benchmark": benchmark, "prefix": prefix, "policy": policy}
    return query(root, SCORES_SQL, params)
