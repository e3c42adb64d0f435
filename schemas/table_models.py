"""The pandera model of each warehouse table: what every value of a batch must satisfy (patterns,
ranges, statuses, checks across columns) before the writer commits it, and what ``envmill verify``
checks each committed part against.

Imported only where a table is validated (``warehouse.store.validate_table``): pandera and pandas
take about a second of CPU to import, which no read command should pay. The tables' names, keys
and Arrow schemas are in ``schemas.tables``; each model here declares the same columns, and
:func:`arrow_schema` derives from it the schema a unit test compares with the declared one.
"""

# pandera declares ``Config: type[BaseConfig]``; the nested ``class Config:`` it documents (and
# reads) is no subclass of it, and a subclass would carry BaseConfig's ``name=None`` into every
# schema, so pyright's override check is off for this file only:
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from typing import Annotated, Any

import pandera.pyarrow as apa
import pyarrow as pa
import pyarrow.compute as _compute
from pandera.engines.narwhals_engine import DateTime

from envmill.schemas.dedupe import DEDUPE_KINDS, MEASURES
from envmill.schemas.rollout import FILTERS
from envmill.schemas.scenario import GATES
from envmill.schemas.tables import (
    HEX16,
    LLM_OUTCOMES,
    MODES,
    PROBE_KINDS,
    RUN_ID,
    RUN_STATUSES,
    SCENARIO_STATUSES,
    SPLITS,
    TERMINATIONS,
    TOOL_KINDS,
    VERDICTS,
)
from envmill.schemas.topics import SOURCE_FORMATS, TOPIC_STATUSES

UtcTimestamp = Annotated[DateTime, "us", "UTC"]
pc: Any = _compute  # pyarrow makes its compute kernels at import: no stub names them


def _hex_id() -> Any:  # a pandera field stands where the column's type is declared
    return apa.Field(str_matches=HEX16)


def _run_id() -> Any:  # a pandera field stands where the column's type is declared
    return apa.Field(str_matches=RUN_ID)


def _count() -> Any:  # a pandera field stands where the column's type is declared
    return apa.Field(ge=0)


def _name() -> Any:  # a pandera field stands where the column's type is declared
    return apa.Field(str_length={"min_value": 1})


class RunsTable(apa.DataFrameModel):
    """One row per run: what was asked, with which versions, and how it ended."""

    run_id: str = _run_id()
    started_at: UtcTimestamp
    finished_at: UtcTimestamp = apa.Field(nullable=True)
    status: str = apa.Field(isin=list(RUN_STATUSES))
    backend: str = _name()
    seed: int
    settings_json: str
    versions_json: str
    counts_json: str
    timings_json: str
    isolation: str

    class Config:
        strict = True


class EnvironmentsTable(apa.DataFrameModel):
    """One row per environment module (§3.1), with its derived schemas as JSON text."""

    env_id: str = _hex_id()
    run_id: str = _run_id()
    domain: str
    backend: str = _name()
    class_name: str = _name()
    topic: str
    introduction: str
    business_rules_json: str
    source: str = _name()
    tools_json: str
    state_schema_json: str
    n_tools: int = _count()
    n_query_tools: int = _count()
    n_state_change_tools: int = _count()
    checked_json: str
    warnings_json: str = apa.Field(nullable=True)  # judge warnings, findings; NULL before 2.2
    origin: str = apa.Field(nullable=True)  # where it came from ("envmill", "bfcl"); 2.3
    seed: int = apa.Field(nullable=True)
    provenance_json: str = apa.Field(nullable=True)  # run, backend, models, prompts, seed, parent
    created_at: UtcTimestamp

    class Config:
        strict = True

    @apa.dataframe_check
    def tool_counts_add_up(cls, data: apa.PyArrowData) -> pa.Array:
        """Every tool is either a query or a state change, so the kinds must sum to the total."""
        t = data.table
        return pc.equal(t["n_tools"], pc.add(t["n_query_tools"], t["n_state_change_tools"]))


class ToolsTable(apa.DataFrameModel):
    """One row per tool of an environment (key: env_id + name), for per-kind statistics."""

    env_id: str = _hex_id()
    name: str = apa.Field(str_matches=r"^[A-Za-z][A-Za-z0-9_]*$")
    kind: str = apa.Field(isin=list(TOOL_KINDS))
    description: str
    parameters_json: str
    n_params: int = _count()

    class Config:
        strict = True


