"""Timeouts that scale with how busy this machine is: a fixed number of seconds that suits a calm
laptop turns a loaded CI machine red. The scale is one measured start-up of envmill's CLI module
in a fresh interpreter against a calm machine's, never below 1; measured once per session (per
xdist worker, about a second)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time

# A fresh interpreter importing envmill's CLI on a calm 2-core machine takes about this long.
CALM_STARTUP_SECONDS = 0.5
# Beyond this the machine is not busy but broken: a scale this large only hides a hang.
MAX_SCALE = 6.0
# Set to pin the scale (e.g. ENVMILL_TEST_TIME_SCALE=1 to see the fixed timeouts).
OVERRIDE = "ENVMILL_TEST_TIME_SCALE"


def _startup_seconds() -> float:
    command = [sys.executable, "-c", "import envmill.flows.cli"]
    best = float("inf")
    for _ in range(2):
        start = time.monotonic()
        subprocess.run(command, check=True, capture_output=True, timeout=120)
        best = min(best, time.monotonic() - start)
    return best


@functools.cache
def time_scale() -> float:
    """How many calm-machine seconds one second of a test's waiting is worth here (1 to 6)."""
    if os.environ.get(OVERRIDE):
        return float(os.environ[OVERRIDE])
    return min(MAX_SCALE, max(1.0, _startup_seconds() / CALM_STARTUP_SECONDS))


def scaled(seconds: float) -> float:
    """``seconds`` on a calm machine, stretched by this machine's measured start-up."""
    return seconds * time_scale()
