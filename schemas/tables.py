"""Warehouse tables as every reader sees them: name, columns (Arrow types and nullability), key and
the rank of duplicate rows. Scalar columns are the ones queries filter or aggregate on; nested
objects are canonical JSON text in columns named ``*_json``, which DuckDB's JSON operators read
directly (DESIGN §3.5).

What a value must satisfy (patterns, ranges, statuses) is the pandera model of each table, in
``schemas.table_models``: only a process that validates a batch (the writer, ``envmill verify``)
imports it, since pandera and pandas take about a second of CPU to import and every read command
(``envmill sql``, ``stats``, ``runs``, ``show``) would pay it. The columns are declared in both
places; a unit test checks that each model derives exactly the Arrow schema declared here, and a
strict model refuses a batch whose columns differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from envmill.schemas.ids import content_id

HEX16 = r"^[0-9a-f]{16}$"
RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
RUN_STATUSES = ("running", "finished", "failed", "interrupted")
TOOL_KINDS = ("query", "state_change")
MODES = ("non_conversational", "conversational")
SCENARIO_STATUSES = ("certified", "rejected")
LLM_OUTCOMES = ("ok", "failed", "refused")
PROBE_KINDS = ("positive", "negative")
VERDICTS = ("pass", "warning", "fail")
SPLITS = ("train", "eval")
TERMINATIONS = ("finished", "max_steps", "tool_error", "model_error", "user_stop")

STRING, INT, FLOAT, BOOL = pa.string(), pa.int64(), pa.float64(), pa.bool_()
UTC_TIME = pa.timestamp("us", tz="UTC")


def _column(name: str, type_: pa.DataType) -> pa.Field:
    """A column that is never NULL."""
    return pa.field(name, type_, nullable=False)


def _nullable(name: str, type_: pa.DataType) -> pa.Field:
    return pa.field(name, type_, nullable=True)


@dataclass(frozen=True)
class TableSpec:
    """Everything the writer and the views need to know about one table.

    ``arrow_schema`` is the type every part is written with (pandera's pyarrow backend does not
    coerce, so the writer builds each batch with it before validating it, STACK §4), and the
    typed empty table every view unions its parts with. ``order_by`` ranks duplicate rows of one
    key, best first: views keep one row per key as a safety net when two parts hold the same id
    (DESIGN §3.5).
    """

    name: str
    arrow_schema: pa.Schema
    key: tuple[str, ...]
    order_by: str = ""
    defaults_now: tuple[str, ...] = field(default=())

    def empty_table(self) -> pa.Table:
        """No rows, every column typed. Not ``Schema.empty_table()``: it makes each column from a
        Python list, and pyarrow imports pandas (about 0.4 s of CPU) to ask whether that list is a
        pandas object; a table of no batches makes no array."""
        return pa.Table.from_batches([], schema=self.arrow_schema)

    @property
    def columns(self) -> list[str]:
        return self.arrow_schema.names

    @property
    def json_columns(self) -> list[str]:
        return [c for c in self.columns if c.endswith("_json")]


_NEWEST = "created_at DESC"
_NOW = ("created_at",)
TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in (
        TableSpec(
            "runs",
            pa.schema(
                [
                    _column("run_id", STRING),
                    _column("started_at", UTC_TIME),
                    _nullable("finished_at", UTC_TIME),
                    _column("status", STRING),
                    _column("backend", STRING),
                    _column("seed", INT),
                    _column("settings_json", STRING),
                    _column("versions_json", STRING),
                    _column("counts_json", STRING),
                    _column("timings_json", STRING),
                    _column("isolation", STRING),
                ]
            ),
            ("run_id",),
            "finished_at DESC NULLS LAST, started_at DESC",
        ),
        TableSpec(
            "environments",
            pa.schema(
                [
                    _column("env_id", STRING),
                    _column("run_id", STRING),
                    _column("domain", STRING),
                    _column("backend", STRING),
                    _column("class_name", STRING),
                    _column("topic", STRING),
                    _column("introduction", STRING),
                    _column("business_rules_json", STRING),
                    _column("source", STRING),
                    _column("tools_json", STRING),
                    _column("state_schema_json", STRING),
                    _column("n_tools", INT),
                    _column("n_query_tools", INT),
                    _column("n_state_change_tools", INT),
                    _column("checked_json", STRING),
                    _nullable("warnings_json", STRING),  # format 2.2; NULL in older parts
                    _nullable("origin", STRING),  # 2.3: where it came from ("envmill", "bfcl")
                    _nullable("seed", INT),
                    _nullable("provenance_json", STRING),
                    _column("created_at", UTC_TIME),
                ]
            ),
            ("env_id",),
            _NEWEST,
            _NOW,
        ),
        TableSpec(
            "tools",
            pa.schema(
                [
                    _column("env_id", STRING),
                    _column("name", STRING),
                    _column("kind", STRING),
                    _column("description", STRING),
                    _column("parameters_json", STRING),
                    _column("n_params", INT),
                ]
            ),
            ("env_id", "name"),
        ),
        TableSpec(
            "scenarios",
            pa.schema(
                [
                    _column("scenario_id", STRING),
                    _column("env_id", STRING),
                    _column("run_id", STRING),
                    _column("backend", STRING),
                    _column("mode", STRING),
                    _column("task", STRING),
                    _column("user_facts_json", STRING),
                    _column("initial_state_json", STRING),
                    _column("reference_solution_json", STRING),
                    _column("checks_json", STRING),
                    _nullable("reference_answer", STRING),
                    _nullable("expected_answer_json", STRING),
                    _nullable("refusal_json", STRING),
                    _nullable("kind", STRING),
                    _nullable("turns_json", STRING),  # format 2.3; NULL in older parts
                    _nullable("withheld_tools_json", STRING),  # 2.3
                    _nullable("expected_results_json", STRING),  # 2.3
                    _nullable("source", STRING),  # 2.3: where it came from ("envmill", "bfcl")
                    _nullable("split", STRING),  # 2.3: "train" or "eval"
                    _nullable("source_id", STRING),  # 2.3: its id there ("multi_turn_base_0")
                    _column("n_checks", INT),
                    _column("n_steps", INT),
                    _column("status", STRING),
                    _nullable("rejected_gate", STRING),
                    _column("gates_json", STRING),
                    _column("repairs", INT),
                    _nullable("provenance_json", STRING),
                    _column("created_at", UTC_TIME),
                ]
            ),
            ("scenario_id",),
            _NEWEST,
            _NOW,
        ),
        TableSpec(
            "trajectories",
            pa.schema(
                [
                    _column("trajectory_id", STRING),
                    _column("scenario_id", STRING),
                    _column("env_id", STRING),
                    _column("run_id", STRING),
                    _column("policy", STRING),
                    _column("messages_json", STRING),
                    _column("check_results_json", STRING),
                    _column("reward", FLOAT),
                    _column("success", BOOL),
                    _column("steps", INT),
                    _column("termination", STRING),
                    _column("usage_json", STRING),
                    _column("timings_json", STRING),
                    _nullable("provenance_json", STRING),
                    _nullable("details_json", STRING),
                    _column("created_at", UTC_TIME),
                ]
            ),
            ("trajectory_id",),
            _NEWEST,
            _NOW,
        ),
        TableSpec(
            "verdicts",
            pa.schema(
                [
                    _column("trajectory_id", STRING),
                    _column("filter", STRING),
                    _column("run_id", STRING),
                    _column("kept", BOOL),
                    _column("reason", STRING),
                    _column("details_json", STRING),
                    _column("created_at", UTC_TIME),
                ]
            ),
            ("trajectory_id", "filter"),
            _NEWEST,
            _NOW,
        ),
        TableSpec(
            "failures",
            pa.schema(
                [
                    _column("failure_id", STRING),
                    _column("run_id", STRING),
                    _column("stage", STRING),
                    _column("item", STRING),
                    _column("error_class", STRING),
                    _column("code", STRING),
                    _column("message", STRING),
                    _column("details_json", STRING),
                    _column("attempts", INT),
                    _column("created_at", UTC_TIME),
                ]
            ),
            ("failure_id",),
            f"attempts DESC, {_NEWEST}",
            _NOW,
        ),
        TableSpec(
            "llm_calls",
            pa.schema(
                [
                    _column("call_id", STRING),
                    _column("run_id", STRING),
                    _column("stage", STRING),
                    _column("item", STRING),
                    _column("model", STRING),
                    _column("prompt_hash", STRING),
                    _column("request_hash", STRING),
                    _column("sample", INT),
                    _column("prompt_tokens", INT),
                    _column("completion_tokens", INT),
                    _column("latency_seconds", FLOAT),
                    _column("queue_seconds", FLOAT),
                    _column("cache_hit", BOOL),
                    _column("attempts", INT),
                    _column("outcome", STRING),
                    _column("error_class", STRING),
                    _column("error", STRING),
                    _column("cost_usd", FLOAT),
                    _column("created_at", UTC_TIME),
                ]
            ),
            ("call_id",),
            _NEWEST,
        ),
        TableSpec(
            "env_probes",
            pa.schema(
                [
                    _column("probe_id", STRING),
                    _column("run_id", STRING),
                    _column("env_id", STRING),
                    _column("topic", STRING),
                    _column("item", STRING),
                    _column("probe_index", INT),
                    _column("round", INT),
                    _column("tool", STRING),
                    _column("tool_kind", STRING),
                    _column("kind", STRING),
                    _column("expectation", STRING),
                    _column("arguments_json", STRING),
                    _column("result_json", STRING),
                    _column("state_diff_json", STRING),
                    _column("verdict", STRING),
                    _column("reason", STRING),
                    _column("created_at", UTC_TIME),
                ]
            ),
            ("probe_id",),
            _NEWEST,
            _NOW,
        ),
        TableSpec(
            "topics",
            pa.schema(
                [
                    _column("candidate_id", STRING),
                    _column("run_id", STRING),
                    _column("source", STRING),
                    _column("format", STRING),
                    _column("text", STRING),
                    _column("tools_json", STRING),
                    _column("status", STRING),
                    _nullable("reason_code", STRING),
                    _column("message", STRING),
                    _nullable("stateful", BOOL),
                    _nullable("domain_specific", BOOL),
                    _nullable("verdict_reason", STRING),
                    _nullable("topic", STRING),
                    _nullable("introduction", STRING),
                    _nullable("usefulness", INT),
                    _nullable("modelability", INT),
                    _nullable("duplicate_of", STRING),
                    _nullable("selection_rank", INT),
                    _column("prompt_hash", STRING),
                    _column("created_at", UTC_TIME),
                ]
            ),
            ("candidate_id",),
            _NEWEST,
            _NOW,
        ),
        TableSpec(
            "duplicates",
            pa.schema(
                [
                    _column("kind", STRING),
                    _column("item_id", STRING),
                    _column("duplicate_of", STRING),
                    _column("similarity", FLOAT),
                    _column("measure", STRING),
                    _column("run_id", STRING),
                    _column("created_at", UTC_TIME),
                ]
            ),
            ("kind", "item_id", "duplicate_of", "measure"),
            _NEWEST,
            _NOW,
        ),
        TableSpec(
            "evals",
            pa.schema(
                [
                    _column("trajectory_id", STRING),
                    _column("benchmark", STRING),
                    _column("run_id", STRING),
                    _column("scenario_id", STRING),
                    _column("category", STRING),
                    _column("task_id", STRING),
                    _column("policy", STRING),
                    _column("reward", FLOAT),
                    _column("success", BOOL),
                    _column("checker_valid", BOOL),
                    _column("checker_error", STRING),
                    _column("agree", BOOL),
                    _column("details_json", STRING),
                    _column("created_at", UTC_TIME),
                ]
            ),
            ("trajectory_id", "benchmark"),
            _NEWEST,
            _NOW,
        ),
    )
}


def derive_call_id(run_id: str, request_hash: str, item: str, created_at: str) -> str:
    """Call ids hash run, request, item and time: a repeated request in one run is another row."""
    return content_id({"run_id": run_id, "request": request_hash, "item": item, "at": created_at})


def derive_failure_id(run_id: str, stage: str, item: str) -> str:
    """Failure ids hash run, stage and item, so a retried item that fails again keeps its id."""
    return content_id({"run_id": run_id, "stage": stage, "item": item})
