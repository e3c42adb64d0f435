"""Every listener a run opens binds the loopback interface: the Dask dashboard bound every
interface (``dashboard_address=":0"``) and served worker and task pages over the network; and
sizes a run cannot use end in one line: ``--workers 100000`` started spawning, an unreachable
``--dask-address`` ended in ``OSError: …`` (issue 24)."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import time

import psutil
import pytest

from tests.cli import COMMAND, clean_env
from tests.timing import scaled

LOOPBACK = ("127.0.0.1", "::1")


def _listeners(pid: int) -> set[tuple[str, int]]:
    """The addresses the process tree of ``pid`` listens on, now."""
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return set()
    found: set[tuple[str, int]] = set()
    for process in tree:
        try:
            connections = process.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        found |= {(c.laddr.ip, c.laddr.port) for c in connections if c.status == "LISTEN"}
    return found


@pytest.mark.timeout(300)
def test_a_runs_listeners_are_loopback_only(tmp_path):
    env = clean_env(tmp_path, own_server=True)  # its own Prefect server is scanned too
    command = [
        *COMMAND,
        "run",
        "--envs",
        "2",
        "--scenarios-per-env",
        "2",
        "--out",
        str(tmp_path / "d"),
    ]
    run = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    seen: set[tuple[str, int]] = set()
    deadline = time.monotonic() + scaled(240)
    while run.poll() is None and time.monotonic() < deadline:
        seen |= _listeners(run.pid)
        time.sleep(0.2)
    out, err = run.communicate(timeout=scaled(60))
    assert run.returncode == 0, err[-2000:]
    assert len(seen) >= 3, seen  # the Prefect server, the scheduler, a worker at least
    wide = {(ip, port) for ip, port in seen if not ipaddress.ip_address(ip).is_loopback}
    assert not wide, f"listening beyond loopback: {sorted(wide)}"


def _refused(tmp_path, *args: str) -> str:
    """``envmill run <args>`` exits 2 with one line and no traceback; that line."""
    result = subprocess.run(
        [*COMMAND, "run", *args, "--out", str(tmp_path / "d")],
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "d" / "_commits").exists()
    return lines[0]


def test_more_workers_than_the_machine_holds_is_one_line(tmp_path):
    line = _refused(tmp_path, "--workers", "100000")
    assert "100000 workers" in line and "per core" in line, line


def test_an_unreachable_scheduler_is_one_line_naming_it(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on: bound, then closed
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    assert address in _refused(tmp_path, "--envs", "1", "--dask-address", address)


def test_a_dashboard_address_is_a_setting_checked_up_front():
    from envmill.schemas.settings import SettingsError, load_settings

    assert load_settings(dashboard="127.0.0.1:8787").dashboard == "127.0.0.1:8787"
    with pytest.raises(SettingsError, match="dashboard"):
        load_settings(dashboard="everywhere")
