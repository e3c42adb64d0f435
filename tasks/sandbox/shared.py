"""One sandbox per process and limits, shared by every task that runs there (a Dask worker, say).

The zygote lives as long as the process: its control socket closes when the process ends, and the
zygote then kills its hosts and exits, so nothing outlives a worker.
"""

from __future__ import annotations

import atexit
import threading

from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox.client import Sandbox

_lock = threading.Lock()
_sandboxes: dict[SandboxLimits, Sandbox] = {}


def process_sandbox(limits: SandboxLimits) -> Sandbox:
    with _lock:
        if limits not in _sandboxes:
            _sandboxes[limits] = Sandbox(limits)
        return _sandboxes[limits]


@atexit.register
def close_all() -> None:
    """Stop this process's sandboxes (at exit, or as a Dask worker closes)."""
    with _lock:
        sandboxes = list(_sandboxes.values())
        _sandboxes.clear()
    for sandbox in sandboxes:
        sandbox.close()
