"""The Dask-wide LLM gate: the cap on requests in flight, and the start pace, across every worker
of a run.

It belongs with the cluster it spans, not in ``tasks/`` (which never imports ``distributed``):
the flows that fan out on Dask hand :func:`dask_gate` to the LLM client, whose copies on the
workers then share a ``distributed.Semaphore`` named after the run and the cap (its leases
expire with a dead worker) and, for the pace, a ``distributed.Lock`` held for one interval after
each start. Outside a worker, with no Dask client active, it is the machine-wide local gate.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import suppress
from pathlib import Path

from envmill.tasks.llm.limits import CallLimits, GateTimeout, Remaining, local_gate, shared_limits


class DaskSlots:
    """A ``distributed.Semaphore`` shared by every worker of the run."""

    def __init__(self, name: str, cap: int) -> None:
        from distributed import Semaphore

        self._semaphore = Semaphore(max_leases=cap, name=name)
        self._local = threading.BoundedSemaphore(cap)

    def acquire(self, timeout: float | None) -> None:
        remaining = Remaining(timeout)
        if not self._local.acquire(timeout=remaining.left()):
            raise GateTimeout(f"no LLM slot free within {timeout:.1f}s")
        try:
            if not self._semaphore.acquire(timeout=remaining.left()):
                raise GateTimeout("no LLM slot free in time")
        except BaseException:
            self._local.release()
            raise

    def release(self, token: None) -> None:
        try:
            self._semaphore.release()
        finally:
            self._local.release()


class DaskPacer:
    """Holding a cluster-wide lock for one interval after each start spaces the starts."""

    def __init__(self, name: str, rpm: int) -> None:
        from distributed import Lock

        self._lock = Lock(name)
        self.interval = 60.0 / rpm

    def reserve(self, timeout: float | None) -> float:
        start = time.monotonic()
        if not self._lock.acquire(timeout=timeout):
            raise GateTimeout("no LLM start time free in time")
        timer = threading.Timer(self.interval, self._lock.release)
        timer.daemon = True
        timer.start()
        return time.monotonic() - start


def in_dask() -> bool:
    """Inside a Dask worker, or with a Dask client active (never imports ``distributed``)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return False
    for probe in (distributed.get_worker, distributed.default_client):
        with suppress(ValueError):
            probe()
            return True
    return False


def dask_gate(cap: int, rpm: int, folder: Path, name: str) -> CallLimits:
    """The run's Dask-wide limits inside a worker or with a Dask client active, else the local
    gate in ``folder`` (a ``tasks.llm.limits.Gate``; one object per process and configuration).

    ``name`` names the Dask gate: the run id, or a name unique to one client and its copies.
    """
    if not in_dask():
        return local_gate(cap, rpm, folder, name)
    return shared_limits(("dask", cap, rpm, name), lambda: _dask_limits(cap, rpm, name))


def dask_gate_names(name: str, cap: int, rpm: int) -> tuple[str, str]:
    """The Semaphore's and the pace Lock's names: a semaphore keeps the cap it was made with,
    so two caps under one name would clash."""
    base = f"envmill-llm-{name}"
    return f"{base}-cap{cap}", f"{base}-rpm{rpm}-pace"


def _dask_limits(cap: int, rpm: int, name: str) -> CallLimits:
    slots_name, pace_name = dask_gate_names(name, cap, rpm)
    pacer = DaskPacer(pace_name, rpm) if rpm else None
    return CallLimits(DaskSlots(slots_name, cap), pacer, "dask")
