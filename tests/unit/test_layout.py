"""The tree as a whole: lint clean and no path of this machine in it (the import directions are
``test_import_rules.py``'s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_lint_is_clean():
    command = [sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]


def test_no_machine_paths_in_the_repository():
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    hits = [
        name
        for name in tracked
        if (ROOT / name).is_file() and str(ROOT) in (ROOT / name).read_text(errors="ignore")
    ]
    assert hits == []
