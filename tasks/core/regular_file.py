"""Reading a file from a data folder without trusting what sits at its path.

Anyone who can write to a data folder can leave a named pipe where a cache entry belongs (a run
that opens it waits forever), a link to a 1 GiB file (read whole before it counts as a miss) or
to ``/dev/zero`` (read until memory runs out). A file envmill reads from a data folder is
therefore opened without following a final link and without blocking, checked to be a regular
file, and read only up to a size limit of its kind; anything else is :class:`UnreadableFile`,
which a cache takes as a miss and a command reports in one line.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MiB = 1 << 20
OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnreadableFile(OSError):
    """A path that is not a regular file of at most the size its kind allows."""


def read_regular(path: Path | str, limit: int) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them.

    Raises:
        UnreadableFile: a link, a pipe, a device or a folder sits there, or the file is larger
            than ``limit``; the message names the path.
        OSError: the path cannot be opened (missing, no permission).
    """
    try:
        handle = os.open(path, OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == getattr(os, "ELOOP", 40):  # O_NOFOLLOW met a link
            raise UnreadableFile(f"{path} is a link, not a file") from None
        raise
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(f"{path} is not a regular file")
        if info.st_size > limit:
            raise UnreadableFile(f"{path} is {info.st_size} bytes, over its {limit}-byte limit")
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(handle, min(left, MiB))):
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(handle)
    data = b"".join(chunks)
    if len(data) > limit:  # it grew while it was read
        raise UnreadableFile(f"{path} is over its {limit}-byte limit")
    return data
