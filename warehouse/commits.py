"""Commits: how a set of Parquet parts becomes visible to readers all at once, or not at all.

A part ``<table>/part-<key>.parquet`` is visible exactly when the commit record
``_commits/<key>.json`` exists. Writing a batch is three steps: retract the key (its record, then
any part left by an earlier attempt), write every part, publish the record, which lists each part
with its row count, size and SHA-256. The record's rename is the one atomic step, so a reader sees
a whole batch or none of it, a crash between the steps leaves parts nobody reads (``envmill
verify --repair`` removes them), and a part that is damaged later is detected by its hash.

A record may also name the run items the batch covered (``items``), which is how a rerun knows
what is done whatever the batch size, and the commits a compaction absorbed (``absorbed``).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from envmill.schemas.tables import TABLES
from envmill.tasks.core.regular_file import MiB, read_regular

COMMITS = "_commits"  # not a table: views only list it
PART_PREFIX, PART_SUFFIX = "part-", ".parquet"
RECORD_SUFFIX = ".json"
# a record lists a batch's items and parts, a compaction's the parts it absorbed: far below this
RECORD_LIMIT = 64 * MiB
COMPACTION_PREFIX = "compact-"  # the keys of compaction commits, and only theirs
COMPACTING = "_compacting"  # exists while a compaction may have rows on disk twice


class PartInfo(BaseModel):
    """One written part, as its commit record remembers it."""

    file: str
    rows: int
    bytes: int
    sha256: str


class Commit(BaseModel):
    """What one commit made visible: parts by table, and what they stand for.

    ``kind`` is ``batch`` (a batch of run items), ``write`` (one table's rows, such as a run's
    own row), ``failure`` (items a batch could not make: not done, and superseded once they are)
    or ``compaction`` (one table's part, merged from the parts of that table of the ``absorbed``
    commits; ``absorbed_parts`` maps each of them to the SHA-256 its part had, so a part written
    later under the same key is never taken for the one merged).
    """

    key: str
    kind: str = "write"
    run_id: str = ""
    parts: dict[str, PartInfo] = Field(default_factory=dict)
    items: list[str] = Field(default_factory=list)
    absorbed: list[str] = Field(default_factory=list)
    absorbed_parts: dict[str, str] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    seconds: dict[str, float] = Field(default_factory=dict)


class DamagedRecord(ValueError):
    """A commit record that is not a readable record; the message names the file."""


def part_name(key: str) -> str:
    return f"{PART_PREFIX}{key}{PART_SUFFIX}"


def key_of_part(name: str) -> str | None:
    """The commit key a part file name carries, or None for a name envmill never writes."""
    if name.startswith(PART_PREFIX) and name.endswith(PART_SUFFIX):
        return name[len(PART_PREFIX) : -len(PART_SUFFIX)] or None
    return None


def record_path(root: Path, key: str) -> Path:
    return root / COMMITS / f"{key}{RECORD_SUFFIX}"


def committed_keys(root: Path) -> set[str]:
    """The keys of every published commit: one directory listing, no record is opened."""
    return {
        name[: -len(RECORD_SUFFIX)]
        for name in _files(root / COMMITS)
        if name.endswith(RECORD_SUFFIX)
    }


def _files(folder: Path) -> list[str]:
    """Names of the regular files in ``folder``: never a link (it could lead out of the data
    folder) and nothing in a folder that is itself a link."""
    if folder.is_symlink():
        return []
    try:
        with os.scandir(folder) as entries:
            return [e.name for e in entries if e.is_file(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def read_commit(root: Path, key: str) -> Commit | None:
    """The published record of ``key``; None when there is none; DamagedRecord when unreadable."""
    path = record_path(root, key)
    try:
        text = read_regular(path, RECORD_LIMIT).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise DamagedRecord(f"{path.name}: unreadable ({exc})") from exc
    try:
        commit = Commit.model_validate_json(text)
    except ValidationError as exc:
        raise DamagedRecord(f"{path.name}: not a commit record") from exc
    if commit.key != key:
        raise DamagedRecord(f"{path.name}: records key {commit.key!r}")
    for table, info in commit.parts.items():  # a record names only the parts readers read
        if table not in TABLES or info.file != part_name(key):
            raise DamagedRecord(f"{path.name}: lists {table}/{info.file}, not a part of it")
    return commit


def visible_parts(root: Path, table: str, keys: set[str] | None = None) -> list[Path]:
    """The parts of ``table`` readers see, in name order: those whose key is committed."""
    keys = committed_keys(root) if keys is None else keys
    names = sorted(name for name in _files(root / table) if key_of_part(name) in keys)
    return [root / table / name for name in names]


def retract(root: Path, key: str, tables: list[str]) -> None:
    """Unpublish ``key`` and remove its parts, so what is written next under it starts clean.
    Only files are removed: a folder or link in their place is left to ``verify`` to set aside."""
    for path in (record_path(root, key), *(root / t / part_name(key) for t in tables)):
        if path.is_file() or path.is_symlink():
            path.unlink(missing_ok=True)


def publish(root: Path, commit: Commit) -> None:
    """Write the record under a name of this writer's own, then rename it into place."""
    target = record_path(root, commit.key)
    target.parent.mkdir(exist_ok=True)
    temporary = target.with_name(f"{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        temporary.write_text(commit.model_dump_json(), encoding="utf-8")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def describe_part(path: Path, rows: int) -> PartInfo:
    return PartInfo(file=path.name, rows=rows, bytes=path.stat().st_size, sha256=file_sha256(path))


def part_problem(root: Path, table: str, info: PartInfo) -> str | None:
    """Why a committed part is not what its record says (missing, resized, altered), or None."""
    path = root / table / info.file
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return f"{table}/{info.file} is missing"
    if size != info.bytes:
        return f"{table}/{info.file} has {size} bytes, its commit recorded {info.bytes}"
    if file_sha256(path) != info.sha256:
        return f"{table}/{info.file} does not match its commit's SHA-256"
    return None
