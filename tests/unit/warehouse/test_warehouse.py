"""Warehouse: validated atomic writes, format marker checks, DuckDB views, stats and formatting."""

from __future__ import annotations

import csv
import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from envmill.schemas.ids import content_id
from envmill.schemas.scenario import GATES
from envmill.schemas.tables import TABLES, derive_failure_id
from envmill.warehouse.store import FORMAT_VERSION, Warehouse, WarehouseError, resolve_data_dir
from envmill.warehouse.views import connect, corpus_stats, format_table, query

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
RUN = "run-test-1"


def env_row(name: str, domain: str = "retail", n_query: int = 2, n_change: int = 1) -> dict:
    return {
        "env_id": content_id(name),
        "run_id": RUN,
        "domain": domain,
        "backend": "procedural",
        "class_name": name,
        "topic": f"{name} topic",
        "introduction": "intro",
        "business_rules_json": ["no refunds after 30 days"],
        "source": f"class {name}: pass\n",
        "tools_json": [],
        "state_schema_json": {"type": "object"},
        "n_tools": n_query + n_change,
        "n_query_tools": n_query,
        "n_state_change_tools": n_change,
        "checked_json": {"policy": "ok"},
        "seed": 7,
        "created_at": NOW,
    }


def tool_rows(env_id: str, n_query: int, n_change: int) -> list[dict]:
    kinds = ["query"] * n_query + ["state_change"] * n_change
    return [
        {
            "env_id": env_id,
            "name": f"tool_{i}",
            "kind": kind,
            "description": "d",
            "parameters_json": {"type": "object", "properties": {}},
            "n_params": 0,
        }
        for i, kind in enumerate(kinds)
    ]


def scenario_row(env_id: str, n: int, rejected_gate: str | None = None) -> dict:
    gates = [{"gate": g, "passed": True, "reason": ""} for g in GATES]
    if rejected_gate:
        i = GATES.index(rejected_gate)
        gates[i]["passed"] = False
    return {
        "scenario_id": content_id([env_id, n]),
        "env_id": env_id,
        "run_id": RUN,
        "backend": "procedural",
        "mode": "non_conversational",
        "task": f"task {n}",
        "user_facts_json": {},
        "initial_state_json": {"current_time": "2025-01-01T10:00:00"},
        "reference_solution_json": [{"tool": "tool_0", "arguments": {}}],
        "checks_json": [{"description": "Has x", "code": "def check(i, f):\n    return True"}],
        "n_checks": 1,
        "n_steps": 1,
        "status": "rejected" if rejected_gate else "certified",
        "rejected_gate": rejected_gate,
        "gates_json": gates,
        "repairs": 0,
        "created_at": NOW,
    }


def trajectory_row(scenario_id: str, env_id: str, reward: float = 1.0) -> dict:
    return {
        "trajectory_id": content_id([scenario_id, "reference"]),
        "scenario_id": scenario_id,
        "env_id": env_id,
        "run_id": RUN,
        "policy": "reference",
        "messages_json": [{"role": "user", "content": "hi"}],
        "check_results_json": [True],
        "reward": reward,
        "success": reward == 1.0,
        "steps": 1,
        "termination": "finished",
        "usage_json": {},
        "timings_json": {},
        "created_at": NOW,
    }


def failure_row(stage: str, item: str, error_class: str, attempts: int = 1) -> dict:
    return {
        "failure_id": derive_failure_id(RUN, stage, item),
        "run_id": RUN,
        "stage": stage,
        "item": item,
        "error_class": error_class,
        "code": "",
        "message": "boom",
        "details_json": [],
        "attempts": attempts,
        "created_at": NOW,
    }


def run_row(status: str = "finished") -> dict:
    return {
        "run_id": RUN,
        "started_at": "2025-01-02T03:00:00Z",
        "finished_at": NOW if status != "running" else None,
        "status": status,
        "backend": "procedural",
        "seed": 1,
        "settings_json": {"n": 1},
        "versions_json": {},
        "counts_json": {},
        "timings_json": {},
        "isolation": "rlimits",
    }


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    return Warehouse(tmp_path / "data")


