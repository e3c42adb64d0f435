"""``envmill compact``: merge each table's small parts into few large ones, every row committed
at every moment.

Per table, the small parts of batches and of earlier compactions are merged in chunks of up to
``Limits.rows`` rows or ``Limits.bytes`` bytes, each chunk into one part committed under a new key
``compact-<table>-<time>-<hash>`` (kind ``compaction``; ``absorbed`` names the commits whose parts
*of this table* it merged, ``absorbed_parts`` their SHA-256). Only once that record is published
are the merged parts deleted: a batch's part (its record stays: it names the items a rerun skips,
and ``CommitIndex`` finds the rows through ``absorbed``), a merged compaction whole. A crash in
between leaves rows twice, which the views read once (``rank_order`` prefers the merged copy) and
which the next ``compact``, ``run`` or ``verify --repair`` deletes. While a compaction runs, and
after one was cut short until that is finished, the marker ``_compacting`` tells readers that
compacted parts may share keys (otherwise they never do, and the views rank only the keys of the
other parts).

What is merged, and how:

- parts of ``batch`` and ``compaction`` commits only: a ``write`` part is replaced when its key is
  written again and a ``failure`` part retracted once its items are made, and merged, their old
  rows would stay visible;
- one row per key, the one the views show (same ranking, over every part of the table); a part
  that shares a key with a part that is not merged stays as it is, and a large part that shares a
  key with a small one is merged with it, so no key ever has rows both in and out of a merge;
- every part is checked against its record before it is read (a damaged part is refused, never
  laundered into a fresh hash); the merged part is streamed out of DuckDB under a memory limit,
  built with the table's schema, validated by its model a row group at a time, and its row count
  checked before it is published.

The caller holds the folder's lock.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from envmill.schemas.ids import sha256_hex
from envmill.schemas.tables import TABLES, TableSpec
from envmill.warehouse.commits import (
    COMPACTING,
    COMPACTION_PREFIX,
    PART_PREFIX,
    Commit,
    PartInfo,
    committed_keys,
    key_of_part,
    part_name,
    part_problem,
    publish,
)
from envmill.warehouse.merge import SPILL, PartsReader, open_connection
from envmill.warehouse.resume import CommitIndex
from envmill.warehouse.store import WarehouseError

MERGEABLE = ("batch", "compaction")


@dataclass(frozen=True)
class Limits:
    """How large a merged part grows, and how much memory DuckDB may use while merging."""

    rows: int = 1_000_000
    bytes: int = 256 * 2**20
    memory: str = "512MB"


@dataclass(frozen=True)
class Part:
    key: str  # its commit
    kind: str  # its commit's kind
    info: PartInfo


@dataclass
class TableReport:
    """One table before and after; ``problem`` says why it was left as it was."""

    table: str
    parts_before: int
    parts_after: int
    rows: int  # in the table's parts after (duplicates dropped)
    duplicates: int = 0  # rows dropped: a row of the same key ranked before them
    problem: str = ""

    def line(self) -> str:
        text = f"{self.table}: {self.parts_before} → {self.parts_after} parts, {self.rows} rows"
        if self.duplicates:
            text += f" ({self.duplicates} duplicate rows dropped)"
        return text + (f"; left as it was: {self.problem}" if self.problem else "")


@dataclass
class CompactReport:
    tables: list[TableReport] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)  # what an earlier compaction left behind
    seconds: float = 0.0


def compact(root: Path, limits: Limits | None = None) -> CompactReport:
    """Compact every table of the folder (the caller holds its lock)."""
    limits, started = limits or Limits(), time.perf_counter()
    marker, spill = root / COMPACTING, root / SPILL
    marker.touch()  # before anything is published: readers then rank every row
    index = CommitIndex(root)
    report = CompactReport(finished=finish_earlier(root, index))
    shutil.rmtree(spill, ignore_errors=True)
    try:
        report.tables = [_compact_table(root, index, spec, limits) for spec in TABLES.values()]
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    marker.unlink()  # not after a crash: what it merged may still be there
    report.seconds = time.perf_counter() - started
    return report


def finish_earlier(root: Path, index: CommitIndex) -> list[str]:
    """Finish what an earlier compaction cut short: delete the parts it merged and published,
    and the merged parts it never published (envmill's own copies of rows still committed)."""
    lines = []
    for key, table, merged in index.leftovers():
        index.drop_merged(key, table)
        lines.append(f"{table}: deleted what {merged} merged from {key}")
    keys = committed_keys(root)
    for table in TABLES:
        for path in sorted((root / table).glob(f"{PART_PREFIX}{COMPACTION_PREFIX}*")):
            if key_of_part(path.name) not in keys:  # also the temporary files of its writes
                path.unlink(missing_ok=True)
                lines.append(f"{table}: deleted {path.name}, of a compaction that did not finish")
    return lines


def _compact_table(root: Path, index: CommitIndex, spec: TableSpec, limits: Limits) -> TableReport:
    parts, problem = _table_parts(root, index, spec.name)
    rows = sum(part.info.rows for part in parts)
    report = TableReport(spec.name, len(parts), len(parts), rows, problem=problem)
    small = [p for p in parts if p.kind in MERGEABLE and _is_small(p.info, limits)]
    if problem or len(small) < 2:
        return report
    reader = PartsReader.open(open_connection(root / SPILL, limits.memory), root, spec)
    try:
        try:
            groups = reader.rank([part.info.file for part in parts])
        except duckdb.Error as exc:  # a part DuckDB cannot read: which one, if it is damaged
            report.problem = _first_problem(root, spec.name, parts) or _one_line(exc)
            return report
        merge = _merge_set(small, parts, groups)
        report.problem = _first_problem(root, spec.name, merge)
        if len(merge) >= 2 and not report.problem:
            _merge_chunks(reader, root, index, _chunks(merge, limits), report)
    except (duckdb.Error, WarehouseError) as exc:
        report.problem = _one_line(exc)
    finally:
        reader.close()
    return report


def _merge_chunks(
    reader: PartsReader,
    root: Path,
    index: CommitIndex,
    chunks: Iterator[list[Part]],
    report: TableReport,
) -> None:
    """Merge chunk by chunk: write the merged part, publish it, then delete what it merged."""
    for chunk in chunks:
        commit = _merge_chunk(reader, root, index, chunk)
        if commit is None:
            continue
        publish(root, commit)
        for part in chunk:
            index.drop_merged(part.key, reader.spec.name)
        report.parts_after -= len(chunk) - 1
        report.duplicates += commit.counts["duplicates"]
        report.rows -= commit.counts["duplicates"]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).splitlines()[0].split())[:300] if str(exc) else type(exc).__name__


