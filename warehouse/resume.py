"""What a rerun may skip: the items of published batches whose parts are still what was written.

A batch is trusted only after its parts are checked against its commit record (present, same
size, same SHA-256, or merged into a compaction whose part checks out). A batch that fails the
check is retracted on the spot, so its items are made again instead of being skipped forever.
Batch-failure records whose items are all made since are retracted too: a successful rerun
leaves no failure rows for work it did.

Compaction is per table: a compaction commit has one part, of one table, and ``absorbed`` names
the commits whose parts *of that table* it merged (``absorbed_parts`` their SHA-256 then). So a
batch with parts in four tables is absorbed by four compaction commits, one per table, and a part
written later under an absorbed key (a batch retracted and made again) is not theirs.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from envmill.schemas.tables import TABLES
from envmill.warehouse.commits import (
    Commit,
    DamagedRecord,
    committed_keys,
    part_name,
    part_problem,
    read_commit,
    retract,
)


class CommitIndex:
    """Every published commit of a folder, read once; damaged records are listed, not raised."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.commits: dict[str, Commit] = {}
        self.unreadable: list[str] = []  # keys whose record could not be read
        for key in sorted(committed_keys(root)):
            try:
                commit = read_commit(root, key)
            except DamagedRecord:
                self.unreadable.append(key)
                continue
            if commit is not None:
                self.commits[key] = commit
        # (absorbed key, table) → the commits whose part of that table claims its rows
        self._claims: dict[tuple[str, str], list[str]] = defaultdict(list)
        for key, commit in self.commits.items():
            for absorbed in commit.absorbed:
                for table in commit.parts:
                    self._claims[absorbed, table].append(key)
        self._problems: dict[str, list[str]] = {}
        self._merged: set[tuple[str, str]] = set()  # parts whose rows a compaction holds

    def absorbers(self, key: str, table: str) -> list[str]:
        """The published commits holding the rows of ``key``'s part of ``table``: compactions
        of that table that merged this very part (the SHA-256 its record lists now)."""
        info = self.commits[key].parts.get(table) if key in self.commits else None
        if info is None:
            return []
        return [
            merged
            for merged in self._claims.get((key, table), [])
            if merged != key
            and merged in self.commits
            and self.commits[merged].kind == "compaction"
            and table in self.commits[merged].parts
            and self.commits[merged].absorbed_parts.get(key, info.sha256) == info.sha256
        ]

    def problems(self, key: str) -> list[str]:
        """Why commit ``key``'s parts are not what its record says (empty when they are)."""
        if key not in self._problems:
            self._problems[key] = [f"{key} is absorbed by a commit it absorbs"]  # a cycle
            self._problems[key] = self._check(key)
        return self._problems[key]

    def merged(self, key: str, table: str) -> bool:
        """Whether ``key``'s part of ``table`` is gone or damaged but a compaction that checks
        out holds its rows (so the part itself is neither read nor checked)."""
        self.problems(key)
        return (key, table) in self._merged

    def _check(self, key: str) -> list[str]:
        commit = self.commits[key]
        found = [  # a part the record does not list would be read all the same
            f"{table}/{part_name(key)} is there but its commit does not list it"
            for table in TABLES
            if table not in commit.parts and (self.root / table / part_name(key)).is_file()
        ]
        for table, info in commit.parts.items():
            problem = part_problem(self.root, table, info)
            if problem is None:
                continue
            absorbers = self.absorbers(key, table)
            reports = [self.problems(merged) for merged in absorbers]
            if absorbers and not all(reports):
                self._merged.add((key, table))  # one intact copy of the rows is enough
            elif absorbers:
                found += [f"(merged) {p}" for p in reports[0]]
            else:
                found.append(problem)
        return found

    def leftovers(self, intact_only: bool = True) -> list[tuple[str, str, str]]:
        """What a compaction cut short between publishing and deleting left behind, as
        ``(key, table, compaction key)``: a merged part still on disk, or the record of a merged
        compaction. Only compactions whose own part checks out count, unless not
        ``intact_only``."""
        listings: dict[str, set[str]] = {}
        found = []
        for merged, commit in self.commits.items():
            for key in commit.absorbed:
                for table in commit.parts:
                    if key == merged or merged not in self.absorbers(key, table):
                        continue
                    names = listings.setdefault(table, _listing(self.root / table))
                    still_there = self.commits[key].parts[table].file in names
                    if (still_there or self.commits[key].kind == "compaction") and not (
                        intact_only and self.problems(merged)
                    ):
                        found.append((key, table, merged))
        return found

    def drop_merged(self, key: str, table: str) -> None:
        """Delete what a compaction merged: the part of a batch (its record stays: it names the
        items, and the compaction holds the rows), a merged compaction entirely."""
        commit = self.commits[key]
        if commit.kind == "compaction":
            retract(self.root, key, list(commit.parts))
            del self.commits[key]
        else:
            (self.root / table / commit.parts[table].file).unlink(missing_ok=True)


def _listing(folder: Path) -> set[str]:
    try:
        with os.scandir(folder) as entries:
            return {entry.name for entry in entries}
    except FileNotFoundError:
        return set()


class FinishedItems:
    """The item keys a rerun skips: ``item in finished`` checks the batch that made it first."""

    def __init__(self, root: Path, index: CommitIndex | None = None) -> None:
        self.root = root
        self.index = index or CommitIndex(root)
        self.redone: list[str] = []  # one line per batch found damaged and retracted
        self._by_item = {
            item: key
            for key, commit in self.index.commits.items()
            if commit.kind == "batch"
            for item in commit.items
        }

    def __contains__(self, item: object) -> bool:
        key = self._by_item.get(item) if isinstance(item, str) else None
        if key is None:
            return False
        problems = self.index.problems(key)
        if problems:
            self._retract(key, problems[0])
            return False
        return True

    def _retract(self, key: str, reason: str) -> None:
        if key not in self.index.commits:
            return  # already retracted for another of its items
        retract(self.root, key, list(TABLES))
        commit = self.index.commits.pop(key)
        for item in commit.items:
            self._by_item.pop(item, None)
        self.redone.append(f"batch {key}: {reason}; its {len(commit.items)} item(s) are redone")


def retract_superseded_failures(root: Path) -> int:
    """Retract every batch-failure record all of whose items a published batch has made since."""
    index = CommitIndex(root)
    made = {item for c in index.commits.values() if c.kind == "batch" for item in c.items}
    superseded = [
        key
        for key, commit in index.commits.items()
        if commit.kind == "failure" and commit.items and set(commit.items) <= made
    ]
    for key in superseded:
        retract(root, key, list(TABLES))
    return len(superseded)
