"""Imported by the process every worker of a cluster envmill starts is forked from, and preloaded
by each worker (Dask's ``distributed.worker.preload``) in its main thread before it takes a task.

Workers fork from multiprocessing's forkserver, which imported this module (Prefect, the flows,
every backend) once: a spawned worker spent about seven CPU-seconds importing them again. Prefect
also runs plugin hooks while it is imported; a worker that imported it in two threads at once (a
batch task and the warm-up, or two batches of an LLM run) could meet Python's import-lock deadlock
detection, and one of them failed. Imported here, first, nothing is imported concurrently later.

A forked worker has the environment the forkserver started with, which in a long-lived process
(a test session, a notebook) may be an earlier run's; ``dask_setup`` gives it the run's own. It
also ends with ``os._exit``, so no ``atexit`` hook runs: ``dask_teardown`` does their work.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import tempfile
from typing import Any

import envmill.flows.rollout  # noqa: F401
import envmill.flows.synthesize  # noqa: F401
import envmill.schemas.table_models  # noqa: F401  (pandera and pandas: every batch validates)
from envmill.flows.runtime.cluster import RUN_ENVIRON

IMPORTED_BY = os.getpid()  # the forkserver, or a worker that was spawned
IMPORT_ENVIRON = dict(os.environ)
# What the imports made is never garbage: frozen, a worker's collections skip it (each full one
# walked millions of objects) and the forked workers' copies of its pages stay shared.
gc.freeze()


def dask_setup(worker: Any) -> None:
    """Dask calls this in each worker as it starts: SIGINT is the parent's to handle (Ctrl-C
    closes the cluster in order); the environment becomes the run's (what the forkserver had
    and the run has not is removed; what the nanny set for the worker stays), and what was read
    from the old one at import (Prefect's settings, the temp folder) is read again."""
    from prefect.context import refresh_global_settings_context

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    wanted = os.environ.pop(RUN_ENVIRON, None)
    if wanted is None or os.getpid() == IMPORTED_BY:  # not forked: the environment is the run's
        return
    run = json.loads(wanted)
    for name in IMPORT_ENVIRON.keys() - run.keys():
        os.environ.pop(name, None)
    os.environ.update(run)
    tempfile.tempdir = None
    refresh_global_settings_context()


async def dask_teardown(worker: Any) -> None:
    """As the worker closes: what its ``atexit`` hooks would do. Its sandboxes stop their hosts,
    and Prefect's queued events (task states among them) reach the API."""
    from prefect.events.worker import EventsWorker

    from envmill.tasks.sandbox.shared import close_all

    close_all()
    drained = EventsWorker.drain_all(timeout=5)
    if not isinstance(drained, tuple):
        await drained