class ScenariosTable(apa.DataFrameModel):
    """Certified and rejected scenarios (§3.3); rejections stay so the funnel can be queried."""

    scenario_id: str = _hex_id()
    env_id: str = _hex_id()
    run_id: str = _run_id()
    backend: str = _name()
    mode: str = apa.Field(isin=list(MODES))
    task: str
    user_facts_json: str
    initial_state_json: str
    reference_solution_json: str
    checks_json: str
    reference_answer: str = apa.Field(nullable=True)  # what the reference says at the end
    expected_answer_json: str = apa.Field(nullable=True)  # the typed answer the judge wants
    refusal_json: str = apa.Field(nullable=True)  # the rule a refusal must decline by
    kind: str = apa.Field(nullable=True)  # the generator's label: change, refusal, answer, ...
    turns_json: str = apa.Field(nullable=True)  # the later user messages (multi-turn)
    withheld_tools_json: str = apa.Field(nullable=True)  # tools not offered in it
    expected_results_json: str = apa.Field(nullable=True)  # results to obtain, per message
    source: str = apa.Field(nullable=True)  # where it came from: "envmill", "bfcl"
    split: str = apa.Field(nullable=True, isin=list(SPLITS))
    source_id: str = apa.Field(nullable=True)  # its id in its source ("multi_turn_base_0")
    n_checks: int = _count()
    n_steps: int = _count()
    status: str = apa.Field(isin=list(SCENARIO_STATUSES))
    rejected_gate: str = apa.Field(nullable=True, isin=list(GATES))
    gates_json: str
    repairs: int = _count()
    provenance_json: str = apa.Field(nullable=True)  # run, backend, models, prompts, seed, parent
    created_at: UtcTimestamp

    class Config:
        strict = True

    @apa.dataframe_check
    def rejected_names_its_gate(cls, data: apa.PyArrowData) -> pa.Array:
        """A rejected scenario must say which gate failed first, and a certified one must not."""
        t = data.table
        return pc.equal(pc.equal(t["status"], "rejected"), pc.is_valid(t["rejected_gate"]))


class TrajectoriesTable(apa.DataFrameModel):
    """One row per conversation (§3.4), with its reward and the per-check results.

    ``success`` (every check holds) came after the first parts were written; the views union
    parts by name with the full schema, so a part without it reads as NULL (unknown).
    """

    trajectory_id: str = _hex_id()
    scenario_id: str = _hex_id()
    env_id: str = _hex_id()
    run_id: str = _run_id()
    policy: str = _name()
    messages_json: str
    check_results_json: str
    reward: float = apa.Field(ge=0.0, le=1.0)
    success: bool
    steps: int = _count()
    termination: str = apa.Field(isin=list(TERMINATIONS))
    usage_json: str
    timings_json: str
    provenance_json: str = apa.Field(nullable=True)  # run, backend, models, prompts, seed, parent
    details_json: str = apa.Field(nullable=True)  # a rollout's sample, end reason, check errors
    created_at: UtcTimestamp

    class Config:
        strict = True


class VerdictsTable(apa.DataFrameModel):
    """One row per (trajectory, filter): kept or dropped, and the reason (key: both ids)."""

    trajectory_id: str = _hex_id()
    filter: str = apa.Field(isin=list(FILTERS))
    run_id: str = _run_id()
    kept: bool
    reason: str
    details_json: str
    created_at: UtcTimestamp

    class Config:
        strict = True


class FailuresTable(apa.DataFrameModel):
    """One row per item that failed at a stage: rejections and errors are rows, not log lines."""

    failure_id: str = _hex_id()
    run_id: str = _run_id()
    stage: str = _name()
    item: str
    error_class: str = _name()
    code: str
    message: str
    details_json: str
    attempts: int = apa.Field(ge=1)
    created_at: UtcTimestamp

    class Config:
        strict = True


class LlmCallsTable(apa.DataFrameModel):
    """One row per LLM call, cache hits included: what it cost and how it went (DESIGN §3.5)."""

    call_id: str = _hex_id()
    run_id: str = _run_id()
    stage: str = _name()
    item: str
    model: str = _name()
    prompt_hash: str
    request_hash: str = _name()
    sample: int = _count()
    prompt_tokens: int = _count()
    completion_tokens: int = _count()
    latency_seconds: float = apa.Field(ge=0)
    queue_seconds: float = apa.Field(ge=0)
    cache_hit: bool
    attempts: int = _count()
    outcome: str = apa.Field(isin=list(LLM_OUTCOMES))
    error_class: str
    error: str
    cost_usd: float = apa.Field(ge=0)
    created_at: UtcTimestamp

    class Config:
        strict = True


