"""The episodes of a rollout run: each certified scenario times ``samples``, keyed by content.

An episode's key hashes the scenario, the policy and user models, the sample index and the
settings that shape an episode, never its place in the plan, so a rerun (or a run with another
batch size) finds the episodes it finished.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from envmill.schemas.ids import content_id
from envmill.schemas.rollout import EpisodeBatch, EpisodeSpec, RolloutSettings
from envmill.schemas.scenario import ScenarioSpec

ROLLOUT_VERSION = "rollout-1"  # bump when an episode's course changes for the same inputs


def episode_key(
    scenario_id: str, sample: int, models: dict[str, str], settings: RolloutSettings
) -> str:
    return content_id(
        {
            "scenario_id": scenario_id,
            "sample": sample,
            "models": models,
            "max_steps": settings.max_steps,
            "max_calls_per_turn": settings.max_calls_per_turn,
            "max_bad_turns": settings.max_bad_turns,
            "version": ROLLOUT_VERSION,
        }
    )


def episode_specs(
    rows: Iterable[dict[str, Any]], models: dict[str, str], settings: RolloutSettings
) -> Iterator[EpisodeSpec]:
    """``samples`` episodes per scenario row (as ``warehouse.episodes`` reads them)."""
    for row in rows:
        scenario = scenario_of(row)
        for sample in range(settings.samples):
            yield EpisodeSpec(
                key=episode_key(row["scenario_id"], sample, models, settings),
                sample=sample,
                scenario=scenario,
                scenario_id=row["scenario_id"],
                class_name=row["class_name"],
                source=row["module_source"],
                tools=_json(row["tools_json"]),
                introduction=row["introduction"] or "",
                business_rules=_json(row["business_rules_json"]) or [],
                state_changing_tools=list(row["state_changing_tools"] or []),
                domain=row["domain"] or "",
                backend=row["env_backend"] or "",
            )


def scenario_of(row: dict[str, Any]) -> ScenarioSpec:
    return ScenarioSpec(
        env_id=row["env_id"],
        backend=row["backend"],
        mode=row["mode"],
        task=row["task"],
        user_facts=_json(row["user_facts_json"]) or {},
        initial_state=_json(row["initial_state_json"]),
        reference_solution=_json(row["reference_solution_json"]),
        checks=_json(row["checks_json"]),
        reference_answer=row.get("reference_answer"),
        expected_answer=_json(row.get("expected_answer_json")),
        refusal=_json(row.get("refusal_json")),
        kind=row.get("kind"),
        turns=_json(row.get("turns_json")) or [],  # NULL in parts older than format 2.3
        withheld_tools=_json(row.get("withheld_tools_json")) or [],
        expected_results=_json(row.get("expected_results_json")),
        source=row.get("source") or "envmill",
        split=row.get("split") or "train",
    )


def episode_batches(episodes: Iterable[EpisodeSpec], size: int) -> Iterator[EpisodeBatch]:
    """``size`` episodes at a time, lazily; a batch's key hashes its episodes' keys."""
    todo = iter(episodes)
    while chunk := list(islice(todo, size)):
        yield EpisodeBatch(key=content_id({"episodes": [e.key for e in chunk]}), episodes=chunk)


def _json(text: Any) -> Any:
    return json.loads(text) if isinstance(text, str) else text
