"""The warehouse keeps itself whole: commits, verify and repair, resume checks, the folder lock.

Every damage here is one an operator met: a truncated part, garbage of the same size, a part
deleted by hand, a foreign Parquet file dropped into a table folder, a commit record cut short,
a run killed between its parts and its record.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envmill.schemas.run import BatchOutput
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.pipeline import plan_batches
from envmill.warehouse.commits import (
    Commit,
    DamagedRecord,
    committed_keys,
    publish,
    read_commit,
    record_path,
    visible_parts,
)
from envmill.warehouse.resume import FinishedItems, retract_superseded_failures
from envmill.warehouse.rows import write_batch, write_failed_batch
from envmill.warehouse.store import Warehouse, WarehouseError, checked_table, spec_of
from envmill.warehouse.verify import QUARANTINE, verify
from envmill.warehouse.views import DamagedPartWarning, query
from tests.unit.warehouse.test_warehouse import env_row, failure_row, run_row, scenario_row

RUN = "run-test-1"


@pytest.fixture(name="wh")
def wh_fixture(tmp_path: Path) -> Warehouse:
    return Warehouse(tmp_path / "data")


def _count(root: Path, table: str) -> int:
    return query(root, f"SELECT count(*) AS n FROM {table}").to_pylist()[0]["n"]


def _commit_batch(wh: Warehouse, key: str, items: list[str], n_scenarios: int = 2) -> None:
    """A batch of one environment's scenarios and a failure row, committed by hand."""
    env = env_row(key)
    parts = {
        "environments": wh.write_part("environments", _arrow("environments", [env]), key),
        "scenarios": wh.write_part(
            "scenarios",
            _arrow("scenarios", [scenario_row(env["env_id"], i) for i in range(n_scenarios)]),
            key,
        ),
        "failures": wh.write_part(
            "failures", _arrow("failures", [failure_row("s", key, "E")]), key
        ),
    }
    publish(wh.root, Commit(key=key, kind="batch", run_id=RUN, parts=parts, items=items))


def _arrow(table: str, rows: list[dict]):
    return checked_table(spec_of(table), rows)


# --- a batch is seen whole or not at all -------------------------------------------------------


def test_parts_are_unread_until_their_commit_is_published(wh):
    env = env_row("A")
    wh.write_part("environments", _arrow("environments", [env]), "k1")
    wh.write_part("scenarios", _arrow("scenarios", [scenario_row(env["env_id"], 0)]), "k1")
    assert _count(wh.root, "environments") == 0 and _count(wh.root, "scenarios") == 0
    _commit_batch(wh, "k1", ["item-a"])
    assert _count(wh.root, "environments") == 1 and _count(wh.root, "scenarios") == 2


def test_a_run_stopped_mid_batch_publishes_nothing(wh):
    answers = iter([True, False])  # allowed at the start, stopped before the record
    assert write_batch(wh, _output_with_rows(), RUN, lambda: next(answers)) is False
    assert committed_keys(wh.root) == set()
    assert not any(wh.root.glob("*/part-k2.parquet"))  # its parts are taken back as well
    assert write_batch(wh, _output_with_rows(), RUN, lambda: False) is False
    assert write_batch(wh, _output_with_rows(), RUN) is True
    assert read_commit(wh.root, "k2").items == ["item-b"] and _count(wh.root, "failures") == 1


def _output_with_rows() -> BatchOutput:
    from envmill.schemas.run import FailureRecord

    failure = FailureRecord(stage="item", item="x#1", error_class="E", message="m")
    return BatchOutput(key="k2", items=["item-b"], failures=[failure])


def test_a_rewrite_of_a_batch_leaves_no_part_of_its_earlier_attempt(wh):
    _commit_batch(wh, "k3", ["item-c"])
    write_batch(wh, BatchOutput(key="k3", items=["item-c"]), RUN)  # made nothing this time
    assert _count(wh.root, "scenarios") == 0 and _count(wh.root, "environments") == 0


