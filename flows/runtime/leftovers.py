"""What a run killed by SIGKILL could not clean up, removed when the next run starts.

A run's processes end with it by themselves (the Prefect server through its lifeline, the Dask
workers through their nanny pipes, the sandbox zygotes through their control sockets), but a
process killed by SIGKILL removes no folder. Every temp folder envmill makes is named after its
owner (``tasks/core/scratch.py``); :func:`reap_leftovers` removes those whose owner is gone
and stops what a dead run may still have running. It is cheap when there is nothing to do
(one listing of the temp dir, one small file read), so every ``envmill run`` calls it first.

Conservative by design: a folder whose owner runs, or cannot be checked, stays; a process is
killed only when a record or a folder of a dead owner names it. Two runs reaping the same
folder at once is harmless (``rm -f`` ignores what the other one removed first).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from envmill.flows.runtime.prefect_api import SERVER_RECORD
from envmill.tasks.core.scratch import (
    SHORT_TEMP,
    FolderOwner,
    owned_folders,
    owner_alive,
    process_start,
)


def reap_leftovers(data_dir: Path | None = None, temp_dir: str | Path | None = None) -> list[str]:
    """Remove envmill temp folders of dead owners and stop a dead run's Prefect server.

    Args:
        data_dir: a data folder whose embedded server (``_prefect/server.json``) to check.
        temp_dir: where envmill's temp folders are (the temp dir by default).

    Returns:
        What was reaped: the folders removed and ``"process group N"`` for each group killed.
    """
    reaped = []
    if data_dir is not None:
        reaped += _stop_orphaned_server(Path(data_dir) / "_prefect")
    found = owned_folders(temp_dir)
    if temp_dir is None and tempfile.gettempdir() != SHORT_TEMP:  # a deep temp dir's sockets
        found += [(p, o) for p, o in owned_folders(SHORT_TEMP) if o.kind == "forkserver"]
    dead = [(path, owner) for path, owner in found if not _alive(owner)]
    # a zygote that missed its parent's death works in its folder, and so do its hosts
    _kill_processes_inside([path for path, owner in dead if owner.kind == "sandbox"])
    reaped += [str(path) for path, _ in dead if _remove(path)]
    return reaped


def _alive(owner: FolderOwner) -> bool:
    return owner_alive(owner.pid, owner.start)


def _stop_orphaned_server(home: Path) -> list[str]:
    """Kill the process group of a server whose starting run is gone, if it still runs."""
    try:
        record = json.loads((home / SERVER_RECORD).read_text())
        owner, owner_start = int(record["owner"]), record.get("owner_start")
        pgid, start = int(record["pgid"]), record.get("start")
    except (OSError, ValueError, TypeError, KeyError):
        return []  # none (the usual case), or not ours to act on
    if owner_alive(owner, owner_start):
        return []
    killed = []
    if start is not None and process_start(pgid) == start:  # the same lifeline, not a new pid
        try:
            os.killpg(pgid, signal.SIGKILL)
            killed.append(f"process group {pgid}")
        except (ProcessLookupError, PermissionError):
            pass
    (home / SERVER_RECORD).unlink(missing_ok=True)
    return killed


def _kill_processes_inside(folders: list[Path]) -> None:
    """SIGKILL every process whose working directory or root is inside one of ``folders``: a
    sandbox folder is the zygote's working directory and holds each host's, so what still
    works in the folder of a dead owner is a sandbox process that outlived it."""
    if not folders:
        return
    inside = tuple(str(folder) + os.sep for folder in folders)
    python = os.path.realpath(sys.executable)
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and _works_inside(entry.name, inside) and _runs(entry.name, python):
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _runs(pid: str, python: str) -> bool:
    """Whether the process runs our interpreter, as sandbox processes do: a person's shell that
    looks around in a leftover folder is not one of them."""
    try:
        return os.readlink(f"/proc/{pid}/exe") == python
    except OSError:
        return False


def _works_inside(pid: str, folders: tuple[str, ...]) -> bool:
    for link in ("cwd", "root"):
        try:
            target = os.readlink(f"/proc/{pid}/{link}") + os.sep
        except OSError:
            continue
        if target.startswith(folders):
            return True
    return False


def _remove(path: Path) -> bool:
    """Remove a folder (``rm``: a sandbox host may leave a tree too deep for ``shutil.rmtree``);
    whether it is gone."""
    subprocess.run(
        ["rm", "-rf", "--one-file-system", "--", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return not path.exists()
