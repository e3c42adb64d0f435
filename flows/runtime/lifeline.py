"""Run a command that must not outlive the process that started it, even by ``kill -9``.

Run as ``python -I -S lifeline.py WATCH_FD STARTER COMMAND...`` (by path, stdlib only), in a
session of its own. ``WATCH_FD`` is the read end of a pipe whose write end the starting process
holds: the kernel closes it however that process ends, so end of file here means it is gone, at
once. ``STARTER`` is that process's pid, for the case the pipe cannot tell: a child the starter
forked without exec (a library's, not ours) holds a copy of the write end and outlives it. So the
lifeline also ends when its parent is no longer the starter (the kernel reparents an orphan at
once). Either way it kills its whole process group (the command and whatever the command
started) and itself.

The command runs in a child forked from the lifeline's only thread, with ``PR_SET_PDEATHSIG``:
should the lifeline itself be killed, the kernel kills the command too. (The signal follows the
*thread* that forked, which is why the starting process, with threads of its own, does not
use it directly.) SIGTERM and SIGINT sent to the lifeline are passed on to the command; the
lifeline exits with the command's status once it ends.

Started by :func:`start_tied`, which returns the lifeline's ``Popen`` (its pid is the process
group's id) and the write end of the pipe (close it to let everything go at once).
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
from typing import Any

PR_SET_PDEATHSIG = 1
POLL_SECONDS = 0.2  # how soon the end of the command is noticed; the pipe wakes us at once


def start_tied(command: list[str], **popen: Any) -> tuple[Any, int]:
    """Start ``command`` under a lifeline in a new session; ``popen`` goes to ``Popen``
    (``env``, ``stdout``, ...). Returns the lifeline's ``Popen`` and the pipe's write end."""
    import subprocess  # not at the top: the lifeline itself does not need it

    watched, held = os.pipe()  # both close-on-exec: no other child inherits the write end
    try:
        process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                os.path.abspath(__file__),
                str(watched),
                str(os.getpid()),
                *command,
            ],  # fmt: skip
            start_new_session=True,
            pass_fds=[watched],
            **popen,
        )
    except BaseException:
        os.close(held)
        raise
    finally:
        os.close(watched)
    return process, held


def _start(command: list[str], watch_fd: int) -> int:
    lifeline = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(watch_fd)
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != lifeline:  # the lifeline died before the signal was armed
                os._exit(1)
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, signal.SIG_DFL)
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    return pid


def _status(wait_status: int) -> int:
    code = os.waitstatus_to_exitcode(wait_status)
    return code if code >= 0 else 128 - code


def _watch(child: int, watch_fd: int, starter: int) -> int:
    """Wait for the command to end (its exit status) or the starter to go (kill everything)."""
    while True:
        try:
            readable, _, _ = select.select([watch_fd], [], [], POLL_SECONDS)
        except InterruptedError:
            readable = []
        if (readable and not os.read(watch_fd, 1)) or os.getppid() != starter:
            os.killpg(os.getpgrp(), signal.SIGKILL)  # the command, its children, ourselves
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            return _status(status)


def main() -> None:
    watch_fd, starter, command = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    child = _start(command, watch_fd)

    def pass_on(signum: int, _frame: object) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, pass_on)
    sys.exit(_watch(child, watch_fd, starter))


if __name__ == "__main__":
    main()
