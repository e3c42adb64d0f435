"""``envmill sql`` and every warehouse query are read-only and confined to the data folder: each
kind of statement that is not a query is refused by name, and a query cannot read, write or load
anything outside the folder, nor change the settings that keep it there."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from envmill.schemas.ids import content_id
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import NotAQuery, query
from tests.unit.warehouse.test_warehouse import scenario_row

REFUSED = {
    "COPY": "COPY (SELECT 'HACKED' AS task) TO '{root}/scenarios/part-evil.parquet'",
    "EXPORT": "EXPORT DATABASE '{root}/dump'",
    "ATTACH": "ATTACH '{root}/x.duckdb' AS x",
    "DETACH": "DETACH memory",
    "CREATE": "CREATE TABLE x AS SELECT 1 AS a",
    "DROP": "DROP VIEW scenarios",
    "INSERT": "INSERT INTO scenarios (scenario_id) VALUES ('x')",
    "UPDATE": "UPDATE scenarios SET task = 'HACKED'",
    "DELETE": "DELETE FROM scenarios",
    "ALTER": "ALTER VIEW scenarios RENAME TO s",
    "SET": "SET enable_external_access = true",
    "PRAGMA": "PRAGMA show_tables",
    "CALL": "CALL pragma_version()",
    "LOAD": "LOAD httpfs",
    "LOAD ": "INSTALL httpfs",  # DuckDB's parser calls an install a load
    "TRANSACTION": "BEGIN TRANSACTION",
    "EXPLAIN": "EXPLAIN ANALYZE COPY (SELECT 'HACKED' AS task) TO '{root}/scenarios/p.parquet'",
    "EXPLAIN ": "EXPLAIN SELECT 1",  # a plan is harmless, but ANALYZE runs what it explains
}


@pytest.fixture(name="root")
def root_fixture(tmp_path):
    wh = Warehouse(tmp_path / "data")
    env_id = content_id("Shop")
    wh.write("scenarios", [scenario_row(env_id, 0)], key="a")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("secret\nTOP SECRET\n")
    pq.write_table(pa.table({"secret": ["TOP SECRET"]}), outside / "secret.parquet")
    return wh.root


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_each_statement_that_is_not_a_query_is_refused_by_name(root, kind):
    before = sorted(root.rglob("*"))
    with pytest.raises(NotAQuery, match=f"^{kind.strip()} statements are refused"):
        query(root, REFUSED[kind].format(root=root))
    assert query(root, "SELECT task FROM scenarios").to_pylist() == [{"task": "task 0"}]
    assert sorted(root.rglob("*")) == before


def test_one_statement_at_a_time(root):
    with pytest.raises(NotAQuery, match="one statement at a time, not 2"):
        query(root, "SELECT 1; DROP VIEW scenarios")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('{outside}/secret.csv')",
        "SELECT * FROM read_parquet('{outside}/secret.parquet')",
        "SELECT * FROM read_parquet('{root}/../outside/secret.parquet')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM glob('{outside}/*')",
        "SELECT * FROM read_csv('https://example.com/data.csv')",
        "SELECT content FROM read_text('.tmp/secret.txt')",  # DuckDB's default spill folder
    ],
)
def test_a_query_reads_nothing_outside_the_data_folder(root, sql, monkeypatch):
    import duckdb

    monkeypatch.chdir(root.parent)
    (root.parent / ".tmp").mkdir()
    (root.parent / ".tmp" / "secret.txt").write_text("TOP SECRET")
    with pytest.raises(duckdb.Error, match="disabled by config|Permission"):
        query(root, sql.format(root=root, outside=root.parent / "outside"))


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) AS n FROM scenarios",
        "DESCRIBE scenarios",
        "SUMMARIZE scenarios",
        "SHOW TABLES",
        "WITH s AS (SELECT * FROM scenarios) SELECT count(*) AS n FROM s",
        "FROM scenarios SELECT task",
        "SELECT current_setting('enable_external_access') AS open",
    ],
)
def test_queries_still_run(root, sql):
    assert query(root, sql).num_rows >= 1


def test_the_settings_that_confine_a_query_are_in_force(root):
    names = ("enable_external_access", "lock_configuration", "autoinstall_known_extensions")
    sql = ", ".join(f"current_setting('{name}') AS {name}" for name in names)
    assert query(root, f"SELECT {sql}").to_pylist() == [
        {"enable_external_access": False, "lock_configuration": True,
         "autoinstall_known_extensions": False}
    ]  # fmt: skip
