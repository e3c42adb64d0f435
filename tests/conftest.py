"""Shared fixtures: the golden clinic environment and one sandbox per test session."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox import Sandbox

FIXTURES = Path(__file__).parent / "fixtures"

# Tight limits keep hostile programs cheap to stop; the defaults are for real runs.
TEST_LIMITS = SandboxLimits(cpu_seconds=1.0, wall_seconds=2.0, memory_mb=256)

os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# envmill keeps its Prefect database template in the user's cache folder: in the tests, one of
# this session's own (runs started as processes inherit it)
_CACHE = tempfile.mkdtemp(prefix="envmill-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ["XDG_CACHE_HOME"] = _CACHE


def call_main(monkeypatch, capsys, args: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """``envmill <args>`` through ``main()`` in this process: exit code, stdout and stderr."""
    from envmill.flows import cli

    monkeypatch.setattr(sys, "argv", ["envmill", *args])
    try:
        cli.main()
        code = 0
    except SystemExit as exit_info:
        code = exit_info.code or 0
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


@pytest.fixture(scope="session")
def sandbox():
    with Sandbox(TEST_LIMITS) as box:
        yield box


@pytest.fixture(scope="session")
def clinic_source() -> str:
    return (FIXTURES / "envs" / "clinic.py").read_text()


@pytest.fixture(scope="session")
def clinic_scenarios() -> dict:
    return json.loads((FIXTURES / "scenarios" / "clinic.json").read_text())


@pytest.fixture(scope="session")
def clinic(clinic_source, sandbox):
    from envmill.tasks.envs import admit_environment

    return admit_environment(clinic_source, sandbox)


@pytest.fixture(scope="session")
def prefect_harness(tmp_path_factory):
    """One Prefect test server for the whole session (starting one costs ~10 s)."""
    os.environ.update(
        {
            "PREFECT_HOME": str(tmp_path_factory.mktemp("prefect-home")),
            "DO_NOT_TRACK": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
        }
    )
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
