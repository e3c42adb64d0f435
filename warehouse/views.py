"""The warehouse's read side: DuckDB views over the Parquet parts, and output formatting.

Each caller gets its own in-memory connection: a `.duckdb` file held open for writing would lock
every other process out, readers included (STACK §3). Views read the parts committed when the
connection opened (``warehouse.commits``: a batch is seen whole or not at all, and a file no
commit lists is never read), keep one row per key, and always expose every column of the
table's schema, even with no parts yet.

The connection is read-only and confined, whoever writes the SQL (``envmill sql`` takes a user's):
one statement at a time, and only a query (``SELECT`` and what DuckDB reads as one: ``DESCRIBE``,
``SUMMARIZE``, ``SHOW``, ``FROM``, ``VALUES``), checked by DuckDB's own parser (not ``EXPLAIN``:
``EXPLAIN ANALYZE`` runs the statement it explains, a ``COPY`` too); files outside the data
folder cannot be read (``enable_external_access`` off, the folder the only
``allowed_directories``, no spill folder, which DuckDB would allow as well), extensions are
neither installed nor loaded, and the configuration is locked so a query cannot undo any of it.
A ``COPY … TO`` into the folder, which confinement alone would allow, is refused as a statement
that is not a query.

``envmill compact`` deletes parts while readers may be listing or reading them (it publishes the
merged part first, so every row stays committed throughout): a listing that a compaction
published in the middle of is taken again, and a query that finds a part it listed gone reads
again from a fresh listing, once.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from envmill.schemas.dedupe import MEASURES
from envmill.schemas.scenario import GATES
from envmill.schemas.tables import TABLES, TableSpec
from envmill.warehouse.commits import (
    COMPACTING,
    COMPACTION_PREFIX,
    PART_PREFIX,
    committed_keys,
    visible_parts,
)
from envmill.warehouse.report.diversity import distinct_n

Format = Literal["table", "csv", "json"]
MAX_CELL = 60
QUERIES = ("SELECT",)  # statement types that only read
LISTING_TRIES = 5
_GONE = re.compile(r"No files found that match|No such file or directory")


class DamagedPartWarning(UserWarning):
    """A committed part the views could not read and left out."""


class NotAQuery(ValueError):
    """SQL the warehouse does not run: a statement that is not a query, or more than one."""


def connect(root: str | os.PathLike[str]) -> duckdb.DuckDBPyConnection:
    """Open an in-memory connection with one view per warehouse table.

    Args:
        root: the data folder. It is only read; a missing folder gives empty views.

    Returns:
        A connection for this caller alone (use ``con.cursor()`` per thread).
    """
    con = duckdb.connect(":memory:")
    refresh_views(con, root)
    _confine(con, Path(root))
    return con


def _confine(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """No file outside ``root``, no extension, no setting changed after this. DuckDB checks the
    escaped pattern of a part as well as the file it names, so both spellings are allowed."""
    folder = root.resolve().as_posix().rstrip("/") + "/"
    allowed = dict.fromkeys([folder, _glob_escape(folder)])
    con.execute(f"SET allowed_directories = [{', '.join(map(_literal, allowed))}]")
    for setting in (
        "temp_directory = ''",  # no spill folder: DuckDB adds it to the allowed ones
        "enable_external_access = false",
        "autoinstall_known_extensions = false",
        "autoload_known_extensions = false",
        "lock_configuration = true",
    ):
        con.execute(f"SET {setting}")


def check_query(sql: str) -> None:
    """Raise :class:`NotAQuery` unless ``sql`` is one statement that only reads (a syntax error
    is left to DuckDB to report when it runs)."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error:
        return
    if len(statements) != 1:
        raise NotAQuery(f"one statement at a time, not {len(statements)}")
    kind = statements[0].type.name
    if kind not in QUERIES:
        raise NotAQuery(
            f"{kind} statements are refused: the warehouse is read-only here (SELECT, DESCRIBE, "
            "SUMMARIZE and SHOW run)"
        )


