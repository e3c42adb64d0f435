"""The Dask cluster a run fans out on: the user's scheduler, or a local one envmill owns.

The local cluster's worker processes start with SIGINT ignored (the disposition survives their
exec), so Ctrl-C reaches only the parent, which closes the cluster in order; otherwise every
worker would die of the group-wide SIGINT and print a traceback.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def dask_scheduler(address: str | None, workers: int) -> Iterator[str]:
    """Yield a scheduler address; a cluster started here is closed on the way out."""
    if address:
        yield address
        return
    from distributed import LocalCluster

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()
