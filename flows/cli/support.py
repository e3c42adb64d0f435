"""What every command shares: one-line errors, JSON output, reading user files."""

from __future__ import annotations

import json
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
