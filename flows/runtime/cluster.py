"""The Dask cluster a run fans out on: the user's scheduler, or a local one envmill owns.

The local cluster's worker processes start with SIGINT ignored (the disposition survives their
exec), so Ctrl-C reaches only the parent, which closes the cluster in order; otherwise every
worker would die of the group-wide SIGINT and print a traceback.

Its scratch space (the scheduler's and every worker's) lives in a temp folder named after this
process (``envmill-dask-<pid>-…``), removed on close, or by the next run when this one was
killed (``leftovers.py``). The worker processes end by themselves when this process does: each
watches a pipe from its nanny here (``distributed.process``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from envmill.schemas.settings import EnvmillSettings, SandboxLimits
from envmill.tasks.core.scratch import SHORT_TEMP, owned_tempdir

if TYPE_CHECKING:
    from prefect import Flow

# Dask's statistical profiler walks every thread's stack each 10 ms: with an llm run's dozens of
# threads per worker that is seconds of CPU nobody reads (the dashboard is off).
QUIET_WORKERS = {"distributed.worker.profile.enabled": False}
WORKER_IMPORTS = "envmill.flows.runtime.worker_imports"
# Workers fork from one process that imported the task code once (see worker_imports.py), and
# each preloads it (a no-op once forked) before its first task.
FORKED_WORKERS = {"distributed.worker.multiprocessing-method": "forkserver"}
# The model client's library (about a second of imports), preloaded only where a run asks a
# model: imported later by two batch threads at once, it could meet the import-lock deadlock
# detection as Prefect did (worker_imports.py).
MODEL_CLIENT = "openai"
LOOPBACK = "127.0.0.1"  # every listener a run opens binds it unless the user asks otherwise
LOOPBACK_DASHBOARD = f"{LOOPBACK}:0"
SCHEDULER_TIMEOUT = 5.0  # seconds to wait for an existing scheduler to accept a connection
SOCKET_PATH_MAX = 107  # bytes of a Unix socket's path (sun_path, its terminating NUL aside)
RUN_ENVIRON = "ENVMILL_RUN_ENVIRON"  # the starting process's environment, as JSON


def run_environ() -> dict[str, str]:
    """What a cluster's nannies hand their workers: this process's whole environment (a
    forked worker has the forkserver's, maybe an earlier run's; worker_imports.dask_setup)."""
    return {RUN_ENVIRON: json.dumps(dict(os.environ))}


def warm_worker(limits: SandboxLimits) -> None:
    """Start the sandbox before the first batch arrives (the task code is preloaded)."""
    from envmill.tasks.sandbox.shared import process_sandbox

    process_sandbox(limits).spawn_host().close()


def _preload_forkserver(preload: list[str]) -> None:
    """What the forkserver imports when it starts (the first cluster of a process starts it;
    later ones fork from the same), and where its socket lives."""
    from distributed.utils import get_mp_context

    get_mp_context().set_forkserver_preload(["distributed", *preload])
    _forkserver_home()


_FORKSERVER_HOMES: list[str] = []
SOCKET_PATH_ROOM = 40  # what multiprocessing adds: /pymp-xxxxxxxx/listener-xxxxxxxx, and slack


def _forkserver_home() -> None:
    """multiprocessing keeps the forkserver's socket in a ``pymp-*`` folder of the temp dir: a
    deep temp dir made the socket's path too long to bind ("Nanny failed to start"), and a run
    killed with -9 left the folder behind. It goes into a folder this process owns (the next
    run reaps a dead owner's), under the temp dir or, when that is too deep, under /tmp; it
    lives as long as the process (so does the forkserver)."""
    from multiprocessing import util

    if _FORKSERVER_HOMES:
        return
    home = owned_tempdir("forkserver")
    if len(home) + SOCKET_PATH_ROOM > SOCKET_PATH_MAX:
        os.rmdir(home)
        home = owned_tempdir("forkserver", parent=SHORT_TEMP)
    # after multiprocessing's own removal of its folder (priority -100), at exit
    util.Finalize(None, shutil.rmtree, args=(home, True), exitpriority=-101)
    previous, tempfile.tempdir = tempfile.tempdir, home
    try:
        util.get_temp_dir()  # made now, in ``home``; multiprocessing keeps it for the process
    finally:
        tempfile.tempdir = previous
    _FORKSERVER_HOMES.append(home)


def scheduler_unreachable(address: str, timeout: float = SCHEDULER_TIMEOUT) -> str | None:
    """Why the Dask scheduler at ``address`` (``tcp://host:port``) cannot be used, in one line;
    None when it accepts a connection (an unreachable one ended the run in ``OSError: …``)."""
    found = re.fullmatch(r"(?:tcp://)?\[?([^\]\s]+?)\]?:(\d{1,5})/?", address.strip())
    if found is None:
        return f"--dask-address {address!r} is not tcp://HOST:PORT"
    try:
        socket.create_connection((found[1], int(found[2])), timeout=timeout).close()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        return f"cannot reach the Dask scheduler at {address}: {reason}"
    return None


@contextmanager
def dask_scheduler(
    address: str | None,
    workers: int,
    limits: SandboxLimits,
    threads: int = 1,
    asks_a_model: bool = True,
    dashboard: str = LOOPBACK_DASHBOARD,
) -> Iterator[str]:
    """Yield a scheduler address; a cluster started here (``threads`` tasks at once per worker
    process, the model client preloaded when the run ``asks_a_model``) is warmed, and closed on
    the way out. It listens on the loopback interface only, its dashboard at ``dashboard``."""
    if address:
        yield address
        return
    import dask.config
    from distributed import Client

    scratch = owned_tempdir("dask")
    preload = [WORKER_IMPORTS, MODEL_CLIENT] if asks_a_model else [WORKER_IMPORTS]
    config = {
        **QUIET_WORKERS,
        **FORKED_WORKERS,
        "distributed.worker.preload": preload,
        "temporary-directory": scratch,  # the scheduler's too
    }
    # held for the cluster's life: a nanny that restarts its worker reads it again then
    with dask.config.set(config):
        try:
            cluster = _local_cluster(workers, threads, scratch, preload, dashboard)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        client = Client(cluster)
        try:
            # one warm-up per worker, not awaited: it overlaps whatever the caller does next
            warming = [  # noqa: F841  (held so the futures are not released early)
                client.submit(
                    warm_worker, limits, workers=[worker], pure=False, allow_other_workers=False
                )
                for worker in client.scheduler_info()["workers"]
            ]
            yield cluster.scheduler_address
        finally:
            client.close()
            cluster.close()
            shutil.rmtree(scratch, ignore_errors=True)


def _local_cluster(
    workers: int, threads: int, scratch: str, preload: list[str], dashboard: str
) -> Any:
    """The cluster's worker processes start (and the forkserver with them) with SIGINT ignored;
    each worker ignores it again as it starts (``worker_imports.dask_setup``), restarted or not.
    Scheduler, workers and nannies bind 127.0.0.1; so does the dashboard's HTTP server, which
    starts anyway (``dashboard_address=":0"`` bound every interface: issue 24)."""
    from distributed import LocalCluster

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _preload_forkserver(preload)
        return LocalCluster(
            n_workers=workers,
            threads_per_worker=threads,
            processes=True,
            host=LOOPBACK,
            dashboard_address=dashboard,
            silence_logs=logging.CRITICAL,
            local_directory=scratch,
            env=run_environ(),
        )
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def synthesize_on_dask(
    settings: EnvmillSettings, nothing_left: bool = False
) -> Iterator[Flow[..., dict[str, Any]]]:
    """The ``synthesize`` flow with a Dask task runner on the cluster ``settings`` ask for: their
    ``dask_address``, else a local one of ``workers`` processes, each running as many batches at
    once as the backend needs (``task_threads``); a local cluster closes on the way out. With
    ``nothing_left``, the flow as it is, on no cluster.

    Prefect is imported only here, so a caller can export its Prefect API first.
    """
    if nothing_left:  # a rerun of a finished run: no batch to fan out, no cluster to start
        from envmill.flows.synthesize import synthesize as alone

        yield alone  # and no Dask imports, seconds of them
        return
    # Dask before Prefect: imported after Prefect set up logging, Dask's own set-up turns its
    # INFO lines back on (every worker's start and close, on the user's terminal)
    from prefect_dask.task_runners import DaskTaskRunner

    from envmill.flows.synthesize import synthesize
    from envmill.tasks.backends import task_threads, uses_llm

    threads = task_threads(settings)
    asks = uses_llm(settings) or settings.reward.judge == "llm"
    with dask_scheduler(
        settings.dask_address, settings.workers, settings.sandbox, threads, asks, settings.dashboard
    ) as address:
        yield synthesize.with_options(task_runner=DaskTaskRunner(address=address))


@contextmanager
def rollout_on_dask(settings: EnvmillSettings) -> Iterator[Flow[..., dict[str, Any]]]:
    """The ``rollout`` flow with a Dask task runner, as :func:`synthesize_on_dask`."""
    from prefect_dask.task_runners import DaskTaskRunner

    from envmill.flows.rollout import TASK_THREADS, rollout

    with dask_scheduler(
        settings.dask_address,
        settings.workers,
        settings.sandbox,
        TASK_THREADS,
        dashboard=settings.dashboard,
    ) as address:
        yield rollout.with_options(task_runner=DaskTaskRunner(address=address))
