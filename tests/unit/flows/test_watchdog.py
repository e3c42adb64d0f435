"""The fan-out's watch: a run ends once no batch finished and no worker lived for its bound."""

from __future__ import annotations

import pytest

from envmill.flows.runtime.watchdog import PROBE_EVERY, RunStalled, Watch


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float, watch: Watch) -> None:
        """``seconds`` of waiting, the watch checked as the fan-out checks it."""
        end = self.now + seconds
        while self.now < end:
            self.now += 0.5
            watch.check()


def test_no_worker_for_the_bound_ends_the_run_with_its_cause():
    clock = Clock()
    watch = Watch(60, lambda: 0, clock)
    clock.wait(55, watch)  # not yet
    with pytest.raises(RunStalled, match="no Dask worker was alive for 60 s"):
        clock.wait(PROBE_EVERY + 5, watch)


def test_a_live_worker_or_a_finished_batch_keeps_the_run_going():
    clock, alive = Clock(), [0]
    watch = Watch(60, lambda: alive[0], clock)
    clock.wait(50, watch)
    alive[0] = 1  # a nanny started its worker again
    clock.wait(20, watch)
    alive[0] = 0
    clock.wait(50, watch)
    watch.progressed()  # a batch finished
    clock.wait(50, watch)  # 120 s with no worker, never 60 in a row without news


def test_a_scheduler_that_does_not_answer_is_named():
    def gone() -> int:
        raise OSError("connection refused")

    clock = Clock()
    watch = Watch(30, gone, clock)
    with pytest.raises(RunStalled, match="the Dask scheduler did not answer .OSError."):
        clock.wait(60, watch)


def test_no_scheduler_to_ask_is_no_stall():
    clock = Clock()
    clock.wait(600, Watch(30, lambda: None, clock))