def _is_small(info: PartInfo, limits: Limits) -> bool:
    return info.rows < limits.rows // 2 and info.bytes < limits.bytes // 2


def _table_parts(root: Path, index: CommitIndex, table: str) -> tuple[list[Part], str]:
    """The parts of ``table`` readers see, and why the table cannot be compacted now (a part
    missing that no compaction holds, a commit record that cannot be read)."""
    try:
        with os.scandir(root / table) as entries:
            names = {entry.name for entry in entries}
    except FileNotFoundError:
        names = set()
    unreadable_keys = set(index.unreadable)
    unreadable = sorted(key for name in names if (key := key_of_part(name)) in unreadable_keys)
    if unreadable:
        return [], f"the commit record of {unreadable[0]} is unreadable; run `envmill verify`"
    parts = []
    for key, commit in index.commits.items():
        info = commit.parts.get(table)
        if info is None:
            continue
        if info.file in names:
            parts.append(Part(key, commit.kind, info))
        elif not index.absorbers(key, table):
            return [], f"{table}/{info.file} is missing; run `envmill verify`"
    return sorted(parts, key=lambda p: p.info.file), ""


def _merge_set(small: list[Part], parts: list[Part], groups: list[list[str]]) -> list[Part]:
    """The small parts, with the parts they share keys with (transitively); a group that holds
    a part which is not merged (not of a batch or a compaction) stays as it is, whole."""
    by_file = {part.info.file: part for part in parts}
    parent = {name: name for name in by_file}

    def find(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for files in groups:
        for other in files[1:]:
            parent[find(other)] = find(files[0])
    components: dict[str, list[Part]] = {}
    for name, part in by_file.items():
        components.setdefault(find(name), []).append(part)
    small_files = {part.info.file for part in small}
    merge = [
        part
        for component in components.values()
        if any(p.info.file in small_files for p in component)
        and all(p.kind in MERGEABLE for p in component)
        for part in component
    ]
    return sorted(merge, key=lambda p: p.info.file)


def _first_problem(root: Path, table: str, merge: list[Part]) -> str:
    """Why a part to merge is not what its record says (hashing it), or ``""``."""
    for part in merge:
        problem = part_problem(root, table, part.info)
        if problem:
            return f"{problem}; run `envmill verify --repair` first"
    return ""


def _chunks(merge: list[Part], limits: Limits) -> Iterator[list[Part]]:
    chunk: list[Part] = []
    rows = size = 0
    for part in merge:
        if chunk and (rows + part.info.rows > limits.rows or size + part.info.bytes > limits.bytes):
            yield chunk
            chunk, rows, size = [], 0, 0
        chunk.append(part)
        rows, size = rows + part.info.rows, size + part.info.bytes
    if chunk:
        yield chunk


def _merge_chunk(
    reader: PartsReader, root: Path, index: CommitIndex, chunk: list[Part]
) -> Commit | None:
    """Write the chunk's rows (less the duplicates ranked after another row) as one part; its
    commit record, not yet published. None for a single part with nothing to drop."""
    table, files = reader.spec.name, [part.info.file for part in chunk]
    dropped = reader.dropped(files)
    if len(chunk) == 1 and not dropped:
        return None
    started = time.perf_counter()
    absorbed = _absorbed(index, table, chunk)
    key = _compaction_key(table, absorbed)
    expected = sum(part.info.rows for part in chunk) - dropped
    info = reader.write(files, root / table / part_name(key), expected)
    return Commit(
        key=key,
        kind="compaction",
        parts={table: info},
        absorbed=list(absorbed),
        absorbed_parts=absorbed,
        counts={"rows": info.rows, "parts": len(chunk), "duplicates": dropped},
        seconds={"compact": round(time.perf_counter() - started, 3)},
    )


def _absorbed(index: CommitIndex, table: str, chunk: list[Part]) -> dict[str, str]:
    """Commit key → SHA-256 of its part of ``table``, for every commit whose rows the merged
    part will hold: the chunk's own, and those the chunk's compactions hold (flattened, so a
    batch never depends on a chain of compactions), if their part is still that one."""
    absorbed = {}
    for part in chunk:
        absorbed[part.key] = part.info.sha256
        for key, sha in index.commits[part.key].absorbed_parts.items():
            info = index.commits[key].parts.get(table) if key in index.commits else None
            if info is not None and info.sha256 == sha:
                absorbed[key] = sha
    return absorbed


def _compaction_key(table: str, absorbed: dict[str, str]) -> str:
    """``compact-<table>-<time>-<hash>``: of two compactions' parts, the newer sorts last."""
    digest = sha256_hex(json.dumps(absorbed, sort_keys=True))[:8]
    return f"{COMPACTION_PREFIX}{table}-{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{digest}"
