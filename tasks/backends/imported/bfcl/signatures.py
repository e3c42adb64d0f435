"""The environment's tool methods, written from BFCL's function docs and method signatures, so
envmill's schemas from docstrings (tasks/envs/reading.py) say what BFCL's docs say: the method's
parameter order and defaults, the doc's types (as annotations) and descriptions (as ``Args:``)."""

from __future__ import annotations

import ast
import re
from typing import Any

from envmill.tasks.backends.imported.bfcl.transform import AdaptError

SCALARS = {
    "string": "str",
    "integer": "int",
    "float": "float",
    "number": "float",
    "boolean": "bool",
    "dict": "dict",
    "object": "dict",
    "any": "Any",
}


def annotation_of(schema: dict[str, Any]) -> str:
    """A Python annotation whose JSON Schema (as envmill derives it) is ``schema``'s type."""
    kind = schema.get("type", "any")
    if kind in ("array", "tuple"):
        items = schema.get("items")
        return f"list[{annotation_of(items)}]" if isinstance(items, dict) else "list"
    if kind not in SCALARS:
        raise AdaptError(f"BFCL type {kind!r} has no Python annotation")
    return SCALARS[kind]


def tool_method(
    doc: dict[str, Any], method: ast.FunctionDef, class_name: str, attribute: str
) -> list[str]:
    """The lines (indented for a class body) of one tool that runs BFCL's method."""
    name = doc["name"]
    params = doc["parameters"].get("properties", {})
    signature, call = ["self"], []
    for arg, default in _arguments(method):
        schema = params.get(arg)
        if schema is None:
            raise AdaptError(f"{class_name}.{name}: parameter {arg!r} is not in BFCL's docs")
        annotation = annotation_of(schema)
        if default is None:
            signature.append(f"{arg}: {annotation}")
        else:
            text = ast.unparse(default)
            nullable = " | None" if text == "None" and annotation != "Any" else ""
            signature.append(f"{arg}: {annotation}{nullable} = {text}")
        call.append(f"{arg}={arg}")
    missing = sorted(set(params) - {a for a, _ in _arguments(method)})
    if missing:
        raise AdaptError(f"{class_name}.{name}: BFCL's docs name {missing[0]!r}, not a parameter")
    body = [
        f"    def {name}({', '.join(signature)}) -> dict:",
        *_docstring(doc, params),
        f"        api = open_instance({class_name!r}, self.{attribute})",
        "        try:",
        f"            result = api.{name}({', '.join(call)})",
        "        except Exception as error:",
        f"            self.{attribute} = encode_fields(fields_{class_name}(api), BFCL_KINDS)",
        '            return {"success": False, "error": f"Error during execution: {error}"}',
        f"        self.{attribute} = encode_fields(fields_{class_name}(api), BFCL_KINDS)",
        "        return tool_result(result)",
    ]
    return body


def _arguments(method: ast.FunctionDef) -> list[tuple[str, ast.expr | None]]:
    args = method.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise AdaptError(f"{method.name}: only plain parameters can be adapted")
    positional = args.args[1:]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    return [(a.arg, d) for a, d in zip(positional, [*defaults, *args.defaults], strict=True)]


def _docstring(doc: dict[str, Any], params: dict[str, Any]) -> list[str]:
    lines = ['        """' + _text(doc.get("description", doc["name"]))]
    if params:
        lines += ["", "        Args:"]
        for arg, schema in params.items():
            kind = schema.get("type", "any")
            lines.append(f"            {arg} ({kind}): {_text(schema.get('description', arg))}")
    lines.append('        """')
    return lines


def _text(text: str) -> str:
    """One line, safe inside a triple-quoted docstring."""
    collapsed = re.sub(r"\s+", " ", str(text)).strip()
    return collapsed.replace("\\", "\\\\").replace('"""', "'''")
