"""The Prefect API a run reports to: the user's, or a loopback server envmill starts and stops.

Prefect's ephemeral mode starts a temporary server in every Dask worker process (the URL of the
parent's is not passed on) and leaves them behind when the cluster goes. So when no API is
configured, envmill starts one real server itself, exports its URL and ``PREFECT_HOME`` before
any worker starts, and stops it (its whole process group) on exit. The server runs under a
lifeline (``lifeline.py``) that kills it when this process dies, even by ``kill -9``; its pid is
recorded in ``_prefect/server.json`` for the next run to check (``leftovers.py``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from envmill.flows.cli.support import CommandError
from envmill.flows.runtime.lifeline import start_tied
from envmill.flows.runtime.prefect_home import DATABASE, prepare_home, remember_migrated
from envmill.flows.timeline import mark
from envmill.tasks.core.scratch import process_start

QUIET_PREFECT = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # a failed batch or run is a row, a summary line and one error line: not pages of tracebacks
    "PREFECT_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_INTERNAL_LOGGING_LEVEL": "CRITICAL",  # its services' errors, e.g. a lost server
    "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
    "PREFECT_SERVER_EPHEMERAL_ENABLED": "false",
}
# Prefect's defaults (60 s per request, 5 retries with backoff) let an API that stopped answering
# hold a run for over 400 s; a loopback server answers in milliseconds, a hosted one in about a
# second. The user's own values win.
API_TIMEOUTS = {"PREFECT_API_REQUEST_TIMEOUT": "10", "PREFECT_CLIENT_MAX_RETRIES": "2"}
HEALTH_TIMEOUT_SECONDS = 5.0
START_TIMEOUT_SECONDS = 120.0
SERVER_RECORD = "server.json"  # in the server's PREFECT_HOME: who started it, its process group


class PrefectServerError(RuntimeError):
    """The embedded server did not come up; the message names its log file."""


class PrefectApiError(CommandError):
    """The Prefect API does not answer, before the run or any more during it (one line)."""


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


class _Server:
    """A ``prefect server start`` under a lifeline, in a session of its own (so its children
    stop with it). ``lifeline`` is the write end of the pipe the lifeline watches."""

    def __init__(
        self, process: subprocess.Popen[bytes], url: str, log_path: Path, lifeline: int
    ) -> None:
        self.process, self.url, self.log_path, self.lifeline = process, url, log_path, lifeline
        self.healthy = False
        self.on_healthy: list[Callable[[], None]] = []  # run once, when it first answers

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not self.healthy and time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PrefectServerError(f"the Prefect server exited at start; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                    self.healthy = response.status == 200
            except OSError:
                time.sleep(0.25)
        if not self.healthy:
            raise PrefectServerError(
                f"the Prefect server did not answer in {START_TIMEOUT_SECONDS:g} s; "
                f"see {self.log_path}"
            )
        mark("server_healthy")
        while self.on_healthy:
            self.on_healthy.pop(0)()

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
        if self.lifeline >= 0:
            os.close(self.lifeline)
            self.lifeline = -1
        (self.log_path.parent / SERVER_RECORD).unlink(missing_ok=True)


class PrefectApi:
    """The API of a run: ``url`` is exported at once; ``wait()`` blocks until it answers.

    Splitting the two lets the caller start Dask workers (which inherit the URL) while the
    embedded server is still starting, so the two start-ups overlap instead of adding up.
    """

    def __init__(self, url: str, server: _Server | None = None) -> None:
        self.url, self.server = url, server

    def wait(self) -> None:
        if self.server is not None:
            self.server.wait_healthy()


@contextmanager
def prefect_api(home: Path) -> Iterator[PrefectApi]:
    """The API the run reports to, starting a loopback server when none is configured."""
    defaults = {**QUIET_PREFECT, **API_TIMEOUTS}
    os.environ.update({k: v for k, v in defaults.items() if k not in os.environ})
    url = configured_api_url()
    if url is not None:
        check_api(url)
        with answering(url):
            yield PrefectApi(url)
        return
    home.mkdir(parents=True, exist_ok=True)
    os.environ["PREFECT_HOME"] = str(home)
    os.environ["PREFECT_LOGGING_TO_API_ENABLED"] = (
        "false"  # nobody reads them; the server stops first
    )
    server = start_server(home)
    try:
        os.environ["PREFECT_API_URL"] = server.url
        with answering(server.url):
            yield PrefectApi(server.url, server)
    finally:
        os.environ.pop("PREFECT_API_URL", None)
        server.stop()


def check_api(url: str, timeout: float = HEALTH_TIMEOUT_SECONDS) -> None:
    """PrefectApiError unless ``url``'s ``/health`` answers within ``timeout`` seconds. Any
    answer below 500 counts: credentials and routes are the Prefect client's to judge."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/health", timeout=timeout) as response:
            response.read(1 << 10)
        return
    except urllib.error.HTTPError as exc:
        if exc.code < 500:
            return
        problem = f"answered /health with HTTP {exc.code}"
    except urllib.error.URLError as exc:
        if not isinstance(exc.reason, TimeoutError):
            raise PrefectApiError(_unreachable(url, exc.reason)) from None
        problem = f"did not answer /health within {timeout:g} s"
    except TimeoutError:  # connected, sent, no reply
        problem = f"did not answer /health within {timeout:g} s"
    except (OSError, ValueError) as exc:
        raise PrefectApiError(_unreachable(url, exc)) from None
    raise PrefectApiError(f"the Prefect API at {url} {problem} (PREFECT_API_URL)")