def test_a_foreign_file_in_a_table_folder_adds_no_rows(wh):
    import pyarrow as pa
    import pyarrow.parquet as pq

    _commit_batch(wh, "k4", ["item-d"])
    foreign = pa.table({"scenario_id": ["f" * 16], "task": ["HACKED"], "x": [1]})
    pq.write_table(foreign, wh.root / "scenarios" / "part-evil.parquet")
    pq.write_table(foreign, wh.root / "scenarios" / "mine.parquet")
    tasks = query(wh.root, "SELECT task FROM scenarios").column("task").to_pylist()
    assert len(tasks) == 2 and "HACKED" not in tasks


# --- verify and repair ---------------------------------------------------------------------------


def _damage(wh: Warehouse, how: str) -> None:
    part = wh.root / "scenarios" / "part-bad.parquet"
    if how == "truncated":
        part.write_bytes(part.read_bytes()[:200])
    elif how == "garbage":
        part.write_bytes(b"\x00" * part.stat().st_size)
    elif how == "missing":
        part.unlink()
    elif how == "record":
        (wh.root / "_commits" / "bad.json").write_text('{"key": "bad", "parts": ')


@pytest.mark.parametrize("how", ["truncated", "garbage", "missing", "record"])
def test_verify_finds_damage_and_repair_makes_the_items_due_again(wh, how):
    _commit_batch(wh, "good", ["item-good"])
    _commit_batch(wh, "bad", ["item-bad"])
    assert verify(wh.root).findings == []
    _damage(wh, how)
    found = verify(wh.root)
    assert len(found.findings) == 1 and "bad" in found.findings[0].line()
    assert "\n" not in found.findings[0].line()
    with pytest.warns(DamagedPartWarning) if how in ("truncated", "garbage") else _nothing():
        assert _count(wh.root, "environments") >= 1  # the other tables still read
    repaired = verify(wh.root, repair=True)
    assert len(repaired.findings) == 1 and "retracted" in repaired.findings[0].line()
    assert verify(wh.root).findings == []
    finished = FinishedItems(wh.root)
    assert "item-good" in finished and "item-bad" not in finished
    assert _count(wh.root, "scenarios") == 2  # the good batch's rows only


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_verify_moves_foreign_and_unfinished_files_aside_and_deletes_temporaries(wh):
    import pyarrow as pa
    import pyarrow.parquet as pq

    _commit_batch(wh, "ok", ["item-ok"])
    pq.write_table(pa.table({"x": [1]}), wh.root / "scenarios" / "notes.parquet")
    wh.write_part("tools", _arrow("tools", []), "never-committed")
    (wh.root / "scenarios" / "part-x.parquet.tmp-0123").write_bytes(b"half")
    (wh.root / "_commits" / "x.json.tmp-0123").write_text("{")
    lines = [f.line() for f in verify(wh.root).findings]
    assert len(lines) == 4 and all("would" in line for line in lines)
    verify(wh.root, repair=True)
    assert verify(wh.root).findings == []
    assert (wh.root / QUARANTINE / "scenarios" / "notes.parquet").exists()  # not deleted
    assert (wh.root / QUARANTINE / "tools" / "part-never-committed.parquet").exists()
    assert not (wh.root / "scenarios" / "part-x.parquet.tmp-0123").exists()


def test_verify_holds_each_part_to_its_table_model(wh):
    """A part whose bytes match its record but whose rows break the model (written by an older
    or foreign writer) is found by reading it."""
    import pyarrow.parquet as pq

    from envmill.warehouse.commits import describe_part

    rows = _arrow("scenarios", [scenario_row(env_row("Z")["env_id"], 0)])
    status = rows.schema.field("status")  # a value the model does not allow, of the right type
    broken = rows.set_column(rows.schema.get_field_index("status"), status, [["maybe"]])
    path = wh.root / "scenarios" / "part-model.parquet"
    path.parent.mkdir(exist_ok=True)
    pq.write_table(broken, path)
    publish(wh.root, Commit(key="model", parts={"scenarios": describe_part(path, 1)}))
    (finding,) = verify(wh.root).findings
    assert "fails its table model" in finding.problem


def test_a_rerun_redoes_a_batch_whose_part_no_longer_matches(wh):
    _commit_batch(wh, "b1", ["i1", "i2"])
    _commit_batch(wh, "b2", ["i3"])
    part = wh.root / "scenarios" / "part-b1.parquet"
    part.write_bytes(part.read_bytes()[:-8] + b"\x00" * 8)  # same size, other bytes
    finished = FinishedItems(wh.root)
    assert "i3" in finished and "i1" not in finished and "i2" not in finished
    assert len(finished.redone) == 1 and "2 item(s) are redone" in finished.redone[0]
    assert "b1" not in committed_keys(wh.root) and not part.exists()


