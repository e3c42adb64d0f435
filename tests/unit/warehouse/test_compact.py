"""``envmill compact``: the same rows before, during and after; resume and verify unaffected."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from envmill.schemas.ids import content_id
from envmill.schemas.tables import TABLES
from envmill.warehouse import views
from envmill.warehouse.commits import (
    Commit,
    committed_keys,
    describe_part,
    publish,
    read_commit,
    retract,
)
from envmill.warehouse.compact import Limits, compact
from envmill.warehouse.resume import CommitIndex, FinishedItems
from envmill.warehouse.rows import write_failed_batch
from envmill.warehouse.store import Warehouse, checked_table, spec_of
from envmill.warehouse.verify import verify
from envmill.warehouse.views import corpus_stats, query
from tests.unit.warehouse.test_warehouse import (
    NOW,
    RUN,
    env_row,
    failure_row,
    run_row,
    scenario_row,
    tool_rows,
    trajectory_row,
)

pytestmark = pytest.mark.timeout(60)
BATCHES = 6


def batch_key(name: str) -> str:
    return content_id(f"batch {name}")


def commit_batch(wh: Warehouse, name: str, tables: dict[str, list[dict]]) -> str:
    """A batch as ``write_batch`` commits it: a part per table under its key, then the record."""
    key = batch_key(name)
    parts = {
        t: wh.write_part(t, checked_table(spec_of(t), rows), key) for t, rows in tables.items()
    }
    items = [f"item-{name}"]
    publish(wh.root, Commit(key=key, kind="batch", run_id=RUN, parts=parts, items=items))
    return key


def env_batch(wh: Warehouse, i: int, later: timedelta = timedelta(0)) -> str:
    env = env_row(f"env{i}") | {"created_at": NOW + later}
    scenarios = [scenario_row(env["env_id"], n) | {"created_at": NOW + later} for n in range(2)]
    trajectories = [
        trajectory_row(s["scenario_id"], env["env_id"], reward=0.5 * n)
        | {"created_at": NOW + later}
        for n, s in enumerate(scenarios)
    ]
    tables = {
        "environments": [env],
        "tools": tool_rows(env["env_id"], 2, 1),
        "scenarios": scenarios,
        "trajectories": trajectories,
    }
    if i < 3:
        tables["failures"] = [failure_row("certify", f"item-{i}", "Timeout")]
    return commit_batch(wh, str(i), tables)


@pytest.fixture(scope="module", name="template")
def template_fixture(tmp_path_factory) -> Path:
    """Batches (one with newer, tied and older copies of other batches' rows, one without
    trajectories), a run's row (a ``write``), a failed batch (a ``failure``) whose failure row a
    batch holds too. Built once (validating every part takes seconds), copied for each test."""
    wh = Warehouse(tmp_path_factory.mktemp("template") / "data")
    for i in range(BATCHES):
        env_batch(wh, i, timedelta(minutes=i))
    env0 = env_row("env0")
    scenario = scenario_row(env0["env_id"], 0) | {"task": "newer", "created_at": NOW + timedelta(1)}
    trajectory = trajectory_row(scenario["scenario_id"], env0["env_id"], reward=0.0)
    commit_batch(
        wh,
        "copies",
        {
            "scenarios": [scenario],
            "tools": [tool_rows(env0["env_id"], 1, 0)[0] | {"description": "tied"}],
            "trajectories": [trajectory | {"created_at": NOW - timedelta(1)}],  # older: loses
        },
    )
    env9 = env_row("env9")
    commit_batch(
        wh, "no-trajectories", {"environments": [env9], "tools": tool_rows("a" * 16, 1, 1)}
    )
    wh.write("runs", [run_row()], key=RUN)
    shared = failure_row("certify", "item-x", "Crash")
    write_failed_batch(wh, shared, "x", ["item-x"], RUN)
    commit_batch(wh, "shares-a-failure", {"failures": [shared | {"message": "in a batch"}]})
    return wh.root


@pytest.fixture(name="wh")
def wh_fixture(template, tmp_path) -> Warehouse:
    shutil.copytree(template, tmp_path / "data")
    return Warehouse(tmp_path / "data")


def rows_of(root: Path) -> dict[str, list[dict]]:
    """Every row of every table, through one connection of the views."""
    con = views.connect(root)
    try:
        return {
            t: views.run_sql(con, f"SELECT * FROM {t} ORDER BY ALL").to_pylist() for t in TABLES
        }
    finally:
        con.close()


def part_names(root: Path, table: str) -> list[str]:
    folder = root / table
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


ITEMS = [f"item-{name}" for name in [*map(str, range(BATCHES)), "copies", "no-trajectories", "x"]]


def finished(root: Path) -> list[str]:
    done = FinishedItems(root)
    return [item for item in ITEMS if item in done]


def test_queries_return_the_same_rows_after_compaction(wh):
    before, done = rows_of(wh.root), finished(wh.root)
    assert [r["task"] for r in before["scenarios"] if r["task"] == "newer"] == ["newer"]
    report = compact(wh.root)
    assert rows_of(wh.root) == before and not (wh.root / "_compacting").exists()
    assert finished(wh.root) == done == [i for i in ITEMS if i != "item-x"]
    lines = {t.table: t.line() for t in report.tables}
    assert lines["scenarios"] == "scenarios: 7 → 1 parts, 12 rows (1 duplicate rows dropped)"
    assert lines["tools"] == "tools: 8 → 1 parts, 20 rows (1 duplicate rows dropped)"
    assert lines["runs"] == "runs: 1 → 1 parts, 1 rows"  # a write is never merged
    # the batch part sharing a key with the failed batch's part stays as it is, and that one too
    assert lines["failures"] == "failures: 5 → 3 parts, 5 rows"
    assert [n for n in part_names(wh.root, "failures") if "compact" not in n] == [
        f"part-{batch_key('shares-a-failure')}.parquet",
        "part-failed-x.parquet",
    ]
    assert not any(t.problem for t in report.tables)


def test_absorbed_is_per_table(wh):
    compact(wh.root)
    index = CommitIndex(wh.root)
    key = batch_key("0")
    into = {t: index.absorbers(key, t) for t in index.commits[key].parts}
    assert sorted(into) == ["environments", "failures", "scenarios", "tools", "trajectories"]
    assert len({merged for keys in into.values() for merged in keys}) == 5
    for table, (merged,) in into.items():
        assert merged.startswith(f"compact-{table}-")
        assert index.commits[merged].parts.keys() == {table}
        assert index.merged(key, table)
    assert index.problems(key) == []
    # the batch records stay (they name the items); their parts are gone
    assert (
        index.commits[key].kind == "batch"
        and not (wh.root / "scenarios" / f"part-{key}.parquet").exists()
    )


def test_verify_is_clean_after_compaction(wh):
    compact(wh.root)
    report = verify(wh.root)
    assert report.findings == []
    assert report.rows == sum(
        read_commit(wh.root, key).parts[t].rows
        for key in committed_keys(wh.root)
        for t in read_commit(wh.root, key).parts
        if (wh.root / t / read_commit(wh.root, key).parts[t].file).exists()
    )


def _compaction_of(root: Path, table: str) -> str:
    (key,) = [k for k in committed_keys(root) if k.startswith(f"compact-{table}-")]
    return key


def test_a_damaged_compacted_part_is_found_and_repair_redoes_its_items(wh):
    compact(wh.root)
    merged = _compaction_of(wh.root, "trajectories")
    part = wh.root / "trajectories" / f"part-{merged}.parquet"
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    found = verify(wh.root)
    assert f"_commits/{merged}.json" in {f.path for f in found.findings}
    assert all("would retract" in f.action for f in found.findings)
    assert len(found.findings) == 1 + BATCHES + 1  # the part and the batches whose rows it held
    report = verify(wh.root, repair=True)
    assert report.redo_items == BATCHES + 1
    assert merged not in committed_keys(wh.root)
    assert finished(wh.root) == ["item-no-trajectories"]
    assert verify(wh.root).findings == []
    assert query(wh.root, "SELECT count(*) AS n FROM trajectories").to_pylist() == [{"n": 0}]


def test_repair_after_the_batch_retracted_itself_does_not_keep_other_items(wh):
    """FinishedItems retracts the batches at once (a run starting); verify then retracts the
    compaction: every item the damaged part held is made again, the others are not."""
    compact(wh.root)
    merged = _compaction_of(wh.root, "scenarios")
    (wh.root / "scenarios" / f"part-{merged}.parquet").write_bytes(b"not parquet")
    done = FinishedItems(wh.root)
    assert "item-0" not in done and "item-no-trajectories" in done
    assert [line.split(":")[0] for line in done.redone] == [f"batch {batch_key('0')}"]
    verify(wh.root, repair=True)
    assert finished(wh.root) == ["item-no-trajectories"]


class Killed(BaseException):
    """kill -9, as far as the compaction can tell."""


def _kill_after(monkeypatch, deletions: int) -> None:
    real, done = CommitIndex.drop_merged, []

    def drop_merged(self, key, table):
        if len(done) == deletions:
            raise Killed
        done.append(key)
        real(self, key, table)

    monkeypatch.setattr(CommitIndex, "drop_merged", drop_merged)


@pytest.mark.parametrize("deletions", [0, 3])
def test_a_crash_between_publishing_and_deleting_loses_nothing(wh, monkeypatch, deletions):
    before, done = rows_of(wh.root), finished(wh.root)
    _kill_after(monkeypatch, deletions)
    with pytest.raises(Killed):
        compact(wh.root)
    monkeypatch.undo()
    assert rows_of(wh.root) == before  # rows twice on disk, once in the views
    assert finished(wh.root) == done
    *leftovers, marker = verify(wh.root).findings
    assert leftovers and all("already merged into compact-" in f.problem for f in leftovers)
    assert marker.path == "_compacting" and "did not finish" in marker.problem
    report = compact(wh.root)
    assert len(report.finished) == len(leftovers) and not (wh.root / "_compacting").exists()
    assert verify(wh.root).findings == []
    assert rows_of(wh.root) == before and finished(wh.root) == done
    assert len([n for n in part_names(wh.root, "scenarios")]) == 1


def test_the_merged_copy_wins_over_a_tied_row_left_behind(wh, monkeypatch):
    """Tools have no order_by: of two rows of one key the later file name wins. A compaction
    cut short right after deleting the winner's part leaves the loser's part, whose name sorts
    after the merged part's: the merged copy of the winner must still be the row read."""
    tool = tool_rows("e" * 16, 1, 0)[0]
    for name in ("tie-11", "tie-12"):  # keys dd… and e6…: both sort after part-compact-…
        commit_batch(wh, name, {"tools": [tool | {"description": name}]})
    winner, loser = batch_key("tie-12"), batch_key("tie-11")
    assert "part-compact-" < f"part-{loser}" < f"part-{winner}"
    before = rows_of(wh.root)
    assert [r["description"] for r in before["tools"] if r["env_id"] == "e" * 16] == ["tie-12"]
    real = CommitIndex.drop_merged

    def drop_merged(self, key, table):
        if table != "tools":
            return real(self, key, table)
        real(self, winner, table)
        raise Killed

    monkeypatch.setattr(CommitIndex, "drop_merged", drop_merged)
    with pytest.raises(Killed):
        compact(wh.root)
    monkeypatch.undo()
    assert (wh.root / "tools" / f"part-{loser}.parquet").exists()
    assert not (wh.root / "tools" / f"part-{winner}.parquet").exists()
    assert rows_of(wh.root) == before


