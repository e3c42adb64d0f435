"""``envmill`` as its own process, for the tests that need one (a CLI smoke test, a signal, a
lock held by another process). Option validation runs in-process through ``call_main``."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.timing import scaled

COMMAND = [sys.executable, "-c", "from envmill.flows.cli import main; main()"]


def envmill(*args: str, cwd=None, env_extra=None) -> subprocess.CompletedProcess[str]:
    """``envmill <args>`` with tight sandbox limits, in this session's environment."""
    env = {**os.environ, "ENVMILL_SANDBOX__WALL_SECONDS": "2", "ENVMILL_SANDBOX__CPU_SECONDS": "1"}
    env.update(env_extra or {})
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=scaled(60), cwd=cwd, env=env
    )


_shared_server: list = []


def shared_prefect_api() -> str:
    """The URL of one Prefect server per test process, started on first use and stopped at exit.

    A run that starts its own server spends about ten CPU-seconds on it, most of a small run's
    cost; the runs whose subject is not the server's own life (its start, its end with the run,
    a kill -9 while it starts: tests/e2e/test_kill9.py, tests/sandbox/test_process_lifetime.py,
    tests/e2e/test_prefect_home.py) report to this one, as runs under a user's server do.
    """
    if not _shared_server:
        from envmill.flows.runtime.prefect_api import start_server

        home = Path(tempfile.mkdtemp(prefix="envmill-test-prefect-"))
        server = start_server(home)
        atexit.register(shutil.rmtree, home, ignore_errors=True)
        atexit.register(server.stop)  # runs first
        server.wait_healthy()
        _shared_server.append(server)
    return _shared_server[0].url


def clean_env(tmp_path: Path, *, own_server: bool = False) -> dict[str, str]:
    """This environment without Prefect/envmill/OpenAI settings, helper files under tmp_path;
    runs report to this process's shared Prefect server unless ``own_server``."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "ENVMILL_", "OPENAI_"))
    }
    if not own_server:
        env |= {"PREFECT_API_URL": shared_prefect_api(), "PREFECT_LOGGING_TO_API_ENABLED": "false"}
    # TMPDIR puts every helper process's files (and so its command line) under tmp_path
    return {**env, "TMPDIR": str(tmp_path), "ENVMILL_SANDBOX__WALL_SECONDS": "5"}


def envmill_in(
    tmp_path: Path, *args: str, timeout: float = 300, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``envmill <args>`` run from ``tmp_path`` in a clean environment (see ``clean_env``)."""
    env = clean_env(tmp_path) | (extra_env or {})
    return subprocess.run(
        [*COMMAND, *args],
        capture_output=True,
        text=True,
        timeout=scaled(timeout),
        cwd=tmp_path,
        env=env,
    )
