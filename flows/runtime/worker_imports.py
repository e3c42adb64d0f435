"""Imported by the process every worker of a cluster envmill starts is forked from, and preloaded
by each worker (Dask's ``distributed.worker.preload``) in its main thread before it takes a task.

Workers fork from multiprocessing's forkserver, which imported this module (Prefect, the flows,
every backend) once: a spawned worker spent about seven CPU-seconds importing them again. Prefect
also runs plugin hooks while it is imported; a worker that imported it in two threads at once (a
batch task and the warm-up, or two batches of an LLM run) could meet Python's import-lock deadlock
detection, and one of them failed. Imported here, first, nothing is imported concurrently later.

A forked worker has the environment the forkserver started with, which in a long-lived process
(a test session, a notebook) may be an earlier run's; ``dask_setup`` gives it the run's own.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import envmill.flows.rollout  # noqa: F401
import envmill.flows.synthesize  # noqa: F401
from envmill.flows.runtime.cluster import RUN_ENVIRON


def dask_setup(worker: Any) -> None:
    """Dask calls this in each worker as it starts: the environment becomes exactly the run's
    (variables removed since the forkserver started are removed), and what was read from the
    old one at import (Prefect's settings, the temp folder) is read again."""
    from prefect.context import refresh_global_settings_context

    wanted = os.environ.get(RUN_ENVIRON)
    if wanted is None:  # a worker envmill did not start
        return
    os.environ.clear()
    os.environ.update(json.loads(wanted))
    tempfile.tempdir = None
    refresh_global_settings_context()