def test_verify_repair_finishes_a_compaction_cut_short(wh, monkeypatch):
    before = rows_of(wh.root)
    _kill_after(monkeypatch, 1)
    with pytest.raises(Killed):
        compact(wh.root)
    monkeypatch.undo()
    report = verify(wh.root, repair=True)
    assert report.findings and report.redo_items == 0
    assert report.findings[-1].line() == (
        "_compacting: a compaction did not finish (until then, views rank every row of every "
        "table) (deleted)"
    )
    assert verify(wh.root).findings == [] and rows_of(wh.root) == before


def test_a_merged_part_never_published_is_removed(wh, monkeypatch):
    before = rows_of(wh.root)
    monkeypatch.setattr("envmill.warehouse.compact.publish", lambda root, commit: _raise(Killed))
    with pytest.raises(Killed):
        compact(wh.root)
    monkeypatch.undo()
    assert [n for n in part_names(wh.root, "runs")] == [f"part-runs-{RUN}.parquet"]
    unpublished = [n for n in part_names(wh.root, "environments") if "compact" in n]
    assert len(unpublished) == 1 and rows_of(wh.root) == before
    assert [f.action for f in verify(wh.root).findings] == ["would delete", "would delete"]
    assert any("did not finish" in line for line in compact(wh.root).finished)
    assert verify(wh.root).findings == [] and rows_of(wh.root) == before


