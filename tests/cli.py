"""``envmill`` as its own process, for the tests that need one (a CLI smoke test, a signal, a
lock held by another process). Option validation runs in-process through ``call_main``."""

from __future__ import annotations

import os
import subprocess
import sys
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


def clean_env(tmp_path: Path) -> dict[str, str]:
    """This environment without Prefect/envmill/OpenAI settings, helper files under tmp_path."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "ENVMILL_", "OPENAI_"))
    }
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