def parts(wh: Warehouse, table: str) -> list[str]:
    folder = wh.root / table
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def count(wh: Warehouse, table: str) -> int:
    return query(wh.root, f"SELECT count(*) AS n FROM {table}").column("n")[0].as_py()


# --- data folder -------------------------------------------------------------------------------


def test_resolve_data_dir_precedence(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ENVMILL_HOME", raising=False)
    assert resolve_data_dir(None) == tmp_path / "envmill-data"
    monkeypatch.setenv("ENVMILL_HOME", str(tmp_path / "home"))
    assert resolve_data_dir(None) == tmp_path / "home"
    assert resolve_data_dir(str(tmp_path / "out")) == tmp_path / "out"


def test_new_folder_gets_marker(tmp_path):
    wh = Warehouse(tmp_path / "new")
    assert json.loads((wh.root / "envmill.json").read_text()) == {
        "format": "envmill-warehouse",
        "version": FORMAT_VERSION,
    }
    assert FORMAT_VERSION.startswith("2.")  # 2.1: scenarios gained two JSON columns
    Warehouse(wh.root)  # reopening a warehouse is fine


@pytest.mark.parametrize("version", ["2.0", "2.7"])
def test_same_major_version_accepted(tmp_path, version):
    (tmp_path / "envmill.json").write_text(
        json.dumps({"format": "envmill-warehouse", "version": version})
    )
    Warehouse(tmp_path)


@pytest.mark.parametrize("version", ["1.3", "3.0", "0.9"])
def test_other_major_version_refused(tmp_path, version):
    (tmp_path / "envmill.json").write_text(
        json.dumps({"format": "envmill-warehouse", "version": version})
    )
    with pytest.raises(WarehouseError, match=f"format {version}") as info:
        Warehouse(tmp_path)
    assert "\n" not in str(info.value)


def test_marker_not_json_refused(tmp_path):
    (tmp_path / "envmill.json").write_text("{nope")
    with pytest.raises(WarehouseError, match="not readable JSON"):
        Warehouse(tmp_path)


def test_foreign_folder_refused(tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(WarehouseError, match="not an envmill data folder") as info:
        Warehouse(tmp_path)
    assert str(tmp_path) in str(info.value)
    assert not (tmp_path / "envmill.json").exists()


def test_path_that_is_a_file_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(WarehouseError):
        Warehouse(blocker)
    with pytest.raises(WarehouseError, match="cannot create"):
        Warehouse(blocker / "sub")


def test_unwritable_folder_refused(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod does not block writes (see the file-path test)")
    folder = tmp_path / "ro"
    Warehouse(folder)
    folder.chmod(0o500)
    try:
        with pytest.raises(WarehouseError, match="not writable"):
            Warehouse(folder)
    finally:
        folder.chmod(0o700)


# --- writes and reads ---------------------------------------------------------------------------


def test_round_trip_and_json_operators(wh):
    env = env_row("Shop")
    wh.write("environments", [env])
    wh.write("tools", tool_rows(env["env_id"], 2, 1))
    wh.write("scenarios", [scenario_row(env["env_id"], i) for i in range(3)])
    wh.write("runs", [run_row()])
    assert (count(wh, "environments"), count(wh, "tools"), count(wh, "scenarios")) == (1, 3, 3)
    got = query(
        wh.root,
        "SELECT DISTINCT json_extract_string(initial_state_json, "
        "'$.current_time') AS t FROM scenarios",
    )
    assert got.column("t").to_pylist() == ["2025-01-01T10:00:00"]
    rules = query(wh.root, "SELECT business_rules_json ->> '$[0]' AS r FROM environments")
    assert rules.column("r")[0].as_py() == "no refunds after 30 days"
    run = query(wh.root, "SELECT started_at, finished_at FROM runs").to_pylist()[0]
    assert run["started_at"].hour == 3 and run["finished_at"] == NOW


def test_query_params(wh):
    env = env_row("Shop")
    wh.write("scenarios", [scenario_row(env["env_id"], i) for i in range(3)])
    got = query(wh.root, "SELECT count(*) AS n FROM scenarios WHERE task = ?", ["task 1"])
    assert got.column("n")[0].as_py() == 1


def test_json_columns_are_canonical(wh):
    env = env_row("Shop")
    env["checked_json"] = '{"b": 1,  "a": [1, 2]}'
    wh.write("environments", [env])
    text = query(wh.root, "SELECT checked_json FROM environments").column(0)[0].as_py()
    assert text == '{"a":[1,2],"b":1}'


def test_created_at_defaults_to_write_time(wh):
    env = env_row("Shop")
    del env["created_at"]
    wh.write("environments", [env])
    stamp = query(wh.root, "SELECT created_at FROM environments").column(0)[0].as_py()
    assert abs((datetime.now(UTC) - stamp).total_seconds()) < 60


def _bad_batches() -> list[tuple[str, str, dict]]:
    env_id = content_id("Shop")
    return [
        ("scenarios", "isin", {**scenario_row(env_id, 0), "status": "maybe"}),
        ("scenarios", "str_matches", {**scenario_row(env_id, 0), "env_id": "NOT-HEX"}),
        ("trajectories", "less_than_or_equal_to", trajectory_row("a" * 16, env_id, reward=2.0)),
        (
            "scenarios",
            "missing columns \\['task'\\]",
            {k: v for k, v in scenario_row(env_id, 0).items() if k != "task"},
        ),
        ("scenarios", "unknown columns \\['extra'\\]", {**scenario_row(env_id, 0), "extra": 1}),
        ("scenarios", "rejected_names_its_gate", {**scenario_row(env_id, 0), "status": "rejected"}),
        ("environments", "tool_counts_add_up", {**env_row("Shop"), "n_tools": 9}),
        ("tools", "expected int64", {**tool_rows(env_id, 1, 0)[0], "n_params": 1.5}),
        ("runs", "not an ISO 8601", {**run_row(), "started_at": "yesterday"}),
        ("runs", "not JSON", {**run_row(), "settings_json": "{oops"}),
        ("runs", "null", {**run_row(), "seed": None}),
    ]


@pytest.mark.parametrize(("table", "why", "row"), _bad_batches())
def test_bad_batch_raises_and_writes_nothing(wh, table, why, row):
    good = {
        "scenarios": scenario_row(content_id("Shop"), 5),
        "environments": env_row("Other"),
        "trajectories": trajectory_row("b" * 16, content_id("Shop")),
        "tools": tool_rows(content_id("Shop"), 0, 1)[0],
        "runs": {**run_row(), "run_id": "run-good"},
    }[table]
    with pytest.raises(WarehouseError, match=why) as info:
        wh.write(table, [good, row], key="bad")
    assert table in str(info.value) and "\n" not in str(info.value)
    assert parts(wh, table) == []


def test_unknown_table_refused(wh):
    with pytest.raises(WarehouseError, match="unknown table"):
        wh.write("nope", [])


def test_crash_before_rename_leaves_no_part(wh, monkeypatch):
    env = env_row("Shop")
    wh.write("scenarios", [scenario_row(env["env_id"], 0)], key="first")

    def crash(src, dst):
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        wh.write("scenarios", [scenario_row(env["env_id"], 1)], key="second")
    monkeypatch.undo()
    assert parts(wh, "scenarios") == ["part-scenarios-first.parquet"]
    assert count(wh, "scenarios") == 1


def test_stray_tmp_file_is_ignored(wh):
    env = env_row("Shop")
    wh.write("scenarios", [scenario_row(env["env_id"], 0)], key="k")
    (wh.root / "scenarios" / "part-x.parquet.tmp-deadbeef").write_bytes(b"half a parquet")
    assert count(wh, "scenarios") == 1


def test_same_batch_twice_is_idempotent(wh):
    env = env_row("Shop")
    batch = [scenario_row(env["env_id"], i) for i in range(4)]
    first = wh.write("scenarios", batch)
    second = wh.write("scenarios", batch)
    assert first == second and len(parts(wh, "scenarios")) == 1
    assert count(wh, "scenarios") == 4
    wh.write("scenarios", batch[:2], key="run-1/batch 0")
    wh.write("scenarios", batch[:2], key="run-1/batch 0")
    assert len(parts(wh, "scenarios")) == 2
    assert count(wh, "scenarios") == 4


def test_same_key_replaces_part(wh):
    env = env_row("Shop")
    wh.write("scenarios", [scenario_row(env["env_id"], i) for i in range(3)], key="b0")
    wh.write("scenarios", [scenario_row(env["env_id"], 9)], key="b0")
    assert count(wh, "scenarios") == 1


def test_views_keep_one_row_per_key(wh):
    wh.write("runs", [run_row("running")], key="start")
    wh.write("runs", [run_row("finished")], key="end")
    assert query(wh.root, "SELECT status FROM runs").column(0).to_pylist() == ["finished"]
    wh.write("failures", [failure_row("certify", "s1", "Timeout", attempts=1)], key="a")
    wh.write("failures", [failure_row("certify", "s1", "Timeout", attempts=3)], key="b")
    got = query(wh.root, "SELECT attempts FROM failures").column(0).to_pylist()
    assert got == [3]
    env_id = content_id("Shop")
    wh.write("tools", tool_rows(env_id, 2, 0), key="a")
    wh.write("tools", tool_rows(env_id, 2, 0), key="b")
    assert count(wh, "tools") == 2


def test_empty_warehouse_queries_return_zero_rows(wh):
    con = connect(wh.root)
    try:
        for name, spec in TABLES.items():
            got = con.sql(f"SELECT * FROM {name}").to_arrow_table()
            assert got.num_rows == 0 and got.column_names == spec.columns
    finally:
        con.close()


@pytest.mark.parametrize("name", sorted(TABLES))
def test_each_pandera_model_declares_the_columns_the_readers_see(name):
    """The readers' Arrow schema (schemas.tables) and the pandera model that validates the
    writes (schemas.table_models) declare each table's columns apart, so readers never import
    pandera: the model must derive the same names, order, types and nullability."""
    from envmill.schemas.table_models import MODELS, arrow_schema

    assert set(MODELS) == set(TABLES)
    spec = TABLES[name]
    assert arrow_schema(MODELS[name]) == spec.arrow_schema
    assert spec.empty_table().schema == spec.arrow_schema


def test_parts_missing_a_new_column_still_read(wh):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = wh.root / "failures"
    folder.mkdir()
    from envmill.warehouse.commits import Commit, describe_part, publish

    old = {k: [v] for k, v in failure_row("s", "i", "E").items() if k != "message"}
    pq.write_table(pa.table(old), folder / "part-old.parquet")
    info = describe_part(folder / "part-old.parquet", 1)
    publish(wh.root, Commit(key="old", parts={"failures": info}))
    got = query(wh.root, "SELECT stage, message FROM failures").to_pylist()
    assert got == [{"stage": "s", "message": None}]


# --- statistics and formatting ------------------------------------------------------------------


@pytest.fixture
def corpus(wh: Warehouse) -> Warehouse:
    """3 environments; A: 4 certified + 2 rejected, B: 2 certified + 3 rejected, C: none."""
    specs = {"A": ("retail", 2, 1), "B": ("retail", 3, 2), "C": ("travel", 1, 0)}
    rejected = {
        "A": ["loads", "checks_pass"],
        "B": ["not_trivial", "partial_fails", "deterministic"],
        "C": [],
    }
    certified = {"A": 4, "B": 2, "C": 0}
    for name, (domain, n_query, n_change) in specs.items():
        env = env_row(name, domain, n_query, n_change)
        wh.write("environments", [env], key=name)
        wh.write("tools", tool_rows(env["env_id"], n_query, n_change), key=name)
        rows = [scenario_row(env["env_id"], i) for i in range(certified[name])]
        rows += [scenario_row(env["env_id"], 100 + i, g) for i, g in enumerate(rejected[name])]
        if name == "B":  # written by the model: one certified after two repairs, one refused
            rows = [{**row, "backend": "llm"} for row in rows]
            rows[0]["repairs"], rows[-1]["repairs"] = 2, 2
        wh.write("scenarios", rows, key=name)
    wh.write(
        "failures",
        [
            failure_row("certify", "s1", "Timeout"),
            failure_row("certify", "s2", "Timeout", attempts=2),
            failure_row("generate", "t1", "ValueError"),
        ],
    )
    return wh


def test_corpus_stats_funnel(corpus):
    funnel = corpus_stats(corpus.root)["certification_funnel"].to_pylist()
    assert [r["gate"] for r in funnel] == [*GATES, "certified"]
    assert [r["reached"] for r in funnel] == [11, 10, 10, 9, 8, 7, 7, 7, 7, 7, 6]
    assert [r["passed"] for r in funnel] == [10, 10, 9, 8, 7, 7, 7, 7, 7, 6, 6]
    assert [r["rejected"] for r in funnel] == [1, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0]


def test_corpus_stats_counts(corpus):
    stats = corpus_stats(corpus.root)
    overview = stats["overview"].to_pylist()[0]
    assert overview == {
        "environments": 3,
        "domains": 2,
        "tools": 9,
        "scenarios": 11,
        "certified": 6,
        "trajectories": 0,
        "failures": 3,
    }
    domains = stats["environments_by_domain"].to_pylist()
    by_domain = {r["domain"]: r["environments"] for r in domains}
    assert by_domain == {"retail": 2, "travel": 1}
    tools = {r["kind"]: r for r in stats["tools_per_environment"].to_pylist()}
    assert (tools["query"]["avg"], tools["query"]["min"], tools["query"]["max"]) == (2.0, 1, 3)
    sc = tools["state_change"]
    assert (sc["avg"], sc["min"], sc["max"]) == (1.0, 0, 2)
    per_env = stats["scenarios_per_environment"].to_pylist()[0]
    assert (per_env["scenarios"], per_env["min_scenarios"], per_env["max_scenarios"]) == (11, 0, 6)
    assert per_env["avg_certified"] == 2.0 and per_env["max_certified"] == 4
    repairs = {r.pop("backend"): r for r in stats["scenario_repairs"].to_pylist()}
    assert repairs == {
        "llm": {
            "scenarios": 5,
            "certified_at_once": 1,
            "certified_after_repair": 1,
            "rejected": 3,
            "repairs": 4,
        },
        "procedural": {
            "scenarios": 6,
            "certified_at_once": 4,
            "certified_after_repair": 0,
            "rejected": 2,
            "repairs": 0,
        },
    }
    failures = stats["failures_by_stage"].to_pylist()
    assert failures[0] == {
        "stage": "certify",
        "error_class": "Timeout",
        "code": "",
        "failures": 2,
        "attempts": 3,
        "runs": 1,
    }


def test_corpus_stats_on_empty_warehouse(wh):
    stats = corpus_stats(wh.root)
    assert stats["overview"].to_pylist()[0]["scenarios"] == 0
    funnel = stats["certification_funnel"].to_pylist()
    assert [r["reached"] for r in funnel] == [0] * (len(GATES) + 1)


def test_format_csv_json_table(wh):
    wh.write(
        "failures",
        [
            failure_row("certify", "s1", "Timeout"),
            failure_row("generate", "t,1", "ValueError", attempts=2),
        ],
    )
    table = query(wh.root, "SELECT stage, item, attempts, created_at FROM failures ORDER BY stage")
    rows = list(csv.DictReader(io.StringIO(format_table(table, "csv"))))
    assert rows[1] == {
        "stage": "generate",
        "item": "t,1",
        "attempts": "2",
        "created_at": "2025-01-02T03:04:05+00:00",
    }
    data = json.loads(format_table(table, "json"))
    assert data[0]["stage"] == "certify" and data[1]["attempts"] == 2
    assert data[0]["created_at"].startswith("2025-01-02T03:04:05")
    grid = format_table(table, "table").splitlines()
    assert grid[0].split(" | ")[0].strip() == "stage" and grid[-1] == "(2 rows)"
    assert "generate" in grid[3]
    with pytest.raises(ValueError, match="unknown format"):
        format_table(table, "xml")


def test_llm_calls_land_and_stats_sum_tokens_and_cost_by_stage_and_model(wh):
    from envmill.schemas.llm import LlmCallRecord
    from envmill.schemas.run import BatchOutput
    from envmill.warehouse.rows import write_batch

    def call(stage, model, hit=False, cost=0.0, outcome="ok", error=""):
        return LlmCallRecord(
            stage=stage,
            item="t1",
            model=model,
            request_hash=content_id({"stage": stage, "model": model, "hit": hit, "e": error}),
            prompt_tokens=100,
            completion_tokens=20,
            latency_seconds=0.0 if hit else 0.5,
            cache_hit=hit,
            attempts=0 if hit else 1,
            outcome=outcome,
            error=error,
            cost_usd=cost,
        )

    calls = [
        call("topics", "small", cost=0.01),
        call("topics", "small", hit=True),
        call("skeleton", "big", cost=0.25),
        call("skeleton", "big", cost=0.0, outcome="failed"),
        call("scenario_state", "big", outcome="refused", error="a rule does not hold: LN-1"),
        call("scenario_state", "big", outcome="refused", error="a rule does not hold: LN-2"),
    ]
    write_batch(wh, BatchOutput(key="k1", llm_calls=calls), RUN)
    write_batch(wh, BatchOutput(key="k1", llm_calls=calls), RUN)  # a rerun replaces its part
    assert query(wh.root, "SELECT count(*) FROM llm_calls").column(0).to_pylist() == [6]
    stats = corpus_stats(wh.root)
    (refusals,) = stats["llm_refusals"].to_pylist()
    assert (refusals["stage"], refusals["reason"], refusals["refused"]) == (
        "scenario_state",
        "a rule does not hold",
        2,
    )
    usage = {(r["stage"], r["model"]): r for r in stats["llm_usage"].to_pylist()}
    assert usage["scenario_state", "big"]["refused"] == 2
    topics, skeleton = usage["topics", "small"], usage["skeleton", "big"]
    assert (topics["calls"], topics["cache_hits"], topics["prompt_tokens"]) == (2, 1, 200)
    assert topics["cost_usd"] == 0.01 and topics["avg_latency_s"] == 0.5
    assert (skeleton["failed"], skeleton["completion_tokens"], skeleton["cost_usd"]) == (
        1,
        40,
        0.25,
    )


def test_batches_validate_on_many_threads_at_once():
    """llm tasks share a worker process: pandera, which retries a failed engine import on every
    validation, once handed a racing thread a half-imported module."""
    import threading

    from envmill.schemas.run import FailureRecord
    from envmill.schemas.tables import TABLES
    from envmill.warehouse.rows import failure_row
    from envmill.warehouse.store import build_table, validate_table

    spec = TABLES["failures"]
    failure = FailureRecord(stage="env_load", item="t#1", error_class="E", message="m")
    table = build_table(spec, [failure_row(failure, "run")])
    errors, start = [], threading.Barrier(8)

    def validate_often():
        start.wait()
        for _ in range(10):
            try:
                validate_table(spec, table)
            except Exception as exc:  # noqa: BLE001  (any error is the finding)
                errors.append(repr(exc))

    threads = [threading.Thread(target=validate_often) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_two_writers_of_one_batch_marker_do_not_trip_over_its_temporary_file(wh):
    """Two processes finishing the same batch (two runs on one folder) each write the marker
    through a temporary file of their own; a shared name made one rename fail."""
    import threading

    from envmill.schemas.run import BatchOutput
    from envmill.warehouse.commits import read_commit
    from envmill.warehouse.rows import write_batch

    start, errors = threading.Barrier(8), []

    def finish():
        start.wait()
        try:
            for _ in range(20):
                write_batch(wh, BatchOutput(key="same"), RUN)
        except OSError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=finish) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and read_commit(wh.root, "same").run_id == RUN
    assert [p.name for p in (wh.root / "_commits").iterdir()] == ["same.json"]


def test_an_environment_stored_before_warnings_reads_and_shows_as_not_recorded(
    wh, monkeypatch, capsys
):
    """Format 2.2 added ``environments.warnings_json``: a part a 2.1 writer made has no such
    column and still reads (NULL, not "no warnings"); `envmill show env` says which it is."""
    import pyarrow.parquet as pq

    from envmill.warehouse.commits import Commit, describe_part, publish
    from envmill.warehouse.store import checked_table, spec_of
    from tests.conftest import call_main

    old = env_row("Old") | {"created_at": NOW}
    arrow = checked_table(spec_of("environments"), [old]).drop_columns(["warnings_json"])
    (wh.root / "environments").mkdir()
    pq.write_table(arrow, wh.root / "environments" / "part-old.parquet")
    info = describe_part(wh.root / "environments" / "part-old.parquet", 1)
    publish(wh.root, Commit(key="old", parts={"environments": info}, items=["old"]))
    warned = [{"kind": "judge_warning", "tool": "lend", "probes": [3], "message": "odd fee"}]
    wh.write("environments", [env_row("New") | {"warnings_json": warned}], key="new")
    got = query(wh.root, "SELECT class_name, warnings_json FROM environments").to_pylist()
    assert {r["class_name"]: r["warnings_json"] for r in got} == {
        "Old": None,
        "New": '[{"kind":"judge_warning","message":"odd fee","probes":[3],"tool":"lend"}]',
    }
    for name, said in (
        ("Old", "(not recorded: stored before envmill kept warnings)"),
        ("New", "- judge_warning: lend: odd fee (probes 3)"),
    ):
        shown = call_main(
            monkeypatch, capsys, ("show", "env", content_id(name), "--out", str(wh.root))
        )
        assert shown.returncode == 0, shown.stderr
        assert f"\n# warnings\n{said}\n" in shown.stdout
    # and verify holds the older part to the older layout: not damage, nothing to repair away
    checked = call_main(monkeypatch, capsys, ("verify", "--out", str(wh.root), "--repair"))
    assert checked.returncode == 0 and "0 problem(s)" in checked.stderr, checked.stderr
    assert query(wh.root, "SELECT count(*) FROM environments").column(0).to_pylist() == [2]
    bad = arrow.drop_columns(["source"])  # a column the table cannot do without
    pq.write_table(bad, wh.root / "environments" / "part-bad.parquet")
    info = describe_part(wh.root / "environments" / "part-bad.parquet", 1)
    publish(wh.root, Commit(key="bad", parts={"environments": info}, items=["bad"]))
    damaged = call_main(monkeypatch, capsys, ("verify", "--out", str(wh.root)))
    said = damaged.stdout + damaged.stderr
    assert damaged.returncode != 0 and "does not have the columns and types" in said, said