def _raise(exc: type[BaseException]):
    raise exc


def test_new_parts_beside_compacted_ones_read_as_with_every_row_ranked(wh):
    """Once compacted, views rank only the keys of the other parts (with the compacted rows of
    those keys): the same rows as ranking every row, which they do while ``_compacting`` is
    there."""
    compact(wh.root)
    env_batch(wh, 7)
    env0 = env_row("env0")
    scenario = scenario_row(env0["env_id"], 1) | {
        "task": "newest",
        "created_at": NOW + timedelta(2),
    }
    older = scenario_row(env0["env_id"], 0) | {"task": "older", "created_at": NOW - timedelta(2)}
    tied = tool_rows(env0["env_id"], 1, 0)[0] | {"description": "tied again"}
    commit_batch(wh, "more copies", {"scenarios": [scenario, older], "tools": [tied]})
    ranked_part = rows_of(wh.root)
    (wh.root / "_compacting").touch()
    assert rows_of(wh.root) == ranked_part
    tasks = [r["task"] for r in ranked_part["scenarios"] if r["env_id"] == env0["env_id"]]
    assert sorted(tasks) == ["newer", "newest"]
    spec = TABLES["scenarios"]
    listed = views.list_parts(wh.root)
    assert listed.compacting and "ANTI JOIN" not in views.view_sql(
        spec, listed.parts["scenarios"], "e"
    )
    (wh.root / "_compacting").unlink()
    listed = views.list_parts(wh.root)
    assert not listed.compacting and "ANTI JOIN" in views.view_sql(
        spec, listed.parts["scenarios"], "e", False
    )


