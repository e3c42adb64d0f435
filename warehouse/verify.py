"""``envmill verify``: every commit against its parts, every part against its table model, and
every file against the commits.

What it finds, and what ``--repair`` does with it:

- a commit record that cannot be read, or whose part is missing, resized, altered, unreadable or
  not of its table's model: the commit is retracted with all its parts, so the next ``envmill
  run`` makes its items again (they are no longer done);
- a file no commit lists (a batch a crash cut short, or a file put there by hand): it is moved
  to ``_quarantine/`` (never deleted: it may be someone's), and readers never read it anyway;
  an unlisted merged part of a compaction that never published (``part-compact-…``) is
  envmill's own copy of rows still in their parts, and is deleted;
- what a compaction cut short between publishing and deleting left behind (a part it merged, the
  record of a compaction it merged): readers see those rows twice, and the views keep one of
  them; deleted, as the compaction would have done, and then its marker (``_compacting``: while
  it is there, views rank every row, compacted or not);
- a temporary file of a write that died: deleted.

The part of a commit that a compaction merged is not checked itself: the compaction's part is.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from envmill.schemas.tables import TABLES
from envmill.warehouse.commits import (
    COMMITS,
    COMPACTING,
    COMPACTION_PREFIX,
    RECORD_SUFFIX,
    key_of_part,
    retract,
)
from envmill.warehouse.resume import CommitIndex
from envmill.warehouse.store import ROW_GROUP_SIZE, WarehouseError, spec_of, validate_table

QUARANTINE = "_quarantine"
TEMPORARY = ".tmp-"
LLM_CACHE = "_llm_cache"  # tasks/backends: each namespace its folder under it


@dataclass
class Finding:
    """One problem: where, what, and what a repair does (or did) about it."""

    path: str
    problem: str
    action: str
    # what the next command completes by itself (the sweep every run starts with): a
    # compaction that did not finish, a temporary file of a write that died; not damage
    repairable: bool = False

    def line(self) -> str:
        return f"{self.path}: {self.problem} ({self.action})"


@dataclass
class VerifyReport:
    findings: list[Finding] = field(default_factory=list)
    commits: int = 0
    parts: int = 0
    rows: int = 0
    redo_items: int = 0  # items no longer done after a repair: the next run makes them


def verify(root: Path, repair: bool = False) -> VerifyReport:
    """Check the folder (the caller holds its lock); with ``repair``, fix what is found."""
    report = VerifyReport()
    index = CommitIndex(root)
    for key, commit in list(index.commits.items()):
        report.commits += 1
        problems = [p for table in commit.parts if (p := _unknown_table(table))]
        problems = problems or index.problems(key)
        for table, info in commit.parts.items():
            if not problems and not index.merged(key, table):
                problems += _part_content(root, table, info.file, info.rows)
                report.parts += 1
                report.rows += info.rows
        if problems:
            report.findings.append(_bad_commit(root, key, "; ".join(problems), repair))
            report.redo_items += len(commit.items) if repair else 0
    report.findings += sweep(root, index, repair) + _sweep_cache(root, repair)
    return report


def sweep(root: Path, index: CommitIndex, repair: bool = True) -> list[Finding]:
    """What a folder should not hold: unreadable commit records (retracted), files no commit
    lists (moved aside), temporary files of writes that died (deleted), what a compaction cut
    short left behind (deleted). Cheap (listings; a part is hashed only if a compaction cut
    short claims to hold its rows), so every run starts with it."""
    findings = [
        _bad_commit(root, key, "commit record is unreadable", repair) for key in index.unreadable
    ]
    findings += _sweep_merged(root, index, repair)
    listed = {
        (table, info.file)
        for commit in index.commits.values()
        for table, info in commit.parts.items()
    }
    findings += _sweep_tables(root, listed, set(index.unreadable), repair)
    return findings + _sweep_records(root, repair)


def _unknown_table(table: str) -> str | None:
    return None if table in TABLES else f"lists a part of unknown table {table!r}"


def _sweep_merged(root: Path, index: CommitIndex, repair: bool) -> list[Finding]:
    findings = []
    for key, table, merged in index.leftovers():
        commit = index.commits[key]
        where = (
            f"{COMMITS}/{key}{RECORD_SUFFIX}"
            if commit.kind == "compaction"
            else f"{table}/{commit.parts[table].file}"
        )
        problem = f"already merged into {merged} (a compaction that did not finish)"
        if repair:
            index.drop_merged(key, table)
        action = "deleted" if repair else "would delete"
        findings.append(Finding(where, problem, action, repairable=True))
    marker = root / COMPACTING
    if marker.exists() and not (repair and index.leftovers(intact_only=False)):
        problem = "a compaction did not finish (until then, views rank every row of every table)"
        findings.append(_remove(marker, COMPACTING, problem, repair))
    return findings


def _part_content(root: Path, table: str, file: str, rows: int) -> list[str]:
    """Read the part a row group at a time (a compacted part holds up to a million rows) and
    hold it to its table: the schema, the model's checks, the row count."""
    spec, where = spec_of(table), f"{table}/{file}"
    try:
        with pq.ParquetFile(root / table / file) as parquet:
            if not _readable_layout(parquet.schema_arrow.remove_metadata(), spec.arrow_schema):
                return [f"{where} does not have the columns and types of table {table}"]
            read = 0
            for batch in parquet.iter_batches(batch_size=ROW_GROUP_SIZE):
                read += batch.num_rows
                validate_table(spec, _as_table(batch, spec.arrow_schema))
    except (OSError, pa.ArrowException) as exc:
        return [f"{where} is not readable Parquet ({_first_line(exc)})"]
    except WarehouseError as exc:
        return [f"{where} fails its table model: {exc}"]
    if read != rows:
        return [f"{where} has {read} rows, its commit recorded {rows}"]
    return []


