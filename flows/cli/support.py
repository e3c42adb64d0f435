"""What every command shares: one-line errors, JSON output, reading user files."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer


class CommandError(Exception):
    """A problem the user can fix; printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = 2) -> NoReturn:
    raise CommandError(message, code)


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def read_source(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        fail(f"no such file: {path}")
    except IsADirectoryError:
        fail(f"{path} is a directory, not a Python module")
    except UnicodeDecodeError:
        fail(f"{path} is not UTF-8 text")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror}")


MAX_JSON_DEPTH = 64  # deeper than any scenario or argument envmill writes


def load_json_file(path: Path, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value in ``path``; one line naming the file when it is not JSON or is nested
    deeper than ``max_depth`` (a 200,000-deep file ended in ``RecursionError``: issue 24)."""
    try:
        value = json.loads(read_source(path))
    except RecursionError:
        fail(f"{path} is nested deeper than {max_depth} levels")
    except ValueError as exc:
        fail(f"{path} is not valid JSON: {exc}")
    if json_depth(value) > max_depth:
        fail(f"{path} is nested deeper than {max_depth} levels")
    return value


def json_depth(value: Any) -> int:
    """How deep lists and objects nest in ``value`` (a number or text: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is not None:
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in children)
    return deepest


def non_finite_at(value: Any, where: str = "") -> str | None:
    """The path of the first NaN or infinity in ``value`` ("reference_solution[0].arguments.x")."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "the value"
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in items:
        found = non_finite_at(
            child, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"
        )
        if found is not None:
            return found.lstrip(".")
    return None


def parse_json_object(text: str, what: str) -> dict[str, Any]:
    """``text`` is a JSON object, or ``@path`` to a file holding one."""
    if text.startswith("@"):
        text = read_source(Path(text[1:]))
    try:
        value = json.loads(text)
    except ValueError as exc:
        fail(f"{what} is not valid JSON: {exc}")
    if not isinstance(value, dict):
        fail(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def echo_error(message: str, prefix: str = "error") -> None:
    print(f"envmill: {prefix}: {message}", file=sys.stderr)