def test_compaction_twice_is_idempotent(wh):
    compact(wh.root)
    rows, parts = rows_of(wh.root), {t: part_names(wh.root, t) for t in TABLES}
    report = compact(wh.root)
    assert all(t.parts_before == t.parts_after for t in report.tables)
    assert rows_of(wh.root) == rows and {t: part_names(wh.root, t) for t in TABLES} == parts


def test_a_second_compaction_merges_new_batches_into_the_first(wh):
    compact(wh.root)
    first = _compaction_of(wh.root, "scenarios")
    env_batch(wh, 7, timedelta(hours=2))
    before, done = rows_of(wh.root), finished(wh.root) + ["item-7"]
    compact(wh.root)
    second = _compaction_of(wh.root, "scenarios")
    assert second != first and rows_of(wh.root) == before
    index = CommitIndex(wh.root)
    assert index.absorbers(batch_key("0"), "scenarios") == [second]  # flattened, no chain
    assert first in index.commits[second].absorbed and first not in index.commits
    assert [i for i in [*ITEMS, "item-7"] if i in FinishedItems(wh.root)] == done
    assert verify(wh.root).findings == []


def test_small_limits_make_several_parts_with_the_same_rows(wh):
    before = rows_of(wh.root)
    report = {t.table: t for t in compact(wh.root, Limits(rows=6)).tables}
    assert rows_of(wh.root) == before and verify(wh.root).findings == []
    index = CommitIndex(wh.root)
    merged = [c for c in index.commits.values() if c.kind == "compaction"]
    assert all(info.rows <= 6 for c in merged for info in c.parts.values())
    assert report["scenarios"].parts_after == 3 and report["scenarios"].duplicates == 1
    # tools: 3 rows a batch is half the limit, not small; but batch 0's part shares a key with
    # the small part of the copies, so it is merged with it (else the copy's rank would change)
    assert report["tools"].parts_before == 8 and report["tools"].parts_after == 6
    assert index.absorbers(batch_key("0"), "tools") and not index.absorbers(batch_key("1"), "tools")
    # a new small part is merged with the small ones; the parts of half the limit stay
    big = {n for n in part_names(wh.root, "scenarios") if n.startswith("part-compact-")}
    big = {n for n in big if index.commits[n[5:-8]].parts["scenarios"].rows >= 3}
    env_batch(wh, 8)
    compact(wh.root, Limits(rows=6))
    assert big < set(part_names(wh.root, "scenarios"))
    assert "item-8" in FinishedItems(wh.root) and verify(wh.root).findings == []