def test_a_successful_rerun_supersedes_the_failure_rows_of_a_failed_batch(wh):
    row = failure_row("batch", "batch-1", "MemoryError")
    write_failed_batch(wh, row, "batch-1", ["i1", "i2"], RUN)
    assert _count(wh.root, "failures") == 1
    assert "i1" not in FinishedItems(wh.root)  # a failure record does not make items done
    _commit_batch(wh, "redo-1", ["i1"])
    assert retract_superseded_failures(wh.root) == 0  # i2 is still not made
    _commit_batch(wh, "redo-2", ["i2"])
    assert retract_superseded_failures(wh.root) == 1
    assert query(wh.root, "SELECT stage FROM failures").column("stage").to_pylist() == ["s", "s"]


# --- item keys, paths -------------------------------------------------------------------------


def test_item_keys_do_not_depend_on_the_batch_size():
    settings = EnvmillSettings(envs=7, scenarios_per_env=2, domains=["library", "clinic"])
    by_size = {
        size: [
            item.key
            for batch in plan_batches(settings.model_copy(update={"batch_size": size}))
            for item in batch.items
        ]
        for size in (1, 3, 7)
    }
    assert by_size[1] == by_size[3] == by_size[7] and len(set(by_size[1])) == 7
    done = set(by_size[1][:4])
    rest = plan_batches(settings.model_copy(update={"batch_size": 2}), done=done)
    assert [i.key for b in rest for i in b.items] == by_size[1][4:]
    other = settings.model_copy(update={"scenarios_per_env": 3})
    assert not set(by_size[1]) & {i.key for b in plan_batches(other) for i in b.items}


@pytest.mark.parametrize("name", ["data[1]", "da*ta", "dat?a", "d[!x]ata"])
def test_a_folder_name_with_glob_characters_is_read_literally(tmp_path, name):
    mine, sibling = Warehouse(tmp_path / name), Warehouse(tmp_path / "data1")
    other = Warehouse(tmp_path / "daXta")
    mine.write("runs", [run_row()], key="r")
    for wh in (sibling, other):
        wh.write("runs", [run_row(), run_row() | {"run_id": "run-other"}], key="r")
    assert _count(mine.root, "runs") == 1
    assert visible_parts(mine.root, "runs")[0].parent == mine.root / "runs"


# --- the folder lock and runs left running -------------------------------------------------------


def test_commit_records_are_plain_json(wh):
    _commit_batch(wh, "k9", ["i9"])
    record = json.loads((wh.root / "_commits" / "k9.json").read_text())
    assert record["items"] == ["i9"] and set(record["parts"]) == {
        "environments",
        "scenarios",
        "failures",
    }
    assert all(len(p["sha256"]) == 64 for p in record["parts"].values())


def _edit_record(wh: Warehouse, key: str, change) -> None:
    path = wh.root / "_commits" / f"{key}.json"
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))


def _point_elsewhere(wh: Warehouse) -> None:
    """The record names another file; the real part is then overwritten with another batch's."""
    (wh.root / "environments" / "x.parquet").write_bytes(
        (wh.root / "environments" / "part-bad.parquet").read_bytes()
    )
    _edit_record(wh, "bad", lambda r: r["parts"]["environments"].update(file="x.parquet"))
    (wh.root / "environments" / "part-bad.parquet").write_bytes(
        (wh.root / "environments" / "part-good.parquet").read_bytes()
    )


def _outside(wh: Warehouse) -> None:
    _edit_record(
        wh, "bad", lambda r: r["parts"]["environments"].update(file="../../../../dev/zero", bytes=0)
    )


def _unlisted(wh: Warehouse) -> None:
    _edit_record(wh, "bad", lambda r: r["parts"].pop("scenarios"))


def _self_absorbed(wh: Warehouse) -> None:
    _edit_record(wh, "bad", lambda r: r.update(absorbed=["bad"]))
    (wh.root / "scenarios" / "part-bad.parquet").unlink()


