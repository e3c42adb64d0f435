"""Wall-clock marks of a run's phases, for ``bench.run_overhead`` (off unless asked for).

With ``ENVMILL_TIMELINE`` naming a file, each :func:`mark` appends ``<name> <unix time>`` to it,
so a benchmark that starts ``envmill run`` as a process can split its wall time into phases
(imports, server start, cluster start, flow, teardown) without timing code in the run itself.
"""

from __future__ import annotations

import os
import time


def mark(name: str) -> None:
    """Note that the run reached ``name`` now, when a timeline is being kept."""
    path = os.environ.get("ENVMILL_TIMELINE")
    if path:
        with open(path, "a") as timeline:
            timeline.write(f"{name} {time.time():.6f}\n")
