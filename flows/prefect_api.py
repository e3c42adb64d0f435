"""The Prefect API a run reports to: the user's, or a loopback server envmill starts and stops.

Prefect's ephemeral mode starts a server in every Dask worker and leaves them behind (STACK §1),
so when no API is configured envmill starts one real server itself, exports its URL and
``PREFECT_HOME`` before any worker starts, and stops it (its whole process group) on exit.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

QUIET_PREFECT = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
    "PREFECT_SERVER_EPHEMERAL_ENABLED": "false",
}
START_TIMEOUT_SECONDS = 120.0


class PrefectServerError(RuntimeError):
    """The embedded server did not come up; the message names its log file."""


def configured_api_url() -> str | None:
    """PREFECT_API_URL from the environment, else from the active Prefect profile, if any."""
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    home = Path(os.environ.get("PREFECT_HOME", Path.home() / ".prefect"))
    try:
        profiles = tomllib.loads((home / "profiles.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or profiles.get("active", "")
    return profiles.get("profiles", {}).get(active, {}).get("PREFECT_API_URL") or None


@contextmanager
def prefect_api(home: Path) -> Iterator[str]:
    """Yield the API URL the run reports to, starting a loopback server when none is configured."""
    os.environ.update({k: v for k, v in QUIET_PREFECT.items() if k not in os.environ})
    url = configured_api_url()
    if url is not None:
        yield url
        return
    home.mkdir(parents=True, exist_ok=True)
    os.environ["PREFECT_HOME"] = str(home)
    os.environ["PREFECT_LOGGING_TO_API_ENABLED"] = (
        "false"  # nobody reads them; the server stops first
    )
    server = _start_server(home)
    try:
        os.environ["PREFECT_API_URL"] = server.url
        yield server.url
    finally:
        os.environ.pop("PREFECT_API_URL", None)
        server.stop()


class _Server:
    def __init__(self, process: subprocess.Popen[bytes], url: str) -> None:
        self.process, self.url = process, url

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.process.pid, sig)  # uvicorn and its children: the whole group
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        try:  # a child that outlived the leader still holds the group id
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _start_server(home: Path) -> _Server:
    port = _free_port()
    log_path = home / "server.log"
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_UI_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    command = [
        sys.executable,
        "-m",
        "prefect",
        "server",
        "start",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-ui",
        "--analytics-off",
    ]
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            command,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = _Server(process, f"http://127.0.0.1:{port}/api")
    try:
        _wait_healthy(server, log_path)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_healthy(server: _Server, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise PrefectServerError(f"the Prefect server exited at start; see {log_path}")
        try:
            with urllib.request.urlopen(f"{server.url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise PrefectServerError(
        f"the Prefect server did not answer in {START_TIMEOUT_SECONDS:g} s; see {log_path}"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
