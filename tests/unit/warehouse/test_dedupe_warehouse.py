"""The duplicates table, the metric views and `envmill stats` / `envmill dedupe` on a small
warehouse written row by row (numbers known by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envmill.flows.dedupe import dedupe_new_items
from envmill.schemas.settings import EnvmillSettings
from envmill.warehouse.lock import grant, revoke
from envmill.warehouse.store import Warehouse, WarehouseError
from envmill.warehouse.views import query
from tests.conftest import call_main
from tests.unit.tasks.dedupe.test_dedupe import renamed

SCHEMA = {
    "type": "object",
    "properties": {
        "orders": {"type": "object"},
        "items": {"type": "array"},
        "current_time": {"type": "string"},
    },
}


def tool(name: str) -> dict:
    params = {"type": "object", "properties": {"x_id": {"type": "string"}}, "required": ["x_id"]}
    return {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": params},
    }


def environment(env_id: str, run_id: str, domain: str, source: str, tools: dict[str, str]):
    query_tools = [n for n, k in tools.items() if k == "query"]
    row = {
        "env_id": env_id,
        "run_id": run_id,
        "domain": domain,
        "backend": "procedural",
        "class_name": "Shop",
        "topic": domain,
        "introduction": "",
        "business_rules_json": [],
        "source": source,
        "tools_json": [tool(n) for n in tools],
        "state_schema_json": SCHEMA,
        "n_tools": len(tools),
        "n_query_tools": len(query_tools),
        "n_state_change_tools": len(tools) - len(query_tools),
        "checked_json": {},
        "seed": 1,
        "provenance_json": None,
    }
    tool_rows = [
        {
            "env_id": env_id,
            "name": n,
            "kind": k,
            "description": n,
            "parameters_json": tool(n)["function"]["parameters"],
            "n_params": 1,
        }
        for n, k in tools.items()
    ]
    return row, tool_rows


def scenario(scenario_id: str, env_id: str, run_id: str, task: str, steps: list[str], **extra):
    row = {
        "scenario_id": scenario_id,
        "env_id": env_id,
        "run_id": run_id,
        "backend": "procedural",
        "mode": "non_conversational",
        "task": task,
        "user_facts_json": {},
        "initial_state_json": {"orders": {"OR-1": {"status": "open"}}, "note": scenario_id},
        "reference_solution_json": [{"tool": t, "arguments": {}} for t in steps],
        "checks_json": [],
        "n_checks": 0,
        "n_steps": len(steps),
        "status": "certified",
        "rejected_gate": None,
        "gates_json": [],
        "repairs": 0,
        "provenance_json": None,
    }
    return row | extra


TOOLS = {"get_x": "query", "list_x": "query", "find_x": "query", "cancel_x": "state_change"}


@pytest.fixture
def small(tmp_path: Path, clinic_source: str) -> Path:
    """Three environments (the clinic, its rename-only variant, a tiny other one) and five
    scenarios, one of them rejected; everything made by run-a."""
    warehouse = Warehouse(tmp_path / "data")
    envs = [
        environment("a" * 16, "run-a", "clinic", clinic_source, TOOLS),
        environment("b" * 16, "run-a", "clinic", renamed(clinic_source), TOOLS),
        environment("c" * 16, "run-a", "shop", "def f(x):\n    return x\n", {"get_x": "query"}),
    ]
    warehouse.write("environments", [row for row, _ in envs], key="envs")
    warehouse.write("tools", [t for _, tools in envs for t in tools], key="tools")
    scenarios = [
        scenario(
            "1" * 16, "a" * 16, "run-a", "Cancel order OR-1 for Ann Lee now", ["get_x", "cancel_x"]
        ),
        scenario(
            "2" * 16,
            "b" * 16,
            "run-a",
            "Cancel order OR-7 for Bob Ray now",
            ["list_x", "cancel_x", "cancel_x"],
        ),
        scenario("3" * 16, "b" * 16, "run-a", "What is the status of my parcel today", ["get_x"]),
        scenario("4" * 16, "c" * 16, "run-a", "Look up x", ["get_x"], kind="answer"),
        scenario(
            "5" * 16,
            "c" * 16,
            "run-a",
            "rejected one",
            [],
            status="rejected",
            rejected_gate="checks_pass",
        ),
    ]
    warehouse.write("scenarios", scenarios, key="scenarios")
    return warehouse.root


def rows(root: Path, sql: str) -> list[dict]:
    return query(root, sql).to_pylist()


def test_the_metric_views_on_a_small_warehouse(small):
    (breadth,) = rows(small, "SELECT * FROM metric_breadth")
    assert (breadth["environments"], breadth["domains"], breadth["tools"]) == (3, 2, 9)
    assert (breadth["tool_names"], breadth["tool_signatures"]) == (4, 4)
    states = rows(small, "SELECT * FROM metric_state_categories ORDER BY env_id")
    assert [(s["state_attributes"], s["entity_collections"]) for s in states] == [(3, 2)] * 3
    chains = rows(small, "SELECT steps, operations FROM metric_chain_operations ORDER BY ALL")
    assert chains == [
        {"steps": 1, "operations": 0},
        {"steps": 1, "operations": 0},
        {"steps": 2, "operations": 1},
        {"steps": 3, "operations": 2},
    ]
    coverage = rows(small, "SELECT * FROM metric_query_coverage ORDER BY env_id")
    assert [(c["query_tools"], c["used_query_tools"]) for c in coverage] == [(3, 1), (3, 2), (1, 1)]
    assert coverage[0]["coverage"] == pytest.approx(1 / 3, abs=1e-4)
    words = rows(small, "SELECT words, kind FROM metric_task_length ORDER BY scenario_id")
    assert [w["words"] for w in words] == [8, 8, 8, 3]
    assert [w["kind"] for w in words] == ["unspecified"] * 3 + ["answer"]
    kinds = rows(small, "SELECT * FROM metric_scenario_kinds ORDER BY kind")
    assert kinds == [
        {"kind": "answer", "scenarios": 1, "certified": 1, "certified_share": 0.25},
        {"kind": "unspecified", "scenarios": 4, "certified": 3, "certified_share": 0.75},
    ]


def test_a_corpus_never_compared_has_no_duplicate_rate(small):
    """No pass ever ran (an old folder, or dedupe off): the rate is unknown, not 0."""
    rates = rows(small, "SELECT * FROM metric_duplicates")
    assert rates and all(r["duplicate_rate"] is None for r in rates)
    assert all(r["pairs"] == 0 for r in rates)


def test_dedupe_records_and_the_rates_follow(small, monkeypatch, capsys):
    done = call_main(monkeypatch, capsys, ("dedupe", "--out", str(small)))
    assert done.returncode == 0, done.stderr
    assert "dedupe: code compared over 3 items" in done.stderr
    found = rows(small, "SELECT kind, item_id, duplicate_of, measure, similarity FROM duplicates")
    pairs = {(r["measure"], r["item_id"][0], r["duplicate_of"][0]) for r in found}
    assert ("code", "b", "a") in pairs  # rename-only
    assert ("task", "2", "1") in pairs  # ids and names masked
    assert not any("c" in (item, original) for _, item, original in pairs if _ == "code")
    rates = {(r["kind"], r["measure"]): r for r in rows(small, "SELECT * FROM metric_duplicates")}
    assert rates[("environment", "code")]["items"] == 3
    assert rates[("environment", "code")]["duplicate_items"] == 1
    assert rates[("task", "task")]["duplicate_rate"] == pytest.approx(0.25)
    (run,) = rows(small, "SELECT backend, status FROM runs")
    assert run == {"backend": "dedupe", "status": "finished"}


def test_a_recompute_with_a_stricter_threshold_replaces_earlier_pairs(small, monkeypatch, capsys):
    assert call_main(monkeypatch, capsys, ("dedupe", "--out", str(small))).returncode == 0
    assert rows(small, "SELECT count(*) AS n FROM duplicates WHERE measure = 'task'")[0]["n"] == 1
    monkeypatch.setenv("ENVMILL_DEDUPE__TASK", "1.0")
    monkeypatch.setenv("ENVMILL_DEDUPE__STATE", "1.0")
    (small / "envmill.toml").write_text("")  # settings come from the variables
    assert call_main(monkeypatch, capsys, ("dedupe", "--out", str(small))).returncode == 0
    measures = [r["measure"] for r in rows(small, "SELECT measure FROM duplicates")]
    assert "task" in measures  # masked-identical tasks are still 1.0
    monkeypatch.setenv("ENVMILL_DEDUPE__ENABLED", "false")
    monkeypatch.setenv("ENVMILL_DEDUPE__CODE", "oops")
    failed = call_main(monkeypatch, capsys, ("dedupe", "--out", str(small)))
    assert failed.returncode != 0 and "dedupe.code" in failed.stderr


def test_a_run_compares_only_its_own_new_items(small):
    settings = EnvmillSettings()
    grant(small, "run-b")
    try:
        assert dedupe_new_items({"counts": {}}, settings, "run-b", str(small)) == {"counts": {}}
        summary = dedupe_new_items({"counts": {"environments": 1}}, settings, "run-b", str(small))
    finally:
        revoke(small, "run-b")
    assert summary["counts"] == {"environments": 1, "duplicates": 0}  # none of run-b's in it
    assert "dedupe_seconds" in summary
    assert rows(small, "SELECT count(*) AS n FROM duplicates")[0]["n"] == 0
    grant(small, "run-a")
    try:
        summary = dedupe_new_items({"counts": {"scenarios": 5}}, settings, "run-a", str(small))
    finally:
        revoke(small, "run-a")
    assert summary["counts"]["duplicates"] >= 2
    assert {r["run_id"] for r in rows(small, "SELECT run_id FROM duplicates")} == {"run-a"}


def test_the_duplicates_table_is_validated(tmp_path):
    warehouse = Warehouse(tmp_path / "data")
    good = {
        "kind": "task",
        "item_id": "1" * 16,
        "duplicate_of": "2" * 16,
        "similarity": 0.9,
        "measure": "task",
        "run_id": "run-a",
    }
    warehouse.write("duplicates", [good])
    for bad in ({"duplicate_of": "1" * 16}, {"measure": "vibes"}, {"similarity": 1.5}):
        with pytest.raises(WarehouseError):
            warehouse.write("duplicates", [good | bad])
    assert len(rows(warehouse.root, "SELECT * FROM duplicates")) == 1


def test_stats_shows_the_new_sections(small, monkeypatch, capsys):
    done = call_main(monkeypatch, capsys, ("stats", "--out", str(small)))
    assert done.returncode == 0, done.stderr
    for section in (
        "breadth",
        "state categories",
        "operations per chain",
        "query tool coverage",
        "task length",
        "scenario kinds",
        "duplicates",
        "lexical diversity",
    ):
        assert f"## {section}\n" in done.stdout
    as_json = json.loads(
        call_main(monkeypatch, capsys, ("stats", "--out", str(small), "--format", "json")).stdout
    )
    assert as_json["query_tool_coverage"][0]["coverage"] == pytest.approx(4 / 7, abs=1e-4)
    assert [r["n"] for r in as_json["lexical_diversity"]] == [1, 2, 3]
    assert as_json["lexical_diversity"][0]["tokens"] == 29  # "OR-1" is three tokens


def test_a_failed_pass_is_a_failures_row_not_a_failed_run(small, monkeypatch):
    from envmill.flows import dedupe as flow

    def broken(*args, **kwargs):
        raise ValueError("no comparison today")

    monkeypatch.setattr(flow, "find_duplicates", broken)
    grant(small, "run-a")
    try:
        summary = dedupe_new_items(
            {"counts": {"scenarios": 4}}, EnvmillSettings(), "run-a", str(small)
        )
    finally:
        revoke(small, "run-a")
    assert summary["counts"] == {"scenarios": 4, "dedupe_failed": 1}
    (failure,) = rows(small, "SELECT stage, item, error_class, message FROM failures")
    assert failure == {
        "stage": "dedupe",
        "item": "run-a",
        "error_class": "ValueError",
        "message": "no comparison today",
    }


def test_a_second_pass_shingles_only_what_it_has_not_seen(small, monkeypatch):
    """A run's pass reads the whole corpus: what earlier passes hashed is kept in the data folder
    (``_dedupe/``), so a later pass shingles nothing it has seen, and finds the same pairs."""
    from envmill.tasks.dedupe import detect

    def pass_of(run_id: str) -> set[tuple]:
        grant(small, run_id)
        try:
            dedupe_new_items({"counts": {"scenarios": 5}}, EnvmillSettings(), run_id, str(small))
        finally:
            revoke(small, run_id)
        found = rows(small, f"SELECT * FROM duplicates WHERE run_id = '{run_id}'")
        return {(r["measure"], r["item_id"], r["duplicate_of"]) for r in found}

    shingled: list[str] = []
    real = detect.code_shingles
    monkeypatch.setattr(detect, "code_shingles", lambda s: shingled.append(s) or real(s))
    first = pass_of("run-a")
    assert len(shingled) == 3 and list((small / "_dedupe").rglob("*.parquet"))
    shingled.clear()
    assert pass_of("run-a") == first and shingled == []


def test_a_damaged_memo_file_is_read_past_and_many_files_are_merged(tmp_path):
    from envmill.warehouse.dedupe_memo import MAX_FILES, StoredHashMemo

    memo = StoredHashMemo(tmp_path, "v1")
    memo.put("code:1", frozenset({1, 2}))
    memo.put("code:empty", frozenset())
    memo.save("run-1")
    (memo.folder / "run-0.parquet").write_bytes(b"not parquet")
    again = StoredHashMemo(tmp_path, "v1")
    assert again.get("code:1") == frozenset({1, 2}) and again.get("code:empty") == frozenset()
    for n in range(MAX_FILES + 1):
        later = StoredHashMemo(tmp_path, "v1")
        later.put(f"task:{n}", frozenset({n}))
        later.save(f"run-{n + 2}")
    assert len(list(memo.folder.glob("*.parquet"))) <= MAX_FILES
    merged = StoredHashMemo(tmp_path, "v1")
    assert merged.get("code:1") == frozenset({1, 2}) and merged.get(f"task:{MAX_FILES}") == {
        MAX_FILES
    }


def test_a_cache_that_cannot_be_saved_costs_nothing_else(small, monkeypatch, capsys):
    """A breaker's: a file where the cache's folder goes (or a full disk) failed the pass after
    its pairs were written, and ``envmill dedupe`` then always failed."""
    (small / "_dedupe").write_text("junk")
    done = call_main(monkeypatch, capsys, ("dedupe", "--out", str(small)))
    assert done.returncode == 0, done.stderr
    assert "the dedupe cache was not saved" in done.stderr
    assert rows(small, "SELECT count(*) AS n FROM duplicates")[0]["n"] >= 2
    (run,) = rows(small, "SELECT status FROM runs")
    assert run == {"status": "finished"}


def test_junk_in_the_cache_folder_is_read_past_and_never_merged(tmp_path):
    from envmill.warehouse.dedupe_memo import MAX_FILES, StoredHashMemo

    memo = StoredHashMemo(tmp_path, "v1")
    memo.folder.mkdir(parents=True)
    (memo.folder / "a_dir.parquet").mkdir()
    (memo.folder / ".killed.parquet.partial").write_bytes(b"half")
    (tmp_path / "_dedupe" / "v0").mkdir()  # an older release's
    for n in range(MAX_FILES + 2):
        later = StoredHashMemo(tmp_path, "v1")
        later.put(f"task:{n}", frozenset({n}))
        assert later.save(f"run-{n}") is None
    assert (memo.folder / "a_dir.parquet").is_dir()
    assert not (memo.folder / ".killed.parquet.partial").exists()
    assert not (tmp_path / "_dedupe" / "v0").exists()
    assert len([p for p in memo.folder.glob("*.parquet") if p.is_file()]) <= MAX_FILES
    assert StoredHashMemo(tmp_path, "v1").get("task:0") == frozenset({0})


def test_the_same_values_in_another_key_order_are_another_input():
    """A breaker's: the key sorted dict keys, but a measure may read them in their order."""
    from envmill.tasks.dedupe.detect import memo_key

    one = memo_key(("signature", [{"type": {"enum": ["a"], "base": "string"}}]))
    other = memo_key(("signature", [{"type": {"base": "string", "enum": ["a"]}}]))
    assert one != other
