"""Leftover-process checks shared by the sandbox, flow and CLI tests."""

from __future__ import annotations

import time

import psutil

# multiprocessing's resource tracker is a singleton of the *calling* interpreter (Dask's
# LocalCluster starts it) and ends with that interpreter: not something a run leaves behind.
PER_INTERPRETER_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def descendants() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _is_helper(pid: int) -> bool:
    try:
        command = " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return False
    return any(helper in command for helper in PER_INTERPRETER_HELPERS)


def assert_no_new_processes(before: set[int], settle_seconds: float = 5.0) -> None:
    """Every process started since ``before`` has ended (zombies count as left behind)."""
    deadline = time.monotonic() + settle_seconds
    while True:
        extra = {pid for pid in descendants() - before if not _is_helper(pid)}
        if not extra or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not extra, f"processes left behind: {sorted(extra)}"


def processes_started_under(marker: str) -> list[str]:
    """Command lines of live processes that mention ``marker`` (e.g. a test's data folder)."""
    found = []
    for process in psutil.process_iter(["cmdline", "environ"]):
        try:
            text = (
                " ".join(process.info["cmdline"] or [])
                + " "
                + " ".join(f"{k}={v}" for k, v in (process.info["environ"] or {}).items())
            )
        except psutil.Error:
            continue
        if marker in text:
            found.append(text[:200])
    return found
