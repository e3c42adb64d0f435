"""Leftover-process checks shared by the sandbox and flow tests."""

from __future__ import annotations

import time

import psutil


def descendants() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def assert_no_new_processes(before: set[int], settle_seconds: float = 5.0) -> None:
    """Every process started since ``before`` has ended (zombies count as left behind)."""
    deadline = time.monotonic() + settle_seconds
    while True:
        extra = descendants() - before
        if not extra or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not extra, f"processes left behind: {sorted(extra)}"
