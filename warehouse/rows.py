"""Stage records → warehouse rows, and one batch's rows → one committed part per table.

The part key is the batch key, so a rerun of the same batch replaces its parts instead of adding
rows; the commit record written last makes them visible and names the items they cover, which is
how a rerun resumes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from envmill.schemas.environment import EnvironmentRecord
from envmill.schemas.ids import content_id
from envmill.schemas.llm import LlmCallRecord
from envmill.schemas.rollout import VerdictRecord
from envmill.schemas.run import BatchOutput, FailureRecord
from envmill.schemas.scenario import ScenarioRecord
from envmill.schemas.skeleton import ProbeRecord
from envmill.schemas.tables import TABLES, derive_call_id, derive_failure_id
from envmill.schemas.topics import TopicRecord
from envmill.schemas.trajectory import TrajectoryRecord
from envmill.warehouse.commits import Commit, publish, retract
from envmill.warehouse.store import Warehouse, checked_table, spec_of


def provenance(made_by: dict[str, Any], run_id: str, backend: str, **about: Any) -> dict:
    """An artifact's provenance: its run and backend, the generator, models and prompt hashes
    behind it (``made_by``), and ``about`` it: its seed and its parent artifact."""
    return {"run_id": run_id, "backend": backend, **made_by, **about}


def environment_row(
    env: EnvironmentRecord, run_id: str, made_by: dict[str, Any] | None = None
) -> dict[str, Any]:
    kinds = [env.tool_kinds.get(tool.function.name, "query") for tool in env.tools]
    return {
        "env_id": env.env_id,
        "run_id": run_id,
        "domain": env.domain,
        "backend": env.backend,
        "class_name": env.class_name,
        "topic": env.topic,
        "introduction": env.introduction,
        "business_rules_json": env.business_rules,
        "source": env.source,
        "tools_json": [tool.model_dump() for tool in env.tools],
        "state_schema_json": env.state_schema,
        "n_tools": len(env.tools),
        "n_query_tools": kinds.count("query"),
        "n_state_change_tools": kinds.count("state_change"),
        "checked_json": env.checked,
        "warnings_json": [warning.model_dump() for warning in env.warnings],
        "origin": env.origin,
        "seed": env.seed,
        "provenance_json": provenance(
            made_by or {}, run_id, env.backend, seed=env.seed, parent={"topic": env.topic}
        ),
    }


def tool_rows(env: EnvironmentRecord) -> list[dict[str, Any]]:
    return [
        {
            "env_id": env.env_id,
            "name": tool.function.name,
            "kind": env.tool_kinds.get(tool.function.name, "query"),
            "description": tool.function.description,
            "parameters_json": tool.function.parameters,
            "n_params": len(tool.function.parameters.get("properties", {})),
        }
        for tool in env.tools
    ]


def scenario_row(
    scenario: ScenarioRecord,
    run_id: str,
    made_by: dict[str, Any] | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    return {
        "scenario_id": scenario.scenario_id,
        "env_id": scenario.env_id,
        "run_id": run_id,
        "backend": scenario.backend,
        "mode": scenario.mode,
        "task": scenario.task,
        "user_facts_json": scenario.user_facts,
        "initial_state_json": scenario.initial_state,
        "reference_solution_json": [step.model_dump() for step in scenario.reference_solution],
        "checks_json": [check.model_dump() for check in scenario.checks],
        "reference_answer": scenario.reference_answer,
        "expected_answer_json": _dumped(scenario.expected_answer),
        "refusal_json": _dumped(scenario.refusal),
        "kind": scenario.kind,
        "turns_json": [turn.model_dump() for turn in scenario.turns],
        "withheld_tools_json": list(scenario.withheld_tools),
        "expected_results_json": scenario.expected_results,
        "source": scenario.source,
        "split": scenario.split,
        "source_id": scenario.source_id,
        "n_checks": len(scenario.checks),
        "n_steps": len(scenario.reference_solution),
        "status": scenario.status,
        "rejected_gate": scenario.rejected_gate,
        "gates_json": [gate.model_dump() for gate in scenario.gates],
        "repairs": scenario.repairs,
        "provenance_json": provenance(
            made_by or {}, run_id, scenario.backend, seed=seed, parent={"env_id": scenario.env_id}
        ),
    }


def trajectory_row(
    trajectory: TrajectoryRecord,
    run_id: str,
    made_by: dict[str, Any] | None = None,
    backend: str = "",
    seed: int | None = None,
) -> dict[str, Any]:
    return {
        "trajectory_id": trajectory.trajectory_id,
        "scenario_id": trajectory.scenario_id,
        "env_id": trajectory.env_id,
        "run_id": run_id,
        "policy": trajectory.policy,
        "messages_json": trajectory.messages,
        "check_results_json": trajectory.check_results,
        "reward": trajectory.reward,
        "success": trajectory.success,
        "steps": trajectory.steps,
        "termination": trajectory.termination,
        "usage_json": trajectory.usage,
        "timings_json": trajectory.timings,
        "details_json": trajectory.details,
        "provenance_json": provenance(
            (made_by or {}) | {"policy": trajectory.policy},
            run_id,
            backend,
            seed=seed,
            parent={"scenario_id": trajectory.scenario_id},
        ),
    }


def verdict_row(verdict: VerdictRecord, run_id: str) -> dict[str, Any]:
    row = verdict.model_dump(exclude={"details"})
    return row | {"run_id": run_id, "details_json": verdict.details}


def failure_row(failure: FailureRecord, run_id: str) -> dict[str, Any]:
    return {
        "failure_id": derive_failure_id(run_id, failure.stage, failure.item),
        "run_id": run_id,
        "stage": failure.stage,
        "item": failure.item,
        "error_class": failure.error_class,
        "code": failure.code,
        "message": failure.message,
        "details_json": failure.details,
        "attempts": failure.attempts,
    }


def llm_call_row(call: LlmCallRecord, run_id: str) -> dict[str, Any]:
    created_at = call.created_at.isoformat()
    row = call.model_dump(exclude={"run_id"})
    return row | {
        "call_id": derive_call_id(run_id, call.request_hash, call.item, created_at),
        "run_id": run_id,
    }


def topic_row(topic: TopicRecord, run_id: str) -> dict[str, Any]:
    row = topic.model_dump(exclude={"tools"})
    return row | {"run_id": run_id, "tools_json": list(topic.tools)}


def write_topics(
    warehouse: Warehouse,
    topics: list[TopicRecord],
    calls: list[LlmCallRecord],
    *,
    key: str,
    run_id: str,
) -> None:
    """One ``topics`` part under the mining key (a rerun replaces it), and the run's LLM calls in
    a part of their own: a rerun's cache hits are rows of that rerun, the first run keeps its cost.
    """
    if topics:
        warehouse.write("topics", [topic_row(t, run_id) for t in topics], key=key)
    if calls:
        rows = [llm_call_row(call, run_id) for call in calls]
        warehouse.write("llm_calls", rows, key=f"{key}-{run_id}")


def probe_row(probe: ProbeRecord, run_id: str) -> dict[str, Any]:
    row = probe.model_dump(exclude={"run_id", "arguments", "result", "state_diff"})
    return row | {
        "probe_id": content_id({"env_id": probe.env_id, "probe": probe.probe_index, "run": run_id}),
        "run_id": run_id,
        "arguments_json": probe.arguments,
        "result_json": probe.result,
        "state_diff_json": probe.state_diff,
    }


def write_batch(
    warehouse: Warehouse,
    output: BatchOutput,
    run_id: str,
    may_write: Callable[[], bool] = lambda: True,
) -> bool:
    """Commit one batch: a part per table under the batch key, then the record that makes them
    visible together and lists the items they cover.

    ``may_write`` is asked before the first part and again before the record: a run that was
    stopped meanwhile gets nothing visible from this batch (False is returned).
    """
    made_by, envs = output.provenance, {e.env_id: e for e in output.environments}
    seed = {env_id: env.seed for env_id, env in envs.items()}
    backend = {env_id: env.backend for env_id, env in envs.items()}
    tables = {
        "environments": [environment_row(e, run_id, made_by) for e in output.environments],
        "tools": [row for e in output.environments for row in tool_rows(e)],
        "scenarios": [
            scenario_row(s, run_id, made_by, seed.get(s.env_id)) for s in output.scenarios
        ],
        "trajectories": [
            trajectory_row(t, run_id, made_by, backend.get(t.env_id, ""), seed.get(t.env_id))
            for t in output.trajectories
        ],
        "failures": [failure_row(f, run_id) for f in output.failures],
        "llm_calls": [llm_call_row(c, run_id) for c in output.llm_calls],
        "env_probes": [probe_row(p, run_id) for p in output.env_probes],
        "verdicts": [verdict_row(v, run_id) for v in output.verdicts],
    }
    checked = {t: checked_table(spec_of(t), rows) for t, rows in tables.items() if rows}
    if not may_write():
        return False
    retract(warehouse.root, output.key, list(TABLES))
    parts = {t: warehouse.write_part(t, arrow, output.key) for t, arrow in checked.items()}
    if not may_write():
        retract(warehouse.root, output.key, list(TABLES))
        return False
    commit = Commit(
        key=output.key,
        kind="batch",
        run_id=run_id,
        parts=parts,
        items=output.items,
        counts=output.counts(),
        seconds=output.seconds,
    )
    publish(warehouse.root, commit)
    return True


def write_failed_batch(
    warehouse: Warehouse, row: dict[str, Any], batch_key: str, items: list[str], run_id: str
) -> None:
    """A batch that failed outright: its failure row, committed with the items it did not make,
    so a later batch that makes them supersedes it (``retract_superseded_failures``)."""
    key = f"failed-{batch_key}"
    info = warehouse.write_part("failures", checked_table(spec_of("failures"), [row]), key)
    commit = Commit(key=key, kind="failure", run_id=run_id, parts={"failures": info}, items=items)
    publish(warehouse.root, commit)


def _dumped(record: BaseModel | None) -> dict[str, Any] | None:
    return record.model_dump() if record is not None else None
