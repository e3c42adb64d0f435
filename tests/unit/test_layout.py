"""The layout's rules, enforced: one direction of imports, no Prefect in tasks/, lint clean."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# folder -> envmill packages it must not import
FORBIDDEN = {
    "schemas": ("envmill.tasks", "envmill.warehouse", "envmill.flows", "envmill.deployments"),
    "tasks": (
        "envmill.warehouse",
        "envmill.flows",
        "envmill.deployments",
        "prefect",
        "prefect_dask",
    ),
    "warehouse": ("envmill.tasks", "envmill.flows", "envmill.deployments", "prefect"),
    "flows": ("envmill.deployments",),
}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_imports_go_one_way(folder):
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / folder).rglob("*.py"))
        for name in _imports(path)
        if name.startswith(FORBIDDEN[folder])
    ]
    assert offenders == []


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
