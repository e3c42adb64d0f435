"""Hashed shingles kept in the data folder between dedupe passes (``_dedupe/``).

A run's pass compares its new items with the whole corpus, so without this every run shingled
every environment and scenario ever made again (about 40 ms an environment: minutes a run for a
large folder). Entries are keyed by the measure and a digest of the exact input (``detect.py``),
and kept in a folder named after the code that shingles (``detect.shingling_version``): a release
that shingles otherwise starts a new folder, and the old one is removed.

Each pass adds one Parquet file, written whole and renamed into place; a file that cannot be
read is skipped (its items are shingled again); past ``MAX_FILES`` files they are merged into
one. Only one measure's entries are held in memory at a time, as the pass compares them. It is
a cache: a pass that cannot save it says so and loses nothing else. Only the folder's lock
holder writes here (a run or ``envmill dedupe``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

FOLDER = "_dedupe"
MAX_FILES = 16
SCHEMA = pa.schema(
    [("measure", pa.string()), ("key", pa.string()), ("hashes", pa.list_(pa.uint32()))]
)


class StoredHashMemo:
    """``detect.HashMemo`` over the data folder ``root``: what earlier passes hashed with the
    shingling code ``version``, plus what this one adds (written by :meth:`save`)."""

    def __init__(self, root: Path, version: str) -> None:
        self.home = root / FOLDER
        self.folder = self.home / _safe(version)
        self.measure: str | None = None
        self.known: dict[str, frozenset[int]] = {}  # the current measure's only
        self.added: dict[str, frozenset[int]] = {}

    def get(self, key: str) -> frozenset[int] | None:
        measure = key.split(":", 1)[0]
        if measure != self.measure:
            self.known = {}  # the last measure's are compared already: freed before reading
            self.measure, self.known = measure, _read(self._files(), measure)
        found = self.known.get(key)
        return self.added.get(key) if found is None else found

    def put(self, key: str, hashes: frozenset[int]) -> None:
        self.added[key] = hashes

    def save(self, name: str) -> str | None:
        """Keep what this pass hashed, as the file ``name``, merging the files past the cap;
        why it could not, else None (nothing else depends on it)."""
        if not self.added:
            return None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            _write(self.folder / f"{_safe(name)}.parquet", _table(self.added))
            self._tidy(name)
        except (OSError, pa.ArrowException) as exc:
            return f"the dedupe cache was not saved: {exc}"
        return None

    def _files(self) -> list[Path]:
        """The memo's files: regular files only (a directory named like one is not)."""
        if not self.folder.is_dir():
            return []
        found = self.folder.glob("*.parquet")
        return sorted(p for p in found if p.is_file() and not p.is_symlink())

    def _tidy(self, name: str) -> None:
        """Merge the files past the cap; drop other versions' folders and killed writes."""
        for other in self.home.iterdir():
            if other != self.folder and other.is_dir() and not other.is_symlink():
                shutil.rmtree(other, ignore_errors=True)
        for partial in self.folder.glob(".*.partial"):
            partial.unlink(missing_ok=True)
        files = self._files()
        if len(files) > MAX_FILES:
            merged = self.folder / f"merged-{_safe(name)}.parquet"
            tables = [t for t in map(_table_of, files) if t is not None]
            _write(merged, pa.concat_tables(tables))
            for old in files:
                if old != merged:
                    old.unlink(missing_ok=True)


def _read(files: list[Path], measure: str) -> dict[str, frozenset[int]]:
    known: dict[str, frozenset[int]] = {}
    for path in files:
        table = _table_of(path)
        if table is None:
            continue
        table = table.filter(pc.field("measure") == measure)
        for key, hashes in zip(table["key"].to_pylist(), table["hashes"].to_pylist(), strict=True):
            if key is not None and hashes is not None:
                known[key] = frozenset(hashes)
    return known


def _table_of(path: Path) -> pa.Table | None:
    try:
        return pq.read_table(path, schema=SCHEMA)
    except (OSError, pa.ArrowException):  # damaged or another schema: shingled again
        return None


def _table(entries: dict[str, frozenset[int]]) -> pa.Table:
    return pa.table(
        {
            "measure": [key.split(":", 1)[0] for key in entries],
            "key": list(entries),
            "hashes": [sorted(h) for h in entries.values()],
        },
        schema=SCHEMA,
    )


def _write(path: Path, table: pa.Table) -> None:
    partial = path.with_name(f".{path.name}.partial")
    pq.write_table(table, partial)
    os.replace(partial, path)  # whole or not at all: a killed pass leaves no half file


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
