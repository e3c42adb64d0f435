"""BFCL call strings (``"mv(source='a', destination='temp')"``, ``"sort('final_report.pdf')"``)
as envmill steps (``{"tool": name, "arguments": {...}}``) and back.

Parsing reads the syntax tree only (never ``eval``): a string is accepted when it is one plain
call of a known tool whose arguments are literals; positional arguments take the names of the
tool's parameters in order. Rendering writes keyword arguments with ``repr`` of the JSON values,
which BFCL's executor ``eval``s.
"""

from __future__ import annotations

import ast
from typing import Any

MAX_CALL_CHARS = 20_000


class CallError(ValueError):
    """A call string envmill does not accept; the message is one line."""


def parse_call(text: str, parameters: dict[str, list[str]]) -> dict[str, Any]:
    """One BFCL call string as a step; ``parameters`` maps each tool to its parameter names."""
    if not isinstance(text, str) or len(text) > MAX_CALL_CHARS:
        raise CallError("a call must be a string of at most 20000 characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise CallError(f"not a Python call: {text[:80]!r}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise CallError(f"not a plain call of a tool: {text[:80]!r}")
    tool = call.func.id
    if tool not in parameters:
        raise CallError(f"unknown tool {tool!r} in {text[:80]!r}")
    names = parameters[tool]
    if len(call.args) > len(names):
        raise CallError(f"{tool} takes {len(names)} arguments, {len(call.args)} given")
    arguments: dict[str, Any] = {}
    pairs = list(zip(names, call.args, strict=False))
    pairs += [(k.arg, k.value) for k in call.keywords]
    for name, node in pairs:
        if name is None or isinstance(node, ast.Starred):
            raise CallError(f"{tool}: */** arguments are not accepted")
        if name not in names:
            raise CallError(f"{tool} has no parameter {name!r}")
        if name in arguments:
            raise CallError(f"{tool}: argument {name!r} given twice")
        arguments[name] = _literal(node, tool)
    return {"tool": tool, "arguments": arguments}


def render_call(step: dict[str, Any]) -> str:
    """A step as a BFCL call string, keyword arguments in the step's order."""
    tool, arguments = step.get("tool"), step.get("arguments", {})
    if not isinstance(tool, str) or not tool.isidentifier() or not isinstance(arguments, dict):
        raise CallError(f"not a step: {step!r:.80}")
    for name in arguments:
        if not isinstance(name, str) or not name.isidentifier():
            raise CallError(f"{tool}: argument name {name!r} is not an identifier")
    inner = ", ".join(f"{name}={value!r}" for name, value in arguments.items())
    return f"{tool}({inner})"


def _literal(node: ast.expr, tool: str) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise CallError(
            f"{tool}: arguments must be literals, not {ast.unparse(node)[:60]!r}"
        ) from None
    return _json(value, tool)


def _json(value: Any, tool: str) -> Any:
    """Literals as JSON values: tuples become lists; sets, bytes and complex are refused."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_json(item, tool) for item in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _json(v, tool) for k, v in value.items()}
    raise CallError(f"{tool}: argument {value!r:.60} is not a JSON value")
