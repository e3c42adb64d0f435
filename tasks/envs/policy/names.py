"""What the policy refuses, by name: imports, builtins, attributes, and the helpers that judge
a name or a ``str.format`` template against those lists."""

from __future__ import annotations

import ast
import importlib
import re
import string
from collections.abc import Iterator
from typing import TypeGuard

from envmill.schemas.environment import PolicyViolation

MAX_SOURCE_BYTES = 256 * 1024

ALLOWED_IMPORTS: frozenset[str] = frozenset(
    {
        "__future__",
        "collections",
        "collections.abc",
        "copy",
        "dataclasses",
        "datetime",
        "decimal",
        "enum",
        "functools",
        "itertools",
        "json",
        "math",
        "re",
        "string",
        "typing",
    }
)

# Builtin names refused wherever they appear as a name, with why (shown in the message).
FORBIDDEN_BUILTINS: dict[str, str] = {
    "eval": "runs code from a string",
    "exec": "runs code from a string",
    "compile": "compiles code from a string",
    "__import__": "imports modules dynamically",
    "open": "does file I/O",
    "input": "reads stdin",
    "breakpoint": "starts a debugger",
    "help": "is interactive",
    "exit": "ends the process",
    "quit": "ends the process",
    "globals": "exposes namespaces",
    "locals": "exposes namespaces",
    "vars": "exposes namespaces",
    "memoryview": "exposes raw memory",
}
ATTR_FUNCS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# Builtins whose answers change from one process to the next (object addresses, and hashes
# derived from them): refused where the module does not bind the name itself.
NONDETERMINISTIC = {
    "id": "returns an object's address",
    "hash": "of an object depends on its address",
}
CLOCK_ATTRS = frozenset({"now", "today", "utcnow", "fromtimestamp", "utcfromtimestamp"})
FRAME_ATTRS = frozenset(
    {
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_back",
        "f_code",
        "f_trace",
        "tb_frame",
        "tb_next",
        "co_code",
        "co_consts",
        "co_names",
    }
)
# Attributes through which allowed modules reach dangerous ones (typing.sys, enum.bltns,
# collections._sys, enum.bltns, ...); tests/test_policy.py checks the list is complete.
MODULE_ATTRS = frozenset(
    {
        "sys",
        "_sys",
        "os",
        "_os",
        "builtins",
        "bltns",
        "_socket",
        "socket",
        "_thread",
        "threading",
        "types",
        "_types",
        "inspect",
        "io",
        "_io",
        "codecs",
        "contextlib",
        "copyreg",
        "operator",
        "_operator",
        "importlib",
        "gc",
        "subprocess",
        "signal",
        "ctypes",
        "marshal",
        "pickle",
    }
)
# Hooks that evaluate strings (annotations, forward references) as code.
STRING_EVAL = frozenset(
    {
        "get_type_hints",
        "get_annotations",
        "ForwardRef",
        "evaluate_forward_ref",
        "_eval_type",
        "_evaluate",
        "singledispatch",
        "singledispatchmethod",
        "make_dataclass",
    }
)
# Metaclasses reachable from allowed modules: calling one makes a class from a computed namespace
# (runtime-built dunder keys), which a class statement would show.
METACLASSES = frozenset({"ABCMeta", "EnumMeta", "EnumType"})
# typing.get_origin(typing.Type[int]) is ``type`` under another name.
TYPE_REACHERS = frozenset({"get_origin", "get_args"})
FORMAT_ATTRS = frozenset({"format", "format_map"})
FIELD_PART = re.compile(r"\.([^.\[]+)|\[([^\]]*)\]")
TOP_LEVEL_OK = (
    ast.Import,
    ast.ImportFrom,
    ast.ClassDef,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Assign,
    ast.AnnAssign,
    ast.Pass,
)
ASYNC_NODES = {
    ast.AsyncFunctionDef: "'async def'",
    ast.Await: "'await'",
    ast.AsyncFor: "'async for'",
    ast.AsyncWith: "'async with'",
}
STATEMENT_NAMES = {
    "Expr": "expression",
    "Call": "bare call",
    "Delete": "'del' statement",
    "AugAssign": "augmented assignment",
    "TryStar": "'try' statement",
}


