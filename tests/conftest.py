"""Shared fixtures: the golden clinic environment, one sandbox and one small corpus per test
session (per xdist worker), the Prefect test server; and the tiers: each test is marked after its
folder, a unit test may not ask for a fixture that starts a process, and per-test timeouts scale
with the machine's measured start-up (tests/timing.py)."""

from __future__ import annotations

import atexit
import gc
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
from tests.timing import time_scale

FIXTURES = Path(__file__).parent / "fixtures"
TIERS = ("unit", "sandbox", "e2e", "redteam")
# Fixtures that start processes: a unit test asking for one belongs in another tier.
PROCESS_FIXTURES = {"sandbox", "prefect_harness"}
START_ORDER = ("e2e", "sandbox", "redteam", "unit")
# Measured in CI (pytest --junitxml, each file's summed test time, slowest first); the rest follow
# by tier. pyproject's --no-loadscope-reorder keeps this order: xdist would otherwise sort files
# by their number of tests and start the long single-test files last, where they are the tail.
SLOWEST_FILES = (
    "test_cli_run.py",
    "test_kill9.py",
    "test_bfcl_commands.py",
    "test_serve_env.py",
    "test_cli_llm_run.py",
    "test_attacks.py",
    "test_reward_probes.py",
    "test_rollout_run.py",
    "test_procedural_pipeline.py",
    "test_process_lifetime.py",
    "test_llm_client.py",
    "test_llm_judge_rollout.py",
    "test_compact.py",
    "test_deployed_flows.py",
    "test_skelbuilder.py",
    "test_llm_requests_name_no_stage.py",
    "test_phrasing_quality.py",
    "test_rollout_cli.py",
    "test_compiler.py",
    "test_state_invariants.py",
    "test_cli_llm.py",
    "test_prefect_home.py",
    "test_flow.py",
)

# Tight limits keep hostile programs cheap to stop; the defaults are for real runs.
TEST_LIMITS = SandboxLimits(cpu_seconds=1.0, wall_seconds=2.0, memory_mb=256)

os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# Session fixtures keep millions of objects alive (compiled domains, their syntax trees, a
# corpus): at CPython's default thresholds every full collection walks them all again, which made
# the compiler tests ten times slower than the same work in a script. Rarer collections.
gc.set_threshold(50_000, 20, 100)
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


@pytest.fixture
def cli(monkeypatch, capsys, tmp_path):
    """``envmill <args>`` through ``main()`` in this process, from ``tmp_path`` and without the
    caller's Prefect, envmill or OpenAI settings (as ``tests.cli.envmill_in`` runs a process)."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("PREFECT_", "ENVMILL_", "OPENAI_")):
            monkeypatch.delenv(name)

    def invoke(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return call_main(monkeypatch, capsys, args)

    return invoke


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
    """This process reports to the session's one Prefect server (``tests.cli``'s, which the runs
    started as processes share: starting another costs ~10 CPU-s)."""
    from prefect.context import refresh_global_settings_context

    from tests.cli import shared_prefect_api

    os.environ.update(
        {
            "PREFECT_API_URL": shared_prefect_api(),
            "PREFECT_HOME": str(tmp_path_factory.mktemp("prefect-home")),
            "DO_NOT_TRACK": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
            "PREFECT_LOGGING_TO_API_ENABLED": "false",
        }
    )
    refresh_global_settings_context()  # Prefect read its settings when it was imported
    yield


@pytest.fixture(scope="session")
def corpus(tmp_path_factory, sandbox) -> Path:
    """The small real corpus of tests/corpus.py, made once per session: read it, never write it
    (``corpus_copy`` is yours to change)."""
    from tests.corpus import make_corpus

    return make_corpus(tmp_path_factory.mktemp("corpus") / "data", sandbox)


@pytest.fixture
def corpus_copy(corpus, tmp_path) -> Path:
    """A copy of the session's corpus in this test's folder, to write to."""
    return Path(shutil.copytree(corpus, tmp_path / "data", symlinks=True))


def _tier(item: pytest.Item) -> str | None:
    parts = item.path.parts[len(Path(__file__).parent.parts) :]
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


def _start_order(item: pytest.Item) -> tuple[int, int]:
    """The slowest files first, then by tier: under xdist a long file started last is the tail."""
    name = item.path.name
    slow = SLOWEST_FILES.index(name) if name in SLOWEST_FILES else len(SLOWEST_FILES)
    return slow, START_ORDER.index(_tier(item) or "unit")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark each test with its tier; stretch per-test timeouts by the measured start-up (a busy
    machine is slow in-process too); order the files so the slowest start first (the sort is
    stable: a file stays together)."""
    items.sort(key=_start_order)
    tiers = {item: _tier(item) for item in items}
    for item, tier in tiers.items():
        if tier:
            item.add_marker(tier)
    scale, default = time_scale(), float(config.getini("timeout") or 0)
    if scale > 1:
        for item in items:
            marker = item.get_closest_marker("timeout")
            kwargs = dict(marker.kwargs) if marker else {}
            seconds = kwargs.pop("timeout", marker.args[0] if marker and marker.args else default)
            if seconds:
                item.add_marker(pytest.mark.timeout(float(seconds) * scale, **kwargs), append=False)


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: one worker more than the cores. A quarter of the suite's time is spent
    waiting (on runs, servers and hosts it started), so a third worker on two cores fills some
    of it: CI's whole run took 518, 533 and 553 s against 545, 550 and 603 s with two workers
    (a 2-core machine, the same tests)."""
    return (os.cpu_count() or 1) + 1


def pytest_runtest_setup(item):
    if _tier(item) == "unit" and (asked := PROCESS_FIXTURES & set(item.fixturenames)):
        pytest.fail(
            f"a unit test starts no process, but this one asks for {sorted(asked)}: "
            "move it to tests/sandbox or tests/e2e",
            pytrace=False,
        )