class TopicsTable(apa.DataFrameModel):
    """One row per topic candidate with its status, reason, verdict and scores (topic mining).

    Verdict columns are NULL where no verdict was made (``screened_out``, ``failed``).
    """

    candidate_id: str = _hex_id()
    run_id: str = _run_id()
    source: str = _name()
    format: str = apa.Field(isin=list(SOURCE_FORMATS))
    text: str = _name()
    tools_json: str
    status: str = apa.Field(isin=list(TOPIC_STATUSES))
    reason_code: str = apa.Field(nullable=True)
    message: str
    stateful: bool = apa.Field(nullable=True)
    domain_specific: bool = apa.Field(nullable=True)
    verdict_reason: str = apa.Field(nullable=True)
    topic: str = apa.Field(nullable=True)
    introduction: str = apa.Field(nullable=True)
    usefulness: int = apa.Field(nullable=True, ge=1, le=5)
    modelability: int = apa.Field(nullable=True, ge=1, le=5)
    duplicate_of: str = apa.Field(nullable=True, str_matches=HEX16)
    selection_rank: int = apa.Field(nullable=True, ge=0)
    prompt_hash: str
    created_at: UtcTimestamp

    class Config:
        strict = True

    @apa.dataframe_check
    def reasons_where_they_apply(cls, data: apa.PyArrowData) -> pa.Array:
        """Every status but accepted and selected says why; those two never carry a code."""
        t = data.table
        kept = pc.is_in(t["status"], pa.array(["accepted", "selected"]))
        return pc.not_equal(kept, pc.is_valid(t["reason_code"]))

    @apa.dataframe_check
    def duplicates_name_the_original(cls, data: apa.PyArrowData) -> pa.Array:
        t = data.table
        return pc.equal(pc.equal(t["status"], "duplicate"), pc.is_valid(t["duplicate_of"]))

    @apa.dataframe_check
    def verdicts_where_judged(cls, data: apa.PyArrowData) -> pa.Array:
        """Screened-out and failed candidates have no verdict; every other one has a topic."""
        t = data.table
        unjudged = pc.is_in(t["status"], pa.array(["screened_out", "failed"]))
        return pc.not_equal(unjudged, pc.is_valid(t["topic"]))


class EnvProbesTable(apa.DataFrameModel):
    """One row per probe call of an LLM environment check, with the judge's verdict."""

    probe_id: str = _hex_id()
    run_id: str = _run_id()
    env_id: str = _hex_id()
    topic: str
    item: str
    probe_index: int = _count()
    round: int = _count()
    tool: str = _name()
    tool_kind: str = apa.Field(isin=list(TOOL_KINDS))
    kind: str = apa.Field(isin=list(PROBE_KINDS))
    expectation: str
    arguments_json: str
    result_json: str
    state_diff_json: str
    verdict: str = apa.Field(isin=list(VERDICTS))
    reason: str
    created_at: UtcTimestamp

    class Config:
        strict = True


class DuplicatesTable(apa.DataFrameModel):
    """One row per near-duplicate pair (key: kind, both ids, measure): ``item_id``, the later
    item, duplicates ``duplicate_of`` with this ``similarity`` by ``measure``; nothing is dropped.
    ``item_id`` is an ``env_id`` for environments, a ``scenario_id`` for tasks and states."""

    kind: str = apa.Field(isin=list(DEDUPE_KINDS))
    item_id: str = _hex_id()
    duplicate_of: str = _hex_id()
    similarity: float = apa.Field(ge=0.0, le=1.0)
    measure: str = apa.Field(isin=list(MEASURES))
    run_id: str = _run_id()
    created_at: UtcTimestamp

    class Config:
        strict = True

    @apa.dataframe_check
    def not_itself(cls, data: apa.PyArrowData) -> pa.Array:
        """An item never duplicates itself."""
        t = data.table
        return pc.not_equal(t["item_id"], t["duplicate_of"])


class EvalsTable(apa.DataFrameModel):
    """One row per (trajectory, benchmark): the benchmark's own checker's verdict beside
    envmill's reward and success on the same trajectory, and whether the two agree."""

    trajectory_id: str = _hex_id()
    benchmark: str = _name()
    run_id: str = _run_id()
    scenario_id: str = _hex_id()
    category: str = _name()
    task_id: str = _name()
    policy: str = _name()
    reward: float = apa.Field(ge=0.0, le=1.0)
    success: bool
    checker_valid: bool
    checker_error: str
    agree: bool
    details_json: str
    created_at: UtcTimestamp

    class Config:
        strict = True

    @apa.dataframe_check
    def agreement(cls, data: apa.PyArrowData) -> pa.Array:
        """``agree`` says whether the checker and envmill's success gave the same verdict."""
        t = data.table
        return pc.equal(t["agree"], pc.equal(t["checker_valid"], t["success"]))


def arrow_schema(model: type[apa.DataFrameModel]) -> pa.Schema:
    """Derive the Arrow schema (types and nullability) of a table from its pandera model."""
    columns = model.to_schema().columns
    types = model.empty().schema
    fields = [pa.field(n, types.field(n).type, nullable=c.nullable) for n, c in columns.items()]
    return pa.schema(fields)


MODELS: dict[str, type[apa.DataFrameModel]] = {
    "runs": RunsTable,
    "environments": EnvironmentsTable,
    "tools": ToolsTable,
    "scenarios": ScenariosTable,
    "trajectories": TrajectoriesTable,
    "verdicts": VerdictsTable,
    "failures": FailuresTable,
    "llm_calls": LlmCallsTable,
    "env_probes": EnvProbesTable,
    "topics": TopicsTable,
    "duplicates": DuplicatesTable,
    "evals": EvalsTable,
}