def refresh_views(con: duckdb.DuckDBPyConnection, root: str | os.PathLike[str]) -> None:
    """(Re)create the views over the parts committed now; a commit published later is seen
    after the next refresh (every ``connect`` does one)."""
    root = Path(root).resolve()
    for attempt in range(LISTING_TRIES):
        listing = list_parts(root)
        last = attempt == LISTING_TRIES - 1
        if all(_create_view(con, spec, listing, last) for spec in TABLES.values()):
            break
    for name, sql in metric_views().items():
        con.execute(f"CREATE OR REPLACE VIEW {_ident(name)} AS {sql}")


def metric_views() -> dict[str, str]:
    """The corpus metric views of ``metrics.sql`` (``-- view: <name>`` blocks), one per family:
    breadth, state categories, chain operations, query coverage, task length, scenario kinds,
    duplicates. They read the table views, so they see what those see."""
    text = resources.files("envmill.warehouse").joinpath("metrics.sql").read_text("utf-8")
    has_kind = "kind" in TABLES["scenarios"].columns
    fills = {
        "{scenario_kind}": "kind" if has_kind else "CAST(NULL AS VARCHAR)",
        "{measures}": ", ".join(f"({_literal(k)}, {_literal(m)})" for m, k in MEASURES.items()),
    }
    for placeholder, value in fills.items():
        text = text.replace(placeholder, value)
    blocks = re.split(r"^-- view: *(\w+) *$", text, flags=re.MULTILINE)
    return {
        name: body.strip().rstrip(";")
        for name, body in zip(blocks[1::2], blocks[2::2], strict=True)
    }


@dataclass
class Listing:
    """The committed parts of every table, and whether a compaction may have rows on disk twice
    (its marker was there while they were listed)."""

    parts: dict[str, list[Path]]
    compacting: bool


def list_parts(root: Path) -> Listing:
    """The committed parts of every table, as one consistent listing: if a compaction published
    while the tables were listed, a part it merged may be missing from the listing while the
    merged part is not in it yet, so the tables are listed again."""
    parts: dict[str, list[Path]] = {}
    compacting = False
    for _ in range(LISTING_TRIES):
        compacting = (root / COMPACTING).exists()
        keys = committed_keys(root)
        parts = {name: visible_parts(root, name, keys) for name in TABLES}
        compacting = compacting or (root / COMPACTING).exists()
        if not any(key.startswith(COMPACTION_PREFIX) for key in committed_keys(root) - keys):
            break
    return Listing(parts, compacting)


def _create_view(
    con: duckdb.DuckDBPyConnection, spec: TableSpec, listing: Listing, last: bool
) -> bool:
    """Create one view; False if a listed part is gone (a compaction or a retraction deleted
    it since the listing), unless this is the ``last`` try: then it is left out."""
    empty_name = f"_empty_{spec.name}"
    con.register(empty_name, spec.empty_table())
    parts = listing.parts[spec.name]
    try:
        con.execute(view_sql(spec, parts, empty_name, listing.compacting))
        return True
    except duckdb.Error:  # a part gone, or damaged: the table reads without it
        present = [part for part in parts if part.exists()]
        if len(present) < len(parts) and not last:
            return False
        con.execute(view_sql(spec, _readable(spec, present), empty_name, listing.compacting))
        return True


def _readable(spec: TableSpec, parts: list[Path]) -> list[Path]:
    """The parts whose footer reads and whose columns belong to the table; each one left out is
    a :class:`DamagedPartWarning` that says how to mend the folder."""
    kept = []
    for part in parts:
        try:
            names = set(pq.read_schema(part).names)
        except (OSError, pa.ArrowException) as exc:
            problem = f"unreadable ({' '.join(str(exc).split())[:120]})"
        else:
            foreign = sorted(names - set(spec.columns))
            if not foreign:
                kept.append(part)
                continue
            problem = f"has columns the table does not: {', '.join(foreign[:3])}"
        warnings.warn(
            f"{spec.name}/{part.name} left out: {problem}; `envmill verify --repair` retracts "
            "its batch and the next run makes it again",
            DamagedPartWarning,
            stacklevel=2,
        )
    return kept


