"""Preloaded by every worker of a cluster envmill starts, in the worker's main thread before it
takes a task (Dask's ``distributed.worker.preload``).

Prefect runs plugin hooks while it is imported; a worker that imported it in two threads at once
(a batch task and the warm-up, or two batches of an LLM run) could meet Python's import-lock
deadlock detection, and one of them failed. Imported here once, first, nothing is imported
concurrently later.
"""

from __future__ import annotations

import envmill.flows.rollout  # noqa: F401
import envmill.flows.synthesize  # noqa: F401