def _absorbed_by_a_batch(wh: Warehouse) -> None:
    _edit_record(wh, "good", lambda r: r.update(absorbed=["bad"]))
    (wh.root / "scenarios" / "part-bad.parquet").unlink()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "lie", [_point_elsewhere, _outside, _unlisted, _self_absorbed, _absorbed_by_a_batch]
)
def test_a_record_that_lies_is_retracted_and_its_items_made_again(wh, lie):
    _commit_batch(wh, "good", ["item-good"])
    _commit_batch(wh, "bad", ["item-bad"])
    lie(wh)
    findings = [f.line() for f in verify(wh.root).findings]
    assert any(line.startswith("_commits/bad.json") for line in findings), findings
    assert "item-bad" not in FinishedItems(wh.root)  # a rerun retracts it and makes it again
    verify(wh.root, repair=True)
    assert verify(wh.root).findings == []
    assert committed_keys(wh.root) <= {"good"} and "item-good" in FinishedItems(wh.root)


def test_links_and_folders_in_the_warehouse_are_never_followed_and_never_overwritten(wh, tmp_path):
    _commit_batch(wh, "good", ["item-good"])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mine.txt").write_text("someone's")
    (wh.root / "tools").symlink_to(outside)  # a table folder that leads out
    (wh.root / "scenarios" / "part-link.parquet").symlink_to(
        wh.root / "scenarios" / "part-good.parquet"
    )
    (wh.root / "_commits" / "link.json").mkdir()  # a folder where a record would be
    (wh.root / "_commits" / "link.json" / "x").write_text("x")
    for text in ("one", "two"):  # set aside twice under one name: both kept
        (wh.root / "environments" / "notes.txt").write_text(text)
        verify(wh.root, repair=True)
    assert (outside / "mine.txt").read_text() == "someone's" and len(list(outside.iterdir())) == 1
    kept = sorted(p.read_text() for p in (wh.root / QUARANTINE / "environments").iterdir())
    assert kept == ["one", "two"]
    assert _count(wh.root, "scenarios") == 2 and _count(wh.root, "tools") == 0
    assert not (wh.root / "scenarios" / "part-link.parquet").exists()
    assert [f.line() for f in verify(wh.root).findings] == [
        "tools: is a link, not a folder: never read (left alone)"
    ]


# --- what sits at a path is read only as a regular file (issue 24) ------------------------------


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", ["fifo", "link_to_dev_zero"])
def test_a_pipe_or_a_link_at_a_commit_record_is_a_damaged_record_not_a_hang(wh, kind):
    """A named pipe where a commit record belongs hung every command that read the folder."""
    _commit_batch(wh, "k1", ["i1"])
    path = record_path(wh.root, "k1")
    path.unlink()
    os.mkfifo(path) if kind == "fifo" else path.symlink_to("/dev/zero")
    with pytest.raises(DamagedRecord, match="not a regular file|is a link"):
        read_commit(wh.root, "k1")
    found = [f.line() for f in verify(wh.root).findings]
    assert any("not a commit record" in line or "unreadable" in line for line in found), found


@pytest.mark.timeout(20)
def test_a_pipe_at_the_folder_marker_is_one_line(wh):
    marker = next(wh.root.glob("envmill.json"))
    marker.unlink()
    os.mkfifo(marker)
    with pytest.raises(WarehouseError, match="envmill.json is not readable JSON .*regular file"):
        Warehouse(wh.root)


def test_verify_lists_what_the_llm_cache_holds_that_is_no_file_and_sets_it_aside(wh):
    shard = wh.root / "_llm_cache" / "default" / "ab"
    shard.mkdir(parents=True)
    (shard / "good.json").write_text("{}")
    os.mkfifo(shard / "pipe.json")
    (shard / "zero.json").symlink_to("/dev/zero")
    found = {f.path: f for f in verify(wh.root).findings}
    assert set(found) == {"_llm_cache/default/ab/pipe.json", "_llm_cache/default/ab/zero.json"}
    assert all("read as a cache miss" in f.problem for f in found.values())
    verify(wh.root, repair=True)
    assert sorted(p.name for p in shard.iterdir()) == ["good.json"]
    assert (wh.root / QUARANTINE / "_llm_cache/default/ab/pipe.json").exists()
