"""Temp folders named after the process that owns them, so a later run can tell a leftover.

A process killed by SIGKILL removes nothing. Every temp folder envmill creates is therefore
``envmill-<kind>-<pid>-t<start>-<random>``: the owner's pid and its start time (clock ticks since
boot, from ``/proc``), which together name one process even after the pid is reused. The next
run removes the folders whose owner is gone (``flows/runtime/leftovers.py``); a folder whose owner
still runs, or whose owner cannot be checked, is kept.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

PREFIX = "envmill-"
# Only these kinds are envmill's: a folder of the user's that happens to read like one
# (``envmill-data-2026-12-01``) is never taken for a leftover.
KINDS = ("sandbox", "llm-gate", "dask", "forkserver")
# Where a folder holding a Unix socket goes when the temp dir is too deep for one (a socket
# path has at most 107 bytes).
SHORT_TEMP = "/tmp"
# the start time is optional: a name with the pid alone is understood too
_OWNED = re.compile(rf"^envmill-(?P<kind>{'|'.join(KINDS)})-(?P<pid>\d+)-(?:t(?P<start>\d+)-)?")


@dataclass(frozen=True)
class FolderOwner:
    """Who made an owned temp folder: ``start`` is None when the name carries the pid alone."""

    kind: str
    pid: int
    start: int | None = None


def process_start(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot, or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    try:
        return int(fields[19])  # field 22 of proc(5); the split starts at field 3
    except (IndexError, ValueError):
        return None


def owned_tempdir(kind: str, parent: str | None = None) -> str:
    """Create (mode 0700, as ``mkdtemp``) a temp folder owned by this process; its path."""
    if kind not in KINDS:
        raise ValueError(f"unknown temp folder kind {kind!r}")
    start = process_start(os.getpid())
    stamp = f"t{start}-" if start is not None else ""
    return tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{os.getpid()}-{stamp}", dir=parent)


def folder_owner(name: str) -> FolderOwner | None:
    """The owner a folder name records, or None for a name envmill did not give."""
    match = _OWNED.match(name)
    if match is None:
        return None
    start = match["start"]
    return FolderOwner(match["kind"], int(match["pid"]), int(start) if start else None)


def owner_alive(pid: int, start: int | None = None) -> bool:
    """Whether process ``pid`` (started at ``start``, when given) still runs. In doubt, yes."""
    if pid <= 0:
        return True  # not a pid of a process: never a reason to remove anything
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    if start is None:
        return True
    now = process_start(pid)
    return now is None or now == start  # another start time: the pid was reused


def owned_folders(parent: str | Path | None = None) -> list[tuple[Path, FolderOwner]]:
    """This user's envmill temp folders directly in ``parent`` (the temp dir by default)."""
    base = Path(parent or tempfile.gettempdir())
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    found = []
    for entry in entries:
        owner = folder_owner(entry.name) if entry.name.startswith(PREFIX) else None
        if owner is not None and _is_own_folder(entry):
            found.append((base / entry.name, owner))
    return found


def _is_own_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return (
            entry.is_dir(follow_symlinks=False)
            and entry.stat(follow_symlinks=False).st_uid == os.geteuid()
        )
    except OSError:
        return False