def view_sql(spec: TableSpec, parts: list[Path], empty_name: str, compacting: bool = True) -> str:
    """SQL of one view: the parts (if any) unioned by name with a typed empty table, one row per
    key.

    The union with the empty table pins every column and type of the schema, so a part written
    before a column existed still reads, and queries on a table without parts return zero rows.
    Part paths are escaped: DuckDB reads each as a glob, and a folder named ``data[1]`` must not
    match ``data1``.

    Parts of compactions hold one row per key and share no key with each other, except while a
    compaction deletes what it merged (``compacting``: its marker is there). Otherwise only the
    keys of the other parts are ranked (:func:`rank_order`, with the compacted rows of those
    keys), and the other compacted rows are read as they are: ranking a million rows took most
    of every query's time.
    """
    cols = ", ".join(_ident(c) for c in spec.columns)
    key = ", ".join(_ident(k) for k in spec.key)
    view = f"CREATE OR REPLACE VIEW {_ident(spec.name)} AS "
    ranked = f"QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY {rank_order(spec)}) = 1"
    compacted = [p for p in parts if p.name.startswith(PART_PREFIX + COMPACTION_PREFIX)]
    if compacting or not compacted:
        return f"{view}SELECT {cols} FROM ({parts_source(parts, empty_name)}) {ranked}"
    merged = parts_source(compacted, empty_name)
    others = [p for p in parts if not p.name.startswith(PART_PREFIX + COMPACTION_PREFIX)]
    if not others:
        return f"{view}SELECT {cols} FROM ({merged})"
    rest = parts_source(others, empty_name)
    keys = f"(SELECT {key} FROM ({rest}))"
    return (
        f"{view}SELECT {cols} FROM ({merged}) ANTI JOIN {keys} USING ({key}) UNION ALL BY NAME "
        f"SELECT {cols} FROM (SELECT * FROM ({merged}) SEMI JOIN {keys} USING ({key}) "
        f"UNION ALL BY NAME {rest}) {ranked}"
    )


def parts_source(
    parts: list[Path], empty_name: str, row_numbers: bool = False, by_name: bool = True
) -> str:
    """The rows of ``parts`` with their ``filename`` (and ``file_row_number``), unioned by name
    with the typed empty table ``empty_name``. ``by_name=False`` takes the columns of the first
    part for all (DuckDB then refuses a part that lacks one; it reads every footer first
    otherwise, which costs memory by the thousand parts)."""
    extra = ", CAST(NULL AS BIGINT) AS file_row_number" if row_numbers else ""
    source = f"SELECT *, CAST(NULL AS VARCHAR) AS filename{extra} FROM {_ident(empty_name)}"
    if parts:
        files = ", ".join(_literal(_glob_escape(p.as_posix())) for p in parts)
        options = f"union_by_name={str(by_name).lower()}, filename=true, hive_partitioning=false"
        options += ", file_row_number=true" if row_numbers else ""
        source = f"SELECT * FROM read_parquet([{files}], {options}) UNION ALL BY NAME {source}"
    return source


def rank_order(spec: TableSpec) -> str:
    """How duplicate rows of one key rank, best first: the table's ``order_by``, then a row of a
    compaction's part (a compaction copies the best row, and its copy must win over the rows it
    merged while those are not deleted yet), then the file name, descending (of two compaction
    parts, the newer)."""
    merged = f"starts_with(parse_filename(filename), {_literal(PART_PREFIX + COMPACTION_PREFIX)})"
    return ", ".join(x for x in (spec.order_by, f"{merged} DESC", "filename DESC") if x)


def _glob_escape(path: str) -> str:
    return re.sub(r"([\[*?])", r"[\1]", path)


def query(
    root: str | os.PathLike[str], sql: str, params: list[Any] | dict[str, Any] | None = None
) -> pa.Table:
    """Run one SQL query over the warehouse views and return its rows as an Arrow table."""
    con = connect(root)
    try:
        return _reading_again(con, root, lambda: run_sql(con, sql, params))
    finally:
        con.close()


def _reading_again(
    con: duckdb.DuckDBPyConnection, root: str | os.PathLike[str], read: Callable[[], Any]
) -> Any:
    """``read()``; if a part the views listed is gone (a compaction merged it meanwhile: its rows
    are in a part committed before it was deleted), list the parts again and read once more."""
    try:
        return read()
    except duckdb.IOException as exc:
        if not _GONE.search(str(exc)):
            raise
    refresh_views(con, root)
    return read()


