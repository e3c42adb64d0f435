"""The installed ``bfcl_eval`` package read as data: tasks, ground truth, function docs and the
source text of the multi-turn classes, found without importing any of its modules (its
``__init__`` chain pulls model handlers; its class modules run nothing we need here).

Every problem is one line: a missing package names the install command, a file of another shape
names the file and line, another version names both versions.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envmill.schemas.benchmarks import BFCL_EVAL_VERSION

BFCL_VERSION = BFCL_EVAL_VERSION
INSTALL_HINT = f"pip install --no-deps bfcl-eval=={BFCL_VERSION} mpmath==1.3.0"
CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_param",
    "multi_turn_miss_func",
    "multi_turn_long_context",
)
# bfcl_eval/constants/executable_backend_config.py, read as data: class -> (module, func doc)
CLASS_FILES: dict[str, tuple[str, str]] = {
    "GorillaFileSystem": ("gorilla_file_system", "gorilla_file_system.json"),
    "MathAPI": ("math_api", "math_api.json"),
    "MessageAPI": ("message_api", "message_api.json"),
    "TwitterAPI": ("posting_api", "posting_api.json"),
    "TicketAPI": ("ticket_api", "ticket_api.json"),
    "TradingBot": ("trading_bot", "trading_bot.json"),
    "TravelAPI": ("travel_booking", "travel_booking.json"),
    "VehicleControlAPI": ("vehicle_control", "vehicle_control.json"),
}
STATELESS_CLASSES = frozenset({"MathAPI"})
SOURCE_DIR = "eval_checker/multi_turn_eval/func_source_code"


class BfclDataError(ValueError):
    """The BFCL package is missing, of another version, or a file has another shape."""


@dataclass(frozen=True)
class BfclTask:
    """One multi-turn task with its ground truth.

    ``turns`` holds each turn's user text, None where the turn has no message (miss_func adds a
    function there instead); ``ground_truth`` holds each turn's call strings.
    """

    id: str
    category: str
    turns: list[str | None]
    involved_classes: list[str]
    initial_config: dict[str, Any]
    ground_truth: list[list[str]]
    excluded_function: list[str]
    missed_function: dict[str, list[str]]


def package_root() -> Path:
    """The installed ``bfcl_eval`` folder, at the pinned version."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise BfclDataError(f"the BFCL package (bfcl_eval) is not installed: {INSTALL_HINT}")
    try:
        version = importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    if version != BFCL_VERSION:
        raise BfclDataError(
            f"bfcl-eval {version} is installed, envmill reads {BFCL_VERSION}: {INSTALL_HINT}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def read_tasks(category: str) -> list[BfclTask]:
    """Every task of a multi-turn category, with its ground truth, in file order."""
    if category not in CATEGORIES:
        raise BfclDataError(f"unknown BFCL category {category!r}; known: {', '.join(CATEGORIES)}")
    data = package_root() / "data"
    answers = {
        row["id"]: _ground_truth(row, path, line)
        for path, line, row in _json_lines(data / "possible_answer" / f"BFCL_v4_{category}.json")
    }
    tasks = []
    for path, line, row in _json_lines(data / f"BFCL_v4_{category}.json"):
        if row.get("id") not in answers:
            raise BfclDataError(f"{path}:{line}: task {row.get('id')!r} has no ground truth")
        tasks.append(_task(row, category, answers[row["id"]], path, line))
    return tasks


def read_func_docs(class_name: str) -> list[dict[str, Any]]:
    """BFCL's function docs of one class, in file order."""
    path = package_root() / "data" / "multi_turn_func_doc" / _class_files(class_name)[1]
    docs = []
    for where, line, row in _json_lines(path):
        if not isinstance(row.get("name"), str) or not isinstance(row.get("parameters"), dict):
            raise BfclDataError(f"{where}:{line}: a function doc needs a name and parameters")
        docs.append(row)
    return docs


@functools.cache
def read_class_source(module: str) -> str:
    """The source text of a module of ``func_source_code`` (``"long_context"`` included)."""
    path = package_root() / SOURCE_DIR / f"{module}.py"
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BfclDataError(f"{path}: cannot read ({exc.strerror})") from None


def class_module(class_name: str) -> str:
    return _class_files(class_name)[0]


def _class_files(class_name: str) -> tuple[str, str]:
    if class_name not in CLASS_FILES:
        raise BfclDataError(f"unknown BFCL class {class_name!r}; known: {', '.join(CLASS_FILES)}")
    return CLASS_FILES[class_name]


def _json_lines(path: Path) -> list[tuple[Path, int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BfclDataError(f"{path}: cannot read ({exc.strerror})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BfclDataError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
        if not isinstance(row, dict):
            raise BfclDataError(f"{path}:{number}: expected a JSON object")
        rows.append((path, number, row))
    return rows


def _ground_truth(row: dict[str, Any], path: Path, line: int) -> list[list[str]]:
    truth = row.get("ground_truth")
    if not isinstance(truth, list) or not all(
        isinstance(turn, list) and all(isinstance(call, str) for call in turn) for turn in truth
    ):
        raise BfclDataError(f"{path}:{line}: ground_truth must be a list of lists of strings")
    return truth


def _task(
    row: dict[str, Any], category: str, truth: list[list[str]], path: Path, line: int
) -> BfclTask:
    question, classes = row.get("question"), row.get("involved_classes")
    if not isinstance(question, list) or not isinstance(classes, list):
        raise BfclDataError(f"{path}:{line}: a task needs question and involved_classes lists")
    if len(question) != len(truth):
        raise BfclDataError(
            f"{path}:{line}: {len(question)} turns but {len(truth)} ground-truth turns"
        )
    for name in classes:
        if name not in CLASS_FILES:
            raise BfclDataError(f"{path}:{line}: unknown class {name!r}")
    return BfclTask(
        id=str(row["id"]),
        category=category,
        turns=[_turn_text(turn, path, line) for turn in question],
        involved_classes=list(classes),
        initial_config=dict(row.get("initial_config") or {}),
        ground_truth=truth,
        excluded_function=list(row.get("excluded_function") or []),
        missed_function={str(k): list(v) for k, v in (row.get("missed_function") or {}).items()},
    )


@functools.cache
def added_functions_prompt() -> str:
    """What BFCL's inference says in a turn that adds the missed functions (miss_func), read
    from its own constants as data: ``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``."""
    path = package_root() / "constants" / "default_prompts.py"
    name = "DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError) as exc:
        raise BfclDataError(f"{path}: cannot read BFCL's prompts: {exc}") from None
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == name:
            try:
                text = ast.literal_eval(node.value)
            except ValueError:
                break
            if isinstance(text, str) and text.strip():
                return text
    raise BfclDataError(f"{path}: no {name} string")


def _turn_text(turn: Any, path: Path, line: int) -> str | None:
    if not isinstance(turn, list):
        raise BfclDataError(f"{path}:{line}: each turn must be a list of messages")
    texts = [
        m["content"]
        for m in turn
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str)
    ]
    return "\n".join(texts) if texts else None
