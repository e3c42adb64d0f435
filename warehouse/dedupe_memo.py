"""Hashed shingles kept in the data folder between dedupe passes (``_dedupe/``).

A run's pass compares its new items with the whole corpus, so without this every run shingled
every environment and scenario ever made again (about 40 ms an environment: minutes a run for a
large folder). Entries are keyed by the measure and a digest of the exact input (``detect.py``),
and kept in a folder named after the code that shingles (its digest, from ``tasks/dedupe``): a
release that shingles otherwise starts a new folder instead of reading stale hashes.

Each pass adds one Parquet file, written whole and renamed into place; a file that cannot be
read is skipped (its items are shingled again). Past ``MAX_FILES`` files they are merged into
one. Only the folder's lock holder writes here (a run or ``envmill dedupe``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

FOLDER = "_dedupe"
MAX_FILES = 16
SCHEMA = pa.schema([("key", pa.string()), ("hashes", pa.list_(pa.uint32()))])


class StoredHashMemo:
    """``detect.HashMemo`` over the data folder ``root``: what earlier passes hashed with the
    shingling code ``version`` (``detect.shingling_version``), plus what this one adds (written
    by :meth:`save`)."""

    def __init__(self, root: Path, version: str) -> None:
        self.folder = root / FOLDER / _safe(version)
        self.known = _read(self.folder)
        self.added: dict[str, frozenset[int]] = {}

    def get(self, key: str) -> frozenset[int] | None:
        found = self.known.get(key)
        return self.added.get(key) if found is None else found

    def put(self, key: str, hashes: frozenset[int]) -> None:
        self.added[key] = hashes

    def save(self, name: str) -> None:
        """Keep what this pass hashed, as the file ``name``; merge the files past the cap."""
        if not self.added:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        _write(self.folder / f"{_safe(name)}.parquet", self.added)
        files = sorted(self.folder.glob("*.parquet"))
        if len(files) > MAX_FILES:
            merged = self.folder / f"merged-{_safe(name)}.parquet"
            _write(merged, {**self.known, **self.added})
            for old in files:
                if old != merged:
                    old.unlink(missing_ok=True)


def _read(folder: Path) -> dict[str, frozenset[int]]:
    known: dict[str, frozenset[int]] = {}
    for path in sorted(folder.glob("*.parquet")) if folder.is_dir() else []:
        try:
            table = pq.read_table(path, schema=SCHEMA)
        except (OSError, pa.ArrowException):  # damaged: its items are shingled again
            continue
        for key, hashes in zip(table["key"].to_pylist(), table["hashes"].to_pylist(), strict=True):
            if key is not None and hashes is not None:
                known[key] = frozenset(hashes)
    return known


def _write(path: Path, entries: dict[str, frozenset[int]]) -> None:
    table = pa.table(
        {"key": list(entries), "hashes": [sorted(h) for h in entries.values()]}, schema=SCHEMA
    )
    partial = path.with_name(f".{path.name}.partial")
    pq.write_table(table, partial)
    os.replace(partial, path)  # whole or not at all: a killed pass leaves no half file


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
