"""What a rerun may skip: the items of published batches whose parts are still what was written.

A batch is trusted only after its parts are checked against its commit record (present, same
size, same SHA-256, or merged into a compaction whose part checks out). A batch that fails the
check is retracted on the spot, so its items are made again instead of being skipped forever.
Batch-failure records whose items are all made since are retracted too: a successful rerun
leaves no failure rows for work it did.
"""

from __future__ import annotations

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
        self.absorbed_by: dict[str, str] = {}
        for key in sorted(committed_keys(root)):
            try:
                commit = read_commit(root, key)
            except DamagedRecord:
                self.unreadable.append(key)
                continue
            if commit is not None:
                self.commits[key] = commit
                for absorbed in commit.absorbed:
                    self.absorbed_by[absorbed] = key
        self._problems: dict[str, list[str]] = {}

    def problems(self, key: str) -> list[str]:
        """Why commit ``key``'s parts are not what its record says (empty when they are)."""
        if key not in self._problems:
            self._problems[key] = self._check(key)
        return self._problems[key]

    def _check(self, key: str) -> list[str]:
        commit = self.commits[key]
        found = [  # a part the record does not list would be read all the same
            f"{table}/{part_name(key)} is there but its commit does not list it"
            for table in TABLES
            if table not in commit.parts and (self.root / table / part_name(key)).is_file()
        ]
        for table, info in commit.parts.items():
            problem = part_problem(self.root, table, info)
            merged_into = self.absorbed_by.get(key)
            merged = self.commits.get(merged_into) if merged_into != key else None
            if problem and merged and merged.kind == "compaction" and table in merged.parts:
                found += [f"(merged) {p}" for p in self.problems(merged_into)]
            elif problem:
                found.append(problem)
        return found


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
