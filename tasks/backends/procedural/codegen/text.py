"""Small text helpers for generated code: literals, f-strings, docstrings, identifiers."""

from __future__ import annotations

import json
import string
import textwrap
from collections.abc import Callable
from typing import Any

from envmill.tasks.backends.procedural.spec.domain import ValueSpec

INDENT = "    "
PY_TYPES = {
    "str": "str",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "enum": "str",
    "date": "str",
    "datetime": "str",
    "ref": "str",
}


def lit(value: Any) -> str:
    """A Python literal with double-quoted strings (json.dumps quoting is valid Python)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, tuple):
        inner = ", ".join(lit(item) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


def fstring_text(text: str) -> str:
    """Escape literal text for the inside of a double-quoted f-string."""
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    return escaped.replace("{", "{{").replace("}", "}}")


def fstring(template: str, render: Callable[[str], str]) -> str:
    """Turn ``"Loan {loan_id} returned"`` into an f-string, each field rendered to an expression."""
    parts: list[str] = []
    has_field = False
    for text, field, _, _ in string.Formatter().parse(template):
        parts.append(fstring_text(text))
        if field is not None:
            parts.append("{" + render(field) + "}")
            has_field = True
    body = "".join(parts)
    return f'f"{body}"' if has_field else f'"{body}"'


def error_return(message: str) -> str:
    """``return {"success": False, "error": <message expr>}``."""
    return f'return {{"success": False, "error": {message}}}'


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def py_type(spec: ValueSpec, optional: bool = False) -> str:
    base = PY_TYPES[spec.type]
    return f"{base} | None" if optional or spec.nullable else base


def indent(lines: list[str], level: int) -> list[str]:
    pad = INDENT * level
    return [pad + line if line else "" for line in lines]


def docstring(summary: str, body: list[str], args: list[tuple[str, str]], level: int) -> list[str]:
    """A Google-style docstring: summary, wrapped paragraphs, then ``Args:`` lines."""
    width = 96 - len(INDENT) * level
    lines = ['"""' + summary.strip().replace('"""', "'''")]
    for paragraph in body:
        lines += ["", *textwrap.wrap(paragraph, width)]
    if args:
        lines += ["", "Args:"]
        for head, text in args:
            wrapped = textwrap.wrap(f"{head}: {text}", width - 4, subsequent_indent=INDENT)
            lines += [INDENT + line for line in wrapped]
    if len(lines) == 1:
        return [lines[0] + '"""']
    return [*lines, '"""']


def sentence(text: str) -> str:
    """``text`` capitalized and ending with a full stop."""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


def human_list(values: list[Any]) -> str:
    return ", ".join(str(value) for value in values)