def test_a_part_written_again_under_an_absorbed_key_is_not_the_merged_one(wh):
    """A batch retracted after compaction and made again: its new parts are its own; nothing
    deletes them as merged, and a compaction merges them as any other. (A part written again
    byte for byte is the one merged: deleting it loses nothing.)"""
    compact(wh.root)
    key = batch_key("1")
    retract(wh.root, key, list(TABLES))
    assert env_batch(wh, 1, timedelta(hours=3)) == key
    index = CommitIndex(wh.root)
    for table in ("environments", "scenarios", "trajectories"):  # their rows changed
        assert index.absorbers(key, table) == [] and not index.merged(key, table)
    assert {table for _, table, _ in index.leftovers()} == {"tools", "failures"}  # the same
    newer = rows_of(wh.root)
    compact(wh.root)
    assert rows_of(wh.root) == newer and "item-1" in FinishedItems(wh.root)
    assert verify(wh.root).findings == []


def test_a_reader_listing_during_a_compaction_sees_every_row(wh, monkeypatch):
    """The tables are listed after the commits: a compaction publishing and deleting in between
    would hide the merged rows from that listing, so it is taken again."""
    before = rows_of(wh.root)
    real, calls = views.visible_parts, []

    def visible_parts(root, table, keys=None):
        if not calls:
            compact(wh.root)
        calls.append(table)
        return real(root, table, keys)

    monkeypatch.setattr(views, "visible_parts", visible_parts)
    assert rows_of(wh.root) == before and len(calls) > len(TABLES)


@pytest.mark.parametrize("read", ["query", "stats"])
def test_a_reader_whose_parts_are_merged_meanwhile_reads_again(wh, monkeypatch, read):
    """The views listed parts that a compaction deleted before the query read them."""

    def reading():
        if read == "stats":
            return corpus_stats(wh.root)
        return query(wh.root, "SELECT * FROM scenarios ORDER BY ALL").to_pylist()

    expected = reading()
    real, calls = views.run_sql, []

    def run_sql(con, sql, params=None):
        if not calls:
            compact(wh.root)
        calls.append(sql)
        return real(con, sql, params)

    monkeypatch.setattr(views, "run_sql", run_sql)
    assert reading() == expected
    assert len(calls) == (2 if read == "query" else len(expected) + 1)


def test_a_part_without_a_newer_column_is_merged_by_name(wh):
    """A part written before a (nullable) column existed: DuckDB refuses it under the schema of
    the table's anchor, so the merge reads the parts by name, as the views do."""
    import pyarrow.parquet as pq

    env = env_row("old") | {"created_at": NOW}
    arrow = checked_table(spec_of("environments"), [env]).drop_columns(["seed"])
    key = batch_key("old")
    path = wh.root / "environments" / f"part-{key}.parquet"
    pq.write_table(arrow, path)
    info = describe_part(path, 1)
    publish(wh.root, Commit(key=key, kind="batch", parts={"environments": info}, items=["i"]))
    before = rows_of(wh.root)
    assert [r["seed"] for r in before["environments"] if r["class_name"] == "old"] == [None]
    report = {t.table: t for t in compact(wh.root).tables}
    assert report["environments"].parts_after == 1 and not report["environments"].problem
    assert rows_of(wh.root) == before


def test_a_plain_verify_after_a_killed_compaction_warns_and_exits_zero(wh, monkeypatch, capsys):
    """A monitoring job paging on `verify` paged on a state the next command repairs by itself
    (issue 24): an unfinished compaction is a warning, exit 0; damage stays exit 1."""
    from tests.conftest import call_main

    _kill_after(monkeypatch, 1)
    with pytest.raises(Killed):
        compact(wh.root)
    monkeypatch.undo()
    assert all(finding.repairable for finding in verify(wh.root).findings)
    result = call_main(monkeypatch, capsys, ("verify", "--out", str(wh.root)))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines and all(line.startswith("warning: ") for line in lines), lines
    assert "0 problem(s)" in result.stderr and "the next command completes" in result.stderr
