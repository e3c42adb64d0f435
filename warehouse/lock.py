"""Who may write a data folder: one command at a time (a lock), and only while its run lives.

The lock is an exclusive ``flock`` on ``<root>/_lock``, so the kernel releases it when its holder
dies, however it dies; a second ``envmill run`` on the folder is refused at once with the
holder's pid and command instead of doing the same work again. Holding the lock also proves that
a ``running`` row left in ``runs`` belongs to a process that is gone.

A run's *permit* (``_active/<run_id>``) is what its worker processes ask before they write: the
run revokes it as soon as it is stopped, so batches finishing after that stay unpublished. The
permit names the run's process (pid and start time), so a worker that outlives a run killed
outright (kill -9 revokes nothing) stops publishing as well.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import psutil

from envmill.tasks.core.regular_file import MiB, read_regular

LOCK_FILE = "_lock"
PERMITS = "_active"

_held: dict[Path, int] = {}  # folder → nesting depth of this process's hold
_held_lock = threading.Lock()

NOTE_LIMIT = MiB  # who holds the folder, a run's permit: a pid and a time


class FolderBusy(RuntimeError):
    """Another process holds the folder; the message names it and says what to do."""


@contextmanager
def folder_lock(root: Path, command: str = "") -> Iterator[None]:
    """Hold the folder's lock for the block; re-entrant within one process (a flow started by a
    command that already holds it).

    Raises:
        FolderBusy: another process holds it.
    """
    root = root.absolute()
    with _held_lock:
        if root in _held:
            _held[root] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _held_lock:
                _held[root] -= 1
        return
    handle = _take(root, command)
    with _held_lock:
        _held[root] = 1
    try:
        yield
    finally:
        with _held_lock:
            del _held[root]
        handle.close()  # closing the descriptor releases the flock


def _take(root: Path, command: str):
    path = root / LOCK_FILE
    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115  (held for the block)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(path)
        handle.close()
        raise FolderBusy(
            f"{root} is in use by {holder}; wait for it to end or use another --out"
        ) from None
    handle.seek(0)
    handle.truncate()
    info = {"pid": os.getpid(), "command": command or " ".join(sys.argv[:2])}
    handle.write(json.dumps(info | {"since": datetime.now(UTC).isoformat(timespec="seconds")}))
    handle.flush()
    return handle


def _holder(path: Path) -> str:
    try:
        info = json.loads(read_regular(path, NOTE_LIMIT).decode("utf-8"))
        return f"pid {info['pid']} ({info.get('command') or 'envmill'}, since {info['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another envmill process"


def is_free(root: Path) -> bool:
    """Whether no other process holds the lock right now (this one holding it counts as free)."""
    root = root.absolute()
    with _held_lock:
        if root in _held:
            return True
    try:
        with open(root / LOCK_FILE, "a+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
    except BlockingIOError:
        return False
    except OSError:
        return False  # a folder we cannot open the lock of is not ours to settle


def permit_path(root: Path, run_id: str) -> Path:
    return root / PERMITS / run_id


def grant(root: Path, run_id: str) -> None:
    """Let ``run_id``'s workers write while this process lives; any other permit is from a run
    that is gone."""
    folder = root / PERMITS
    folder.mkdir(exist_ok=True)
    for stale in folder.iterdir():
        stale.unlink(missing_ok=True)
    permit_path(root, run_id).write_text(json.dumps([os.getpid(), _born(psutil.Process())]))


def revoke(root: Path, run_id: str) -> None:
    permit_path(root, run_id).unlink(missing_ok=True)


def may_write(root: Path, run_id: str) -> bool:
    """Whether the run still stands: its permit is there and the process it names still lives."""
    try:
        pid, started = json.loads(read_regular(permit_path(root, run_id), NOTE_LIMIT).decode())
        run = psutil.Process(pid)
        return _born(run) == started and run.status() != psutil.STATUS_ZOMBIE
    except (OSError, ValueError, TypeError, IndexError, psutil.Error):
        return False


def _born(process: psutil.Process) -> float:
    """When ``process`` started, in clock ticks since boot (``/proc/<pid>/stat``), which nothing
    moves: its start in wall-clock seconds is boot time plus that, and the kernel's boot time
    shifts by a second as the clock is adjusted, so a live run read as dead and its batches went
    unpublished without a word (CI, stop 43). Elsewhere, the start to the second."""
    try:
        stat = Path(f"/proc/{process.pid}/stat").read_text()
    except OSError:
        return float(round(process.create_time()))
    return float(stat.rsplit(")", 1)[1].split()[19])  # field 22, "starttime"
