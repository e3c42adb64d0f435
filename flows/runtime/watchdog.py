"""A run that cannot make progress ends, in one line, instead of waiting forever.

Issue 24: a resumed LLM run sat for 8 minutes with no Dask worker alive and never finished;
nothing printed, nothing timed out. The fan-out asks the scheduler how many workers it has
every few seconds; when no batch has finished and no worker was alive (or the scheduler did not
answer) for ``stall_seconds``, the run ends with the cause. A local cluster's nannies start a
dead worker again by themselves, so a worker that dies and comes back is no stall.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PROBE_EVERY = 5.0  # seconds between two questions to the scheduler
PROBE_TIMEOUT = 10.0  # seconds the scheduler has to answer one

# how many workers the scheduler has; None where there is no scheduler to ask (a test runner)
WorkerCount = Callable[[], int | None]


class RunStalled(RuntimeError):
    """No batch finished and no worker was alive for the run's ``stall_seconds``."""


@dataclass
class Watch:
    """Watches a fan-out: ``progressed`` when a batch finishes, ``check`` while it waits."""

    stall_seconds: float
    workers: WorkerCount
    clock: Callable[[], float] = time.monotonic
    last_alive: float = field(default=0.0)
    last_probe: float = field(default=0.0)
    cause: str = "no Dask worker was alive"

    def __post_init__(self) -> None:
        self.last_alive = self.last_probe = self.clock()

    def progressed(self) -> None:
        self.last_alive = self.clock()

    def check(self) -> None:
        """Ask the scheduler now and then; end the run once nothing lived for too long."""
        now = self.clock()
        if now - self.last_probe < PROBE_EVERY:
            return
        self.last_probe = now
        try:
            alive = self.workers()
        except Exception as exc:  # the scheduler is gone or does not answer
            alive, self.cause = 0, f"the Dask scheduler did not answer ({type(exc).__name__})"
        else:
            self.cause = "no Dask worker was alive"
        if alive is None or alive > 0:
            self.last_alive = now  # and the stall counts from the first probe that sees none
        elif now - self.last_alive >= self.stall_seconds + PROBE_EVERY:
            raise RunStalled(
                f"no batch finished and {self.cause} for {self.stall_seconds:g} s; finished "
                "batches are kept: check the workers (or --dask-address) and rerun the same "
                "command to resume"
            )


def dask_workers(runner: Any) -> WorkerCount:
    """How many workers the flow's Dask task runner has, asked of its scheduler; None for a
    runner that is not Dask's. (Its client connects on the first submit, before any probe.)"""
    if not hasattr(type(runner), "client"):
        return lambda: None

    def count() -> int | None:
        client = runner.client
        identity = client.sync(
            client.scheduler.identity, n_workers=0, callback_timeout=PROBE_TIMEOUT
        )
        return int(identity.get("n_workers", 0))

    return count
