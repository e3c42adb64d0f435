"""The DuckDB side of ``envmill compact``: rank one table's rows as the views do, and stream the
rows of some of its parts, less the duplicates, into one validated part.

The compaction has connections of its own, one per table (the views' one is confined and cannot
spill): each reads only the part files it is given, under a memory limit, spilling to
``<root>/_compact_spill`` (removed after). A query reads parts with a schema anchor (an empty part
of the table's exact schema) named first and DuckDB taking its columns for all: ``union_by_name``
reads every footer up front, which costs ~40 KB of memory a part, by the ten thousand. Once a
part turns out to lack a column (written before it existed), the queries read by name, as the
views do.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from envmill.schemas.tables import TableSpec
from envmill.warehouse.commits import PartInfo, describe_part
from envmill.warehouse.store import ROW_GROUP_SIZE, WarehouseError, validate_table
from envmill.warehouse.views import parts_source, rank_order

T = TypeVar("T")
SPILL = "_compact_spill"


class CompactionError(WarehouseError):
    """A merged part that is not what it should be; nothing was published for it."""


def open_connection(spill: Path, memory: str) -> duckdb.DuckDBPyConnection:
    """One table's connection (a database of its own, in memory)."""
    config: dict[str, str | bool | int | float | list[str]] = {
        "memory_limit": memory,
        "temp_directory": str(spill),
        "preserve_insertion_order": False,
    }
    con = duckdb.connect(":memory:", config=config)
    con.execute("SET enable_progress_bar = false")
    # no parquet_metadata_cache: it would save reading each footer a second time (to rank, to
    # merge) but keep every footer until the end, outside memory_limit (measured: 25,000 parts
    # of a table, +500 MB, no faster)
    return con


@dataclass
class PartsReader:
    """Reads the parts of one table (file names in its folder)."""

    con: duckdb.DuckDBPyConnection
    spec: TableSpec
    folder: Path
    anchor: Path
    by_name: bool = False

    @classmethod
    def open(cls, con: duckdb.DuckDBPyConnection, root: Path, spec: TableSpec) -> PartsReader:
        anchor = root / SPILL / f"anchor-{spec.name}.parquet"
        anchor.parent.mkdir(exist_ok=True)
        pq.write_table(spec.empty_table(), anchor)
        con.register(f"_empty_{spec.name}", spec.empty_table())
        return cls(con, spec, root / spec.name, anchor)

    def rank(self, files: list[str]) -> list[list[str]]:
        """Rank every row of a key that has several, among the parts ``files`` (temporary table
        ``ranked``: file, row number, rank; 1 is the row the views show), and return the groups
        of files that share such a key."""
        key = ", ".join(f'"{k}"' for k in self.spec.key)
        self._again_by_name(
            lambda: self.con.execute(
                f"CREATE OR REPLACE TEMP TABLE ranked AS SELECT parse_filename(filename) AS "
                f"file, file_row_number, {key}, row_number() OVER (PARTITION BY {key} ORDER BY "
                f"{rank_order(self.spec)}) AS rank FROM ({self._source(files)}) "
                f"QUALIFY count(*) OVER (PARTITION BY {key}) > 1"
            )
        )
        shared = self.con.execute(
            f"SELECT DISTINCT list_sort(list(DISTINCT file)) FROM ranked GROUP BY {key}"
        ).fetchall()
        return [group for (group,) in shared]

    def dropped(self, files: list[str]) -> int:
        """How many rows of ``files`` a row of the same key ranks before (after :meth:`rank`)."""
        sql = "SELECT count(*) FROM ranked WHERE rank > 1 AND list_contains(?, file)"
        return self.con.execute(sql, [files]).fetchall()[0][0]

    def write(self, files: list[str], target: Path, expected: int) -> PartInfo:
        """Write the rows of ``files`` that rank first into ``target`` (atomically), streamed a
        validated row group at a time; CompactionError unless ``expected`` rows were written."""
        cols = ", ".join(f's."{c}"' for c in self.spec.columns)
        return self._again_by_name(
            lambda: _write_merged(
                self.con,
                self.spec,
                f"SELECT {cols} FROM ({self._source(files)}) s ANTI JOIN (SELECT file, "
                "file_row_number FROM ranked WHERE rank > 1) d ON parse_filename(s.filename) = "
                "d.file AND s.file_row_number = d.file_row_number",
                target,
                expected,
            )
        )

    def close(self) -> None:
        """Close the table's connection (a database of its own: nothing of it stays)."""
        self.con.close()

    def _source(self, files: list[str]) -> str:
        paths = [self.folder / name for name in files]
        paths = paths if self.by_name else [self.anchor, *paths]
        return parts_source(paths, f"_empty_{self.spec.name}", True, self.by_name)

    def _again_by_name(self, step: Callable[[], T]) -> T:
        try:
            return step()
        except duckdb.Error as exc:
            if self.by_name or "schema mismatch" not in str(exc):
                raise
        self.by_name = True
        return step()


def _write_merged(
    con: duckdb.DuckDBPyConnection, spec: TableSpec, sql: str, target: Path, expected: int
) -> PartInfo:
    tmp = target.with_name(f"{target.name}.tmp-{uuid.uuid4().hex}")
    reader = con.sql(sql).to_arrow_reader(ROW_GROUP_SIZE)
    rows = 0
    try:
        with pq.ParquetWriter(tmp, spec.arrow_schema, compression="zstd") as writer:
            for group in _row_groups(reader, spec):
                validate_table(spec, group)
                writer.write_table(group, row_group_size=ROW_GROUP_SIZE)
                rows += group.num_rows
        _check_written(tmp, spec, rows, expected)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        reader.close()
    return describe_part(target, rows)


def _row_groups(reader: pa.RecordBatchReader, spec: TableSpec) -> Iterator[pa.Table]:
    """The reader's batches as tables of ``ROW_GROUP_SIZE`` rows in the table's exact schema."""
    pending: list[pa.RecordBatch] = []
    held = 0
    for batch in reader:
        pending.append(batch)
        held += batch.num_rows
        if held >= ROW_GROUP_SIZE:
            yield pa.Table.from_batches(pending).cast(spec.arrow_schema)
            pending, held = [], 0
    if pending:
        yield pa.Table.from_batches(pending).cast(spec.arrow_schema)


def _check_written(path: Path, spec: TableSpec, rows: int, expected: int) -> None:
    with pq.ParquetFile(path) as written:
        schema, count = written.schema_arrow, written.metadata.num_rows
    if not schema.remove_metadata().equals(spec.arrow_schema.remove_metadata()):
        raise CompactionError(f"{path.name}: the merged part lost the schema of {spec.name}")
    if count != rows or rows != expected:
        raise CompactionError(
            f"{path.name}: the merged part has {count} rows, its parts {expected} (less duplicates)"
        )
