"""Global limits on LLM requests: at most N in flight and a start pace, across every process.

A per-process semaphore would let W workers send W×N requests, so the cap lives outside the
process, behind one interface (:class:`CallLimits`) made by a :class:`Gate`:

* :func:`local_gate` (one machine), the default: N lock files held with ``flock``. The kernel
  drops a lock when its process dies, even by ``kill -9`` — a counter file would leak the
  slot. The RPM pace is a "next start time" in a flock-protected file. Whoever can write the
  folder can hold every slot, so it must be ours and writable by nobody else
  (:func:`private_folder`); without a folder of the caller's there is
  :func:`private_gate_dir`, never a predictable shared path.
* the Dask-wide gate lives with the cluster it spans (``envmill.flows.runtime.llm_gate``): the
  flows hand it to the client; ``tasks/`` never imports ``distributed``.

A process-local semaphore in front of a shared gate keeps waiting threads off it. Every wait
takes a timeout and ends in :class:`GateTimeout`.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import random
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from envmill.tasks.core.scratch import owned_tempdir


class GateTimeout(TimeoutError):
    """No slot (or start time) within the time the caller had left."""


class GateFolderError(ValueError):
    """The gate folder cannot be used: not a folder, not ours, or writable by others."""


def private_folder(path: Path) -> Path:
    """``path`` as a folder only this user can write (created 0700 when missing), else
    GateFolderError in one line."""
    path = Path(path)
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
    except OSError as exc:
        raise GateFolderError(f"LLM gate folder {path}: {exc.strerror or exc}") from None
    if info.st_uid != os.getuid():
        raise GateFolderError(f"LLM gate folder {path} belongs to another user ({info.st_uid})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        mode = stat.filemode(info.st_mode)
        raise GateFolderError(
            f"LLM gate folder {path} is writable by others ({mode}): run chmod go-w on it"
        )
    return path


_PRIVATE_GATE: list[Path] = []
_PRIVATE_GATE_LOCK = threading.Lock()


def private_gate_dir() -> Path:
    """This process's own gate folder (mkdtemp, 0700, removed at exit) for a client that has
    no data folder: its cap then holds in this process and the processes it ships clients to
    on this machine."""
    with _PRIVATE_GATE_LOCK:
        if not _PRIVATE_GATE:
            folder = Path(owned_tempdir("llm-gate"))  # a leftover of a kill -9 is reaped
            atexit.register(_remove_gate, folder, os.getpid())
            _PRIVATE_GATE.append(folder)
        return _PRIVATE_GATE[0]


def _remove_gate(folder: Path, owner: int) -> None:
    if os.getpid() == owner:  # not a forked child that inherited the exit hook
        shutil.rmtree(folder, ignore_errors=True)


class Slots(Protocol):
    def acquire(self, timeout: float | None) -> Any: ...
    def release(self, token: Any) -> None: ...


class Pacer(Protocol):
    def reserve(self, timeout: float | None) -> float:
        """Block until this request may start; returns the seconds waited."""
        ...


class CallLimits:
    """A concurrency slot and, when paced, a start time: ``with limits.slot(t) as waited: ...``."""

    def __init__(self, slots: Slots, pacer: Pacer | None = None, kind: str = "local") -> None:
        self.slots, self.pacer, self.kind = slots, pacer, kind

    @contextmanager
    def slot(self, timeout: float | None = None) -> Iterator[float]:
        """Hold one slot for the block; yields the seconds spent waiting (slot and pace)."""
        start = time.monotonic()
        token = self.slots.acquire(timeout)
        try:
            if self.pacer is not None:
                left = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
                self.pacer.reserve(left)
            yield time.monotonic() - start
        finally:
            self.slots.release(token)


class Remaining:
    """What is left of a timeout (None: no limit), for waits made of several steps."""

    def __init__(self, timeout: float | None) -> None:
        self.end = None if timeout is None else time.monotonic() + timeout

    def left(self) -> float | None:
        if self.end is None:
            return None
        return min(max(0.0, self.end - time.monotonic()), threading.TIMEOUT_MAX)


def _lock_within(descriptor: int, remaining: Remaining, what: str) -> None:
    """``flock`` the file within the time left; GateTimeout when someone holds it that long."""
    delay = 0.001
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            left = remaining.left()
            if left is not None and left <= 0:
                raise GateTimeout(f"{what} stayed locked past the deadline") from None
            time.sleep(delay if left is None else min(delay, left))
            delay = min(delay * 2, 0.02)


class LocalSlots:
    """``cap`` lock files in ``folder``; a slot is a held ``flock`` on one of them."""

    def __init__(self, folder: Path, cap: int) -> None:
        self.folder, self.cap = private_folder(Path(folder)), cap
        self._local = threading.BoundedSemaphore(cap)

    def acquire(self, timeout: float | None) -> int:
        remaining = Remaining(timeout)
        if not self._local.acquire(timeout=remaining.left()):
            raise GateTimeout(f"no LLM slot free within {timeout:.1f}s")
        try:
            return self._lock_one(remaining)
        except BaseException:
            self._local.release()
            raise

    def _lock_one(self, remaining: Remaining) -> int:
        delay = 0.001
        while True:
            offset = random.randrange(self.cap)
            for index in range(self.cap):
                path = self.folder / f"slot-{(offset + index) % self.cap:04d}.lock"
                descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(descriptor)
                    continue
                return descriptor
            left = remaining.left()
            if left is not None and left <= 0:
                raise GateTimeout("no LLM slot free in time")
            time.sleep(delay if left is None else min(delay, left))
            delay = min(delay * 2, 0.02)

    def release(self, token: int) -> None:
        try:
            fcntl.flock(token, fcntl.LOCK_UN)
            os.close(token)
        finally:
            self._local.release()


class LocalPacer:
    """Starts at least ``60 / rpm`` seconds apart, machine-wide, through one shared file."""

    def __init__(self, folder: Path, rpm: int, cap: int) -> None:
        self.path = private_folder(Path(folder)) / "pace"
        self.interval, self.cap = 60.0 / rpm, cap

    def reserve(self, timeout: float | None) -> float:
        with open(self.path, "a+", encoding="ascii") as handle:
            _lock_within(handle.fileno(), Remaining(timeout), "the RPM pace file")
            handle.seek(0)
            try:
                planned = float(handle.read() or 0)
            except ValueError:  # a torn or foreign file: start afresh
                planned = 0.0
            now = time.time()
            # Only slot holders reserve, so no honest plan lies more than cap intervals ahead;
            # a later one is a stale file or a clock jump.
            start = max(now, min(planned, now + self.interval * self.cap))
            if timeout is not None and start - now > timeout:
                raise GateTimeout(f"next LLM start in {start - now:.1f}s, past the deadline")
            handle.seek(0)
            handle.truncate()
            handle.write(repr(start + self.interval))
            handle.flush()
        time.sleep(max(0.0, start - now))
        return start - now


class Gate(Protocol):
    """Makes the limits of a client: ``cap`` requests in flight, ``rpm`` starts a minute (0: no
    pace), in ``folder`` (a local gate's) or under ``name`` (a run's shared gate's)."""

    def __call__(self, cap: int, rpm: int, folder: Path, name: str) -> CallLimits: ...


_SHARED: dict[tuple[Any, ...], CallLimits] = {}
_SHARED_LOCK = threading.Lock()


def shared_limits(key: tuple[Any, ...], make: Callable[[], CallLimits]) -> CallLimits:
    """One limits object per process and ``key`` (``make()`` the first time): every client of a
    process and configuration shares its process-local semaphore."""
    with _SHARED_LOCK:
        key = (os.getpid(), *key)
        if key not in _SHARED:
            _SHARED[key] = make()
        return _SHARED[key]


def local_gate(cap: int, rpm: int, folder: Path, name: str) -> CallLimits:
    """The machine-wide gate in ``folder`` (the :class:`Gate` a client has unless handed one)."""
    key = ("local", cap, rpm, str(folder), name)
    return shared_limits(key, lambda: local_limits(folder, cap, rpm))


def local_limits(folder: Path, cap: int, rpm: int = 0) -> CallLimits:
    """Slots in ``folder/slots`` and the pace file in ``folder`` (both must be private)."""
    pacer = LocalPacer(folder, rpm, cap) if rpm else None
    return CallLimits(LocalSlots(private_folder(Path(folder)) / "slots", cap), pacer, "local")
