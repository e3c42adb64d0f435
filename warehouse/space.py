"""A full disk, told as one line: detected in any exception chain, and refused before a run.

Kept free of heavy imports: the command line's error handler uses it for every command.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


class DiskFull(RuntimeError):
    """The disk under the data folder is full: nothing more can be written, so the run ends."""

    def __init__(self, root: Path, free_mb: float | None = None) -> None:
        free = "" if free_mb is None else f" ({free_mb:.0f} MB free)"
        super().__init__(
            f"the disk holding {root} is full{free}; finished batches are kept: free some "
            "space (or choose another --out) and rerun the same command to resume"
        )


FULL_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
MIN_FREE_MB = 64  # below this a run is refused before it starts


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` or anything in its chain is the kernel saying the disk is full."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, DiskFull) or (
            isinstance(exc, OSError) and exc.errno in FULL_DISK_ERRNOS
        ):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class TooLittleSpace(DiskFull):
    """Not enough room to start a run; nothing was written."""

    def __init__(self, root: Path, free_mb: float, need_mb: float) -> None:
        RuntimeError.__init__(
            self,
            f"only {free_mb:.0f} MB free on the disk holding {root} (a run needs {need_mb:.0f} MB "
            "to start); free some space or choose another --out",
        )


def check_free_space(root: Path, need_mb: float = MIN_FREE_MB) -> None:
    """Refuse to start on a disk with less than ``need_mb`` free (TooLittleSpace), before the
    folder is even created."""
    existing = next(p for p in (root, *root.parents) if p.exists())
    stats = os.statvfs(existing)
    free_mb = stats.f_bavail * stats.f_frsize / 2**20
    if free_mb < need_mb:
        raise TooLittleSpace(root, free_mb, need_mb)