def violation(rule: str, line: int, message: str) -> PolicyViolation:
    return PolicyViolation(rule=rule, line=line, message=message)


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def is_str_constant(node: ast.AST | None) -> TypeGuard[ast.Constant]:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def is_super_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def name_problem(name: str) -> tuple[str, str] | None:
    """(rule, message) for a name refused wherever it appears, as a name or an attribute."""
    if name in STRING_EVAL:
        return "string_eval", f"'{name}' evaluates strings as code"
    if name in TYPE_REACHERS:
        return "introspection", f"'{name}' hands out the classes behind hints, type itself"
    if name in METACLASSES:
        return (
            "metaclass",
            f"'{name}' makes classes from computed namespaces; use a class statement",
        )
    if name == "Formatter":
        return "format", "'Formatter' reaches attributes from templates; use an f-string"
    return None


def attr_problem(name: str) -> tuple[str, str] | None:
    """(rule, message) for a non-dunder attribute name the policy refuses, if any."""
    if name in CLOCK_ATTRS:
        return "clock", f"'{name}' reads the wall clock; use the current_time state attribute"
    if name in FRAME_ATTRS:
        return "introspection", f"attribute '{name}' exposes frames or code objects"
    if name in MODULE_ATTRS:
        return "module_attr", f"attribute '{name}' reaches a module outside the allow-list"
    return name_problem(name)


def template_refusals(text: str) -> Iterator[tuple[str, str]]:
    """(field, name) for each attribute or key a ``str.format`` template reaches that is refused."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return
    for _literal, field, spec, _conversion in parsed:
        reached = field or ""
        for attr, key in FIELD_PART.findall(reached):
            if is_dunder(attr or key) or (attr and attr_problem(attr)):
                yield reached, attr or key
        if spec and "{" in spec:
            yield from template_refusals(spec)


def import_message(module: str) -> str:
    """Why an import is refused and, for the modules models reach for, what to do instead."""
    allowed = ", ".join(sorted(ALLOWED_IMPORTS))
    hint = IMPORT_HINTS.get(module.split(".")[0])
    what = f"import of '{module}' is not allowed"
    return f"{what}: {hint} (allowed: {allowed})" if hint else f"{what} (allowed: {allowed})"


_IDS_HINT = (
    "make ids from a counter in the state instead (self.next_order_number, created in "
    "__init__: f'ORD-{self.next_order_number:04d}', then add 1)"
)
_CLOCK_HINT = (
    "take the time from the state instead (self.current_time, an ISO 8601 string created in "
    "__init__; datetime.fromisoformat(self.current_time))"
)
_CHOICE_HINT = (
    "choose deterministically from the state and the arguments instead (the first match in "
    "a sorted order, or a counter in the state)"
)
# What a model should use instead of the modules it most often imports (the repair message).
IMPORT_HINTS = {
    "uuid": _IDS_HINT,
    "hashlib": _IDS_HINT,
    "secrets": _CHOICE_HINT,
    "random": _CHOICE_HINT,
    "time": _CLOCK_HINT,
    "calendar": "compute dates with datetime and timedelta from self.current_time instead",
    "zoneinfo": "keep times as naive ISO 8601 strings in one zone instead",
    "logging": "return what happened in the tool result instead of logging it",
    "pathlib": "keep the data in instance attributes created in __init__ instead of files",
    "shutil": "keep the data in instance attributes created in __init__ instead of files",
    "sqlite3": "keep records in dicts of dicts created in __init__ instead of a database",
    "requests": "environment code has no network; keep the data it needs in the state",
    "urllib": "environment code has no network; keep the data it needs in the state",
}


NAMEDTUPLE_API = frozenset({"_asdict", "_replace", "_fields", "_field_defaults", "_make"})


def _private_names_of(modules: frozenset[str]) -> frozenset[str]:
    """Every single-underscore name an allowed module, or a class it defines, carries: the
    helpers that run text as code (``dataclasses._create_fn``), caches, and the like."""
    names = set()
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            members = [name] + (list(vars(value)) if isinstance(value, type) else [])
            names.update(n for n in members if n.startswith("_") and not is_dunder(n))
    return frozenset(names - NAMEDTUPLE_API)


MODULE_PRIVATE_NAMES = _private_names_of(ALLOWED_IMPORTS)