def run_sql(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | dict[str, Any] | None = None
) -> pa.Table:
    """One query's rows (:func:`check_query` first). DuckDB 2.0: relations have no
    fetchone()/arrow() tables any more; use to_arrow_table()."""
    check_query(sql)
    relation = con.sql(sql, params=params) if params else con.sql(sql)
    return relation.to_arrow_table() if relation is not None else pa.table({})


def load_stats_queries() -> dict[str, str]:
    """Named queries of ``stats.sql``: each block starts with a ``-- name: <name>`` line."""
    text = resources.files("envmill.warehouse").joinpath("stats.sql").read_text(encoding="utf-8")
    blocks = re.split(r"^-- name: *(\w+) *$", text, flags=re.MULTILINE)
    return {name: body.strip() for name, body in zip(blocks[1::2], blocks[2::2], strict=True)}


def corpus_stats(root: str | os.PathLike[str]) -> dict[str, pa.Table]:
    """Run every named statistics query of ``stats.sql``; the funnel's gate order is GATES."""
    con = connect(root)
    try:
        gates = pa.table({"ord": list(range(1, len(GATES) + 1)), "gate": list(GATES)})
        con.register("gate_order", gates)
        queries = load_stats_queries()
        results = _reading_again(
            con, root, lambda: {name: run_sql(con, sql) for name, sql in queries.items()}
        )
        tasks = _reading_again(con, root, lambda: run_sql(con, CERTIFIED_TASKS))
        return results | {"lexical_diversity": lexical_diversity(tasks["task"].to_pylist())}
    finally:
        con.close()


CERTIFIED_TASKS = "SELECT task FROM scenarios WHERE status = 'certified' ORDER BY scenario_id"


def lexical_diversity(tasks: list[str]) -> pa.Table:
    """distinct-n of certified tasks at the report's fixed token budget (``report_diversity``):
    one row per n, with the tokens read, so two corpora compare at the same budget."""
    result = distinct_n(tasks)
    return pa.table(
        {
            "n": list(result.ratios),
            "distinct_ratio": [round(r, 4) for r in result.ratios.values()],
            "tokens": [result.tokens] * len(result.ratios),
            "budget": [result.budget] * len(result.ratios),
        }
    )


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def format_table(table: pa.Table, fmt: Format = "table") -> str:
    """Render query results for people (``table``) or scripts (``csv`` with a header, ``json``)."""
    if fmt == "csv":
        return _to_csv(table)
    if fmt == "json":
        return json.dumps(table.to_pylist(), default=_json_default, ensure_ascii=False, indent=2)
    if fmt == "table":
        return _to_grid(table)
    raise ValueError(f"unknown format {fmt!r}; use table, csv or json")


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _cell(value: Any) -> str:
    """Text of one cell as csv and the grid show it: empty for NULL, ISO 8601 for times."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | dict):
        return json.dumps(value, default=_json_default, ensure_ascii=False)
    return str(value)


def _to_csv(table: pa.Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.column_names)
    for row in table.to_pylist():
        writer.writerow([_cell(row[c]) for c in table.column_names])
    return buffer.getvalue()


def _clip(text: str) -> str:
    text = " ".join(text.split()) if "\n" in text else text
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _to_grid(table: pa.Table) -> str:
    """A plain text grid (long cells clipped); numbers right-aligned so columns read at a glance."""
    names = table.column_names
    rows = [[_clip(_cell(r[c])) for c in names] for r in table.to_pylist()]
    widths = [max([len(n)] + [len(r[i]) for r in rows]) for i, n in enumerate(names)]
    numeric = [pa.types.is_integer(t) or pa.types.is_floating(t) for t in table.schema.types]

    def line(cells: list[str]) -> str:
        cols = zip(cells, widths, numeric, strict=True)
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in cols]
        return " | ".join(parts).rstrip()

    out = [line(names), "-+-".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    out.append(f"({table.num_rows} row{'s' if table.num_rows != 1 else ''})")
    return "\n".join(out)
