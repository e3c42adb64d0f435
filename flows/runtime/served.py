"""A flow run ``serve`` started ends with it, even when it is killed with -9.

Prefect's ``serve`` runs each flow run in a child process of its own. Killed, it left the
child running with its Dask cluster, the flow run ``RUNNING`` for good and the folder's run row
``running`` until the next command (issue 24). ``serve`` marks the runs it starts
(``SERVED_BY``, its pid); such a run watches its parent, and once the kernel has given it
another (its parent is gone) it stops itself as a SIGTERM stops ``envmill run``: Prefect
records the flow run ``Crashed``, the run row is ``interrupted`` at once, and the run's cluster
closes with it. A run a worker starts carries no mark and is left alone.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prefect.exceptions import TerminationSignal

SERVED_BY = "ENVMILL_SERVED_BY"
WATCH_SECONDS = 0.5


def mark_served_runs() -> None:
    """In ``serve``: the flow runs it starts from now on end with this process."""
    os.environ[SERVED_BY] = str(os.getpid())


@contextmanager
def ending_with_server() -> Iterator[None]:
    """In a flow run: if ``serve`` started it, stop when ``serve`` is gone, the run and every
    flow run under it ``Crashed`` (an error a subflow's crash left is that crash)."""
    gone = threading.Event()
    if os.environ.get(SERVED_BY) == str(os.getppid()):
        parent = os.getppid()

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(WATCH_SECONDS)
            gone.set()
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=watch, name="envmill-served-by", daemon=True).start()
    try:
        yield
    except BaseException as exc:
        if gone.is_set() and not isinstance(exc, TerminationSignal):
            raise TerminationSignal(signal.SIGTERM) from exc
        raise
