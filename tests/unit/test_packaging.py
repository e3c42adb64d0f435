"""What a wheel holds: every package discovered, every data file matched by a package-data
pattern, and every ``tasks/`` package named in the README's layout table."""

from __future__ import annotations

import fnmatch
import runpy
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROOTS = ("schemas", "tasks", "warehouse", "flows", "deployments")


def _package_dirs() -> list[Path]:
    return sorted(
        init.parent
        for root in ROOTS
        for init in (ROOT / root).rglob("__init__.py")
        if "__pycache__" not in init.parts
    )


def _dotted(folder: Path) -> str:
    return "envmill." + ".".join(folder.relative_to(ROOT).parts)


def test_setup_discovers_every_package():
    discovered = runpy.run_path(str(ROOT / "setup.py"), run_name="not_main")["discovered"]
    packages, package_dir = discovered()
    assert {_dotted(folder) for folder in _package_dirs()} | {"envmill"} == set(packages)
    assert {package_dir[f"envmill.{root}"] for root in ROOTS} == set(ROOTS)


def test_every_data_file_ships():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["*"]
    packages = set(_package_dirs())
    missing = []
    for root in ROOTS:
        for path in (ROOT / root).rglob("*"):
            if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
                continue
            owner = next(p for p in path.parents if p in packages)
            relative = path.relative_to(owner).as_posix()
            if not any(fnmatch.fnmatch(relative, pattern) for pattern in patterns):
                missing.append(path.relative_to(ROOT).as_posix())
    assert missing == []


def test_the_readme_names_every_tasks_package():
    readme = (ROOT / "README.md").read_text()
    tasks = ROOT / "tasks"
    folders = [p for p in _package_dirs() if p.parent in (tasks, tasks / "backends")]
    unnamed = [
        f"{p.relative_to(ROOT).as_posix()}/"
        for p in folders
        if f"`{p.relative_to(ROOT).as_posix()}/`" not in readme and f"`{p.name}/`" not in readme
    ]
    assert folders and unnamed == []