def _unreachable(url: str, reason: object) -> str:
    return f"the Prefect API at {url} is unreachable: {reason} (PREFECT_API_URL)"


@contextmanager
def answering(url: str) -> Iterator[None]:
    """Turn a request to the API that timed out or failed to connect, mid-run, into one line
    (Prefect's own report of it, a traceback, is left out: this line says it)."""
    quiet = _DropTransportErrors()
    engine_logger = logging.getLogger("prefect.flow_runs")
    engine_logger.addFilter(quiet)
    try:
        yield
    except Exception as exc:
        problem = transport_problem(exc)
        if problem is None:
            raise
        raise PrefectApiError(
            f"the Prefect API at {url} stopped answering ({problem}); finished batches are "
            "kept, rerun the same command to resume",
            code=1,
        ) from None
    finally:
        engine_logger.removeFilter(quiet)


def transport_problem(exc: BaseException | None) -> str | None:
    """What went wrong talking to the API, when ``exc`` (or what it wraps) is an HTTP transport
    error (a timeout, a refused connection), else None."""
    httpx = sys.modules.get("httpx")  # Prefect's HTTP client; not loaded means not its error
    seen = 0
    while exc is not None and httpx is not None and seen < 8:
        if isinstance(exc, httpx.TimeoutException):
            timeout = os.environ.get("PREFECT_API_REQUEST_TIMEOUT", "60")
            return f"no reply within {timeout} s"
        if isinstance(exc, httpx.TransportError):
            return f"{type(exc).__name__}: {exc}"
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


class _DropTransportErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and transport_problem(record.exc_info[1]))


def start_server(home: Path) -> _Server:
    """Start the server process; ``wait_healthy`` tells when it answers. A database known to
    be migrated starts without migrations (``prefect_home.py``); one the server creates is
    remembered once it answers."""
    port = _free_port()
    log_path = home / "server.log"
    fast_start = prepare_home(home)
    created = not (home / DATABASE).exists()
    database = quote(str(home / DATABASE))
    env = {
        **{k: v for k, v in fast_start.items() if k not in os.environ},
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_UI_ENABLED": "false",
        # spelled out and quoted: Prefect's default URL is built from PREFECT_HOME unquoted, so a
        # folder named "a?b" put the database at "a" (what follows ? read as URL parameters)
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{database}",
    }
    env.pop("PREFECT_API_URL", None)
    # --no-services: one-off flow runs need no scheduler, and services would take CPU from workers
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
               "--port", str(port), "--no-ui", "--analytics-off", "--no-services"]  # fmt: skip
    with open(log_path, "ab") as log:
        process, lifeline = start_tied(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    server = _Server(process, f"http://127.0.0.1:{port}/api", log_path, lifeline)
    if not fast_start:
        server.on_healthy.append(lambda: remember_migrated(home, created))
    try:
        _record_server(home, process.pid)
    except BaseException:
        server.stop()
        raise
    return server


def _record_server(home: Path, pid: int) -> None:
    """Who started the server and its process group, for a later run to check should this
    process die before it stops the server (the lifeline makes that a second line of defence)."""
    record = {
        "owner": os.getpid(),
        "owner_start": process_start(os.getpid()),
        "pgid": pid,
        "start": process_start(pid),
    }
    partial = home / f".{SERVER_RECORD}.{os.getpid()}"
    partial.write_text(json.dumps(record))
    partial.replace(home / SERVER_RECORD)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