def _readable_layout(found: pa.Schema, table: pa.Schema) -> bool:
    """The table's columns and types, or an older layout of them: a part written before a
    nullable column was added (format 2.1's answers, 2.2's warnings, 2.3's turns and labels)
    lacks only that column, which every reader takes as NULL; anything else is damage."""
    wanted = table.remove_metadata()
    if found.equals(wanted):
        return True
    missing = [f for f in wanted if f.name not in found.names]
    kept = pa.schema([f for f in wanted if f.name in found.names])
    return all(f.nullable for f in missing) and found.equals(kept)


def _as_table(batch: pa.RecordBatch, schema: pa.Schema) -> pa.Table:
    """A batch in the table's layout, a column it predates as NULLs."""
    columns = [
        batch.column(f.name) if f.name in batch.schema.names else pa.nulls(batch.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _bad_commit(root: Path, key: str, problem: str, repair: bool) -> Finding:
    action = "would retract the commit; the next run redoes its items"
    if repair:
        retract(root, key, list(TABLES))
        action = "retracted; the next run redoes its items"
    return Finding(f"{COMMITS}/{key}{RECORD_SUFFIX}", problem, action)


def _sweep_tables(
    root: Path, listed: set[tuple[str, str]], retracted: set[str], repair: bool
) -> list[Finding]:
    """Files no commit lists; the parts of a ``retracted`` commit go with its own finding."""
    findings = []
    for table in TABLES:
        folder = root / table
        if folder.is_symlink():  # never followed: it may lead out of the data folder
            findings.append(Finding(table, "is a link, not a folder: never read", "left alone"))
            continue
        if not folder.is_dir():
            continue
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            regular = entry.is_file(follow_symlinks=False)
            key = key_of_part(entry.name)
            if ((table, entry.name) in listed and regular) or key in retracted:
                continue
            findings.append(_unlisted(root, table, entry, regular, key or "", repair))
    return findings


def _unlisted(
    root: Path, table: str, entry: os.DirEntry, regular: bool, key: str, repair: bool
) -> Finding:
    """What to do with a file of a table folder that no commit lists."""
    where = f"{table}/{entry.name}"
    if regular and TEMPORARY in entry.name:
        problem = "temporary file of a write that did not finish"
        return _remove(Path(entry.path), where, problem, repair)
    if regular and key.startswith(COMPACTION_PREFIX):
        problem = "merged part of a compaction that did not publish (its rows are kept)"
        return _remove(Path(entry.path), where, problem, repair)
    if not regular:
        problem = "not a file envmill writes (a folder, a link, a pipe or a device)"
    elif key:
        problem = "part of a batch that never finished (no commit lists it)"
    else:
        problem = "not a file envmill writes (no commit lists it)"
    return _set_aside(root, table, entry.name, problem, repair)


def _sweep_records(root: Path, repair: bool) -> list[Finding]:
    folder = root / COMMITS
    if folder.is_symlink() or not folder.is_dir():
        return []
    findings = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        where = f"{COMMITS}/{entry.name}"
        regular = entry.is_file(follow_symlinks=False)
        if TEMPORARY in entry.name and regular:
            problem = "temporary commit record of a write that did not finish"
            findings.append(_remove(Path(entry.path), where, problem, repair))
        elif not regular or not entry.name.endswith(RECORD_SUFFIX):
            problem = "not a commit record"
            findings.append(_set_aside(root, COMMITS, entry.name, problem, repair))
    return findings


def _sweep_cache(root: Path, repair: bool) -> list[Finding]:
    """What the LLM cache holds that is no regular file (a pipe, a device, a link): every run
    reads it as a miss (``tasks/core/regular_file``); listed here, and set aside with repair,
    so an operator finds what someone left. Only ``verify`` walks the cache: a run does not."""
    findings, folders = [], [LLM_CACHE]
    while folders:
        folder = folders.pop()
        if (root / folder).is_symlink() or not (root / folder).is_dir():
            continue
        for entry in sorted(os.scandir(root / folder), key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                folders.append(f"{folder}/{entry.name}")
            elif not entry.is_file(follow_symlinks=False):
                problem = "not a regular file (a link, pipe or device): read as a cache miss"
                findings.append(_set_aside(root, folder, entry.name, problem, repair))
    return findings


def _remove(path: Path, where: str, problem: str, repair: bool) -> Finding:
    """Delete what only envmill's own unfinished work left (the next run would too)."""
    if repair:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return Finding(where, problem, "deleted" if repair else "would delete", repairable=True)


def _set_aside(root: Path, folder: str, name: str, problem: str, repair: bool) -> Finding:
    """Move a file (or folder, or link: never what it points to) to ``_quarantine/``, under a
    name of its own if one is there already: nothing set aside is ever overwritten."""
    target = root / QUARANTINE / folder / name
    if repair:
        target.parent.mkdir(parents=True, exist_ok=True)
        number = 1
        while target.exists() or target.is_symlink():
            number += 1
            target = target.with_name(f"{name}.{number}")
        os.rename(root / folder / name, target)
    moved = target.relative_to(root).as_posix()
    return Finding(
        f"{folder}/{name}", problem, f"moved to {moved}" if repair else "would move aside"
    )


def _first_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
