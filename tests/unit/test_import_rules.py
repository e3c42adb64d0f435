"""The house's import directions (DESIGN §2), each rule shown to catch a deliberate violation.

Shared stages never import a backend; a backend never imports another (only the registry knows
them all); only the CLI and tests import the offline model; ``tasks/`` imports no Prefect and no
Dask; the LLM client knows no stage; ``deployments/`` imports only ``flows/``; ``schemas/``
imports nothing of envmill's and ``warehouse/`` only ``schemas/`` (and the stdlib-only reader of
a data folder's files, ``tasks/core/regular_file``, which the LLM cache shares).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED_STAGES = ("core", "envs", "sandbox", "certify", "rollout", "export", "dedupe", "llm")
BACKENDS = ("procedural", "llm")


@dataclass(frozen=True)
class Rule:
    """Files under ``folders`` (minus ``exempt``) may import no module under ``forbidden``,
    except those under ``allowed``."""

    name: str
    folders: tuple[str, ...]
    forbidden: tuple[str, ...]
    allowed: tuple[str, ...] = ()
    exempt: tuple[str, ...] = ()


RULES = [
    Rule(
        "shared stages import no backend",
        tuple(f"tasks/{stage}" for stage in SHARED_STAGES),
        ("envmill.tasks.backends",),
    ),
    Rule(
        "the seam knows no backend (only the registry does)",
        ("tasks/backends/base.py", "tasks/backends/__init__.py"),
        tuple(f"envmill.tasks.backends.{name}" for name in BACKENDS),
    ),
    Rule(
        "the pipeline knows only the seam",
        ("tasks/pipeline.py",),
        tuple(f"envmill.tasks.backends.{name}" for name in BACKENDS),
    ),
    *(
        Rule(
            f"the {name} backend imports no other backend",
            (f"tasks/backends/{name}",),
            tuple(f"envmill.tasks.backends.{other}" for other in BACKENDS if other != name)
            + ("envmill.tasks.offline_llm",),
        )
        for name in BACKENDS
    ),
    Rule(
        "only the CLI and tests import the offline model",
        ("tasks", "flows", "warehouse", "schemas", "deployments"),
        ("envmill.tasks.offline_llm",),
        exempt=("tasks/offline_llm", "flows/cli"),
    ),
    Rule(
        "tasks/ imports no Prefect and no Dask",
        ("tasks",),
        ("prefect", "prefect_dask", "distributed", "dask"),
    ),
    Rule(
        "the LLM client knows no stage",
        ("tasks/llm",),
        ("envmill.tasks",),
        allowed=("envmill.tasks.llm", "envmill.tasks.core"),
    ),
    Rule(
        "deployments/ imports only flows/",
        ("deployments",),
        ("envmill",),
        allowed=("envmill.flows", "envmill.deployments"),
    ),
    Rule("schemas/ imports nothing of envmill's", ("schemas",), ("envmill",), ("envmill.schemas",)),
    Rule(
        "warehouse/ imports only schemas/",
        ("warehouse",),
        ("envmill", "prefect"),
        allowed=("envmill.warehouse", "envmill.schemas", "envmill.tasks.core.regular_file"),
    ),
    Rule(
        "tasks/ imports no warehouse, flows or deployments",
        ("tasks",),
        ("envmill.warehouse", "envmill.flows", "envmill.deployments"),
    ),
    Rule("flows/ imports no deployments", ("flows",), ("envmill.deployments",)),
]


def _module_name(path: Path, root: Path) -> str:
    """The installed name of ``path`` under ``root`` (``tasks/a/b.py`` is ``envmill.tasks.a.b``,
    a package's ``__init__.py`` the package)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(("envmill", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def _absolute(node: ast.ImportFrom, path: Path, root: Path) -> str:
    """The module a ``from`` import names, relative ones (``from ..x import y``) resolved."""
    if not node.level:
        return node.module or ""
    package = _module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


DYNAMIC = {"import_module", "__import__"}  # importlib.import_module("a.b"), __import__("a.b")


def _dynamic(node: ast.Call) -> str | None:
    """The module a call imports by a constant name, if it is one."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0] if node.args else None
    if name in DYNAMIC and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def imported_modules(path: Path, root: Path = ROOT) -> list[tuple[str, ...]]:
    """Per import statement, at any depth (lazy imports count too), the modules it may load:
    ``from a.b import c`` may load ``a.b`` or ``a.b.c``; relative imports count as the absolute
    names they resolve to, and ``importlib.import_module``/``__import__`` of a constant name
    as an import of it."""
    found: list[tuple[str, ...]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name,) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, path, root)
            found.append((module, *(f"{module}.{a.name}" for a in node.names)))
        elif isinstance(node, ast.Call) and (dynamic := _dynamic(node)):
            found.append((dynamic,))
    return found


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _files(root: Path, folders: tuple[str, ...]) -> list[Path]:
    found = []
    for folder in folders:
        target = root / folder
        found += [target] if target.is_file() else sorted(target.rglob("*.py"))
    return found


def violations(rule: Rule, root: Path = ROOT) -> list[str]:
    """``file imports module`` for every import that breaks ``rule`` under ``root``."""
    found = []
    for path in _files(root, rule.folders):
        relative = path.relative_to(root).as_posix()
        if any(relative == e or relative.startswith(e + "/") for e in rule.exempt):
            continue
        for statement in imported_modules(path, root):
            bad = [
                n for n in statement if _under(n, rule.forbidden) and not _under(n, rule.allowed)
            ]
            if bad:
                found.append(f"{relative} imports {bad[-1]}")
    return found


@pytest.mark.parametrize("rule", RULES, ids=[rule.name for rule in RULES])
def test_the_tree_keeps_the_rule(rule):
    assert violations(rule) == []


# one deliberate violation per rule: (file written, line it holds)
BREACHES = {
    "shared stages import no backend": (
        "tasks/certify/x.py",
        "from envmill.tasks.backends.procedural.catalog import load_domain",
    ),
    "the seam knows no backend (only the registry does)": (
        "tasks/backends/base.py",
        "from envmill.tasks.backends.procedural.manifest import CompiledEnvironment",
    ),
    "the pipeline knows only the seam": (
        "tasks/pipeline.py",
        "import envmill.tasks.backends.llm.backend",
    ),
    "the procedural backend imports no other backend": (
        "tasks/backends/procedural/x.py",
        "from envmill.tasks.backends.llm import hybrid",
    ),
    "the llm backend imports no other backend": (
        "tasks/backends/llm/scengen/x.py",
        "from envmill.tasks.backends.procedural.state.fill import build_initial_state",
    ),
    "only the CLI and tests import the offline model": (
        "flows/fan_out.py",
        "from envmill.tasks.offline_llm import OfflineModel",
    ),
    "tasks/ imports no Prefect and no Dask": (
        "tasks/llm/limits.py",
        "def gate():\n    from distributed import Semaphore\n    return Semaphore",
    ),
    "the LLM client knows no stage": (
        "tasks/llm/stages.py",
        "from envmill.tasks.backends.llm.skelbuilder.examples import STAGE_EXAMPLES",
    ),
    "deployments/ imports only flows/": (
        "deployments/x.py",
        "from envmill.warehouse.store import resolve_data_dir",
    ),
    "schemas/ imports nothing of envmill's": ("schemas/x.py", "import envmill.tasks.core"),
    "warehouse/ imports only schemas/": ("warehouse/x.py", "from envmill.tasks import pipeline"),
    "tasks/ imports no warehouse, flows or deployments": (
        "tasks/export/x.py",
        "from envmill.warehouse import views",
    ),
    "flows/ imports no deployments": ("flows/x.py", "import envmill.deployments.checks"),
}


def test_every_rule_has_a_breach():
    assert sorted(BREACHES) == sorted(rule.name for rule in RULES)


@pytest.mark.parametrize("rule", RULES, ids=[rule.name for rule in RULES])
def test_each_rule_catches_its_breach(rule, tmp_path):
    relative, line = BREACHES[rule.name]
    (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / relative).write_text(line + "\n")
    clean = tmp_path / relative.replace(".py", "_ok.py")
    clean.write_text("import json\n")
    found = violations(rule, tmp_path)
    assert len(found) == 1 and found[0].startswith(relative + " imports ")


# imports the plain ``import``/``from envmill...`` form does not spell: (file, line, rule broken)
DISGUISED = [
    (
        "tasks/backends/llm/x.py",
        "from ..procedural import catalog",
        "the llm backend imports no other backend",
    ),
    (
        "tasks/backends/llm/scengen/x.py",
        "from ...procedural.catalog import load_domain",
        "the llm backend imports no other backend",
    ),
    (
        "tasks/backends/procedural/__init__.py",
        "from ..llm import hybrid",
        "the procedural backend imports no other backend",
    ),
    (
        "tasks/backends/llm/x.py",
        "import importlib\nimportlib.import_module('envmill.tasks.backends.procedural.catalog')",
        "the llm backend imports no other backend",
    ),
    (
        "tasks/certify/x.py",
        "__import__('envmill.tasks.backends.procedural')",
        "shared stages import no backend",
    ),
    (
        "tasks/core/x.py",
        "from importlib import import_module\nimport_module('distributed')",
        "tasks/ imports no Prefect and no Dask",
    ),
]


@pytest.mark.parametrize(("relative", "line", "name"), DISGUISED)
def test_a_disguised_import_is_caught(relative, line, name, tmp_path):
    (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / relative).write_text(line + "\n")
    rule = next(rule for rule in RULES if rule.name == name)
    found = violations(rule, tmp_path)
    assert len(found) == 1 and found[0].startswith(relative + " imports "), found


def test_a_relative_import_within_a_backend_is_allowed(tmp_path):
    relative = tmp_path / "tasks/backends/llm/scengen/x.py"
    relative.parent.mkdir(parents=True)
    relative.write_text("from ..stages import ALL_STAGES\nfrom . import y\n")
    assert [v for rule in RULES for v in violations(rule, tmp_path)] == []
