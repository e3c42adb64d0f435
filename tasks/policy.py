"""Static policy for untrusted generated Python (DESIGN §3.1, §3.3, §5).

One AST pass over an environment module or a check source that collects *every* reason to refuse
it, each naming its line, so a generator can be told exactly what to fix. It is a filter with good
messages, not the security boundary (the process sandbox is), so it aims to be precise and never to
refuse ordinary environment code.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator, Sequence

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
_FORBIDDEN_BUILTINS: dict[str, str] = {
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
_ATTR_FUNCS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# Builtins whose answers change from one process to the next (object addresses, and hashes
# derived from them): refused where the module does not bind the name itself.
_NONDETERMINISTIC = {
    "id": "returns an object's address",
    "hash": "of an object depends on its address",
}
_CLOCK_ATTRS = frozenset({"now", "today", "utcnow", "fromtimestamp", "utcfromtimestamp"})
_FRAME_ATTRS = frozenset(
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
_MODULE_ATTRS = frozenset(
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
_STRING_EVAL = frozenset(
    {
        "get_type_hints",
        "get_annotations",
        "ForwardRef",
        "evaluate_forward_ref",
        "_eval_type",
        "_evaluate",
        "singledispatch",
        "singledispatchmethod",
    }
)
_FORMAT_ATTRS = frozenset({"format", "format_map"})
_FIELD_PART = re.compile(r"\.([^.\[]+)|\[([^\]]*)\]")
_TOP_LEVEL_OK = (
    ast.Import,
    ast.ImportFrom,
    ast.ClassDef,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Assign,
    ast.AnnAssign,
    ast.Pass,
)
_ASYNC_NODES = {
    ast.AsyncFunctionDef: "'async def'",
    ast.Await: "'await'",
    ast.AsyncFor: "'async for'",
    ast.AsyncWith: "'async with'",
}
_STATEMENT_NAMES = {
    "Expr": "expression",
    "Call": "bare call",
    "Delete": "'del' statement",
    "AugAssign": "augmented assignment",
    "TryStar": "'try' statement",
}


def check_module(source: str) -> list[PolicyViolation]:
    """Every policy violation of an environment module, sorted by line (empty when it passes)."""
    tree, early = _parse(source)
    if tree is None:
        return early
    return _sorted([*_visit(tree), *_check_top_level(tree)])


def check_check_source(source: str) -> list[PolicyViolation]:
    """Every policy violation of a check source, which must define ``check(initial, final)``."""
    tree, early = _parse(source)
    if tree is None:
        return early
    return _sorted(
        [*_visit(tree), *_check_top_level(tree), *_check_signature(tree), *_check_purity(tree)]
    )


def describe(violations: Sequence[PolicyViolation]) -> str:
    """One line for a failure row: the first violation and how many more there are."""
    if not violations:
        return "no policy violations"
    more = len(violations) - 1
    return f"{violations[0]} (and {more} more)" if more else str(violations[0])


def _violation(rule: str, line: int, message: str) -> PolicyViolation:
    return PolicyViolation(rule=rule, line=line, message=message)


def _parse(source: str) -> tuple[ast.Module | None, list[PolicyViolation]]:
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_SOURCE_BYTES:
        return None, [
            _violation("size", 1, f"source is {size} bytes, over the limit of {MAX_SOURCE_BYTES}")
        ]
    try:
        return ast.parse(source), []
    except SyntaxError as error:
        return None, [_violation("syntax", error.lineno or 1, f"syntax error: {error.msg}")]
    except (ValueError, RecursionError, MemoryError) as error:
        return None, [_violation("syntax", 1, f"cannot parse: {type(error).__name__}: {error}")]


def _visit(tree: ast.Module) -> list[PolicyViolation]:
    visitor = _PolicyVisitor(_bound_names(tree))
    try:
        visitor.visit(tree)
    except RecursionError:
        return [_violation("size", 1, "source is nested too deeply to check")]
    return [violation for _, violation in sorted(visitor.found, key=lambda f: f[0])]


def _sorted(found: list[PolicyViolation]) -> list[PolicyViolation]:
    return sorted(dict.fromkeys(found), key=lambda v: v.line)


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _is_str_constant(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_super_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def _name_problem(name: str) -> tuple[str, str] | None:
    """(rule, message) for a name refused wherever it appears, as a name or an attribute."""
    if name in _STRING_EVAL:
        return "string_eval", f"'{name}' evaluates strings as code"
    if name == "Formatter":
        return "format", "'Formatter' reaches attributes from templates; use an f-string"
    return None


def _attr_problem(name: str) -> tuple[str, str] | None:
    """(rule, message) for a non-dunder attribute name the policy refuses, if any."""
    if name in _CLOCK_ATTRS:
        return "clock", f"'{name}' reads the wall clock; use the current_time state attribute"
    if name in _FRAME_ATTRS:
        return "introspection", f"attribute '{name}' exposes frames or code objects"
    if name in _MODULE_ATTRS:
        return "module_attr", f"attribute '{name}' reaches a module outside the allow-list"
    return _name_problem(name)


def _template_refusals(text: str) -> Iterator[tuple[str, str]]:
    """(field, name) for each attribute or key a ``str.format`` template reaches that is refused."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return
    for _literal, field, spec, _conversion in parsed:
        for attr, key in _FIELD_PART.findall(field or ""):
            if _is_dunder(attr or key) or (attr and _attr_problem(attr)):
                yield field, attr or key
        if spec and "{" in spec:
            yield from _template_refusals(spec)


def _import_message(module: str) -> str:
    allowed = ", ".join(sorted(ALLOWED_IMPORTS))
    return f"import of '{module}' is not allowed (allowed: {allowed})"


class _PolicyVisitor(ast.NodeVisitor):
    """Walks the whole tree and records every violation instead of stopping at the first."""

    def __init__(self, bound: set[str]) -> None:
        self.found: list[tuple[tuple[int, int, int], PolicyViolation]] = []
        self.bound = bound

    def flag(self, rule: str, node: ast.AST, message: str) -> None:
        """Record a violation, keyed by where the node ends so a.__x__.__y__ reports __x__ first."""
        line = getattr(node, "lineno", 1)
        end = (getattr(node, "end_lineno", None) or line, getattr(node, "end_col_offset", 0) or 0)
        self.found.append(((line, *end), _violation(rule, line, message)))

    def check_binding(self, node: ast.AST, name: str | None) -> None:
        """A name the code binds must not be a dunder nor hide a refused builtin."""
        if name is None:
            return
        if _is_dunder(name) and name not in _FORBIDDEN_BUILTINS:
            self.flag("dunder", node, f"binding the dunder name '{name}' is not allowed")
        elif name in _FORBIDDEN_BUILTINS or name in _ATTR_FUNCS:
            self.flag("builtin", node, f"name '{name}' shadows a refused builtin; rename it")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in ALLOWED_IMPORTS:
                self.flag("import", node, _import_message(alias.name))
            self.check_binding(node, alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.flag(
                "import", node, "relative import is not allowed; the module must be self-contained"
            )
        elif node.module not in ALLOWED_IMPORTS:
            self.flag("import", node, _import_message(node.module or ""))
        else:
            for alias in node.names:
                self.check_imported_name(node, node.module, alias)

    def check_imported_name(self, node: ast.ImportFrom, module: str, alias: ast.alias) -> None:
        name = alias.name
        if name == "*":
            self.flag(
                "import", node, f"'from {module} import *' is not allowed; import names explicitly"
            )
        elif name in _MODULE_ATTRS:
            self.flag(
                "import", node, f"'{name}' from '{module}' is a module outside the allow-list"
            )
        elif _is_dunder(name):
            self.flag("dunder", node, f"importing the dunder name '{name}' is not allowed")
        elif problem := _name_problem(name):
            self.flag(problem[0], node, problem[1])
        else:
            self.check_binding(node, alias.asname or name)
            return
        self.check_binding(node, alias.asname)

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name in _FORBIDDEN_BUILTINS:
            if isinstance(node.ctx, ast.Load):
                reason = _FORBIDDEN_BUILTINS[name]
                self.flag("builtin", node, f"builtin '{name}' is not allowed ({reason})")
            else:
                self.check_binding(node, name)
        elif name in _ATTR_FUNCS:
            self.flag(
                "dynamic_attr",
                node,
                f"'{name}' may only be called directly, with a string literal name",
            )
        elif _is_dunder(name):
            self.flag("dunder", node, f"dunder name '{name}' is not allowed")
        elif name in _NONDETERMINISTIC and name not in self.bound:
            why = _NONDETERMINISTIC[name]
            self.flag(
                "nondeterministic",
                node,
                f"builtin '{name}' is not allowed ({why}, which differs between processes)",
            )
        elif problem := _name_problem(name):
            self.flag(problem[0], node, problem[1])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if _is_dunder(attr):
            if not (attr == "__init__" and _is_super_call(node.value)):
                self.flag("dunder", node, f"dunder attribute '{attr}' is not allowed")
        elif attr in _FORMAT_ATTRS and not _is_str_constant(node.value):
            self.flag(
                "format",
                node,
                f"'.{attr}' on a template that is not a string literal "
                "can reach attributes; use an f-string",
            )
        elif problem := _attr_problem(attr):
            self.flag(problem[0], node, problem[1])
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in _ATTR_FUNCS:
            self.check_attr_call(node, func.id)
            return
        if isinstance(func, ast.Name) and func.id == "type" and len(node.args) > 1:
            self.flag(
                "builtin",
                node,
                "type() with 3 arguments creates a class dynamically; use a class statement",
            )
        self.generic_visit(node)

    def check_attr_call(self, node: ast.Call, func: str) -> None:
        """getattr & co. only with a literal, non-dunder, otherwise allowed attribute name."""
        name_arg = node.args[1] if len(node.args) > 1 else None
        rest: list[ast.AST] = [*node.args, *node.keywords]
        if not _is_str_constant(name_arg):
            self.flag("dynamic_attr", node, f"{func}() needs a string literal attribute name")
        else:
            rest.remove(name_arg)
            name = name_arg.value  # type: ignore[union-attr]
            if _is_dunder(name):
                self.flag(
                    "dynamic_attr", node, f"{func}() with the dunder name '{name}' is not allowed"
                )
            elif problem := _attr_problem(name):
                self.flag(problem[0], node, problem[1])
        for child in rest:
            self.visit(child)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str):
            return
        if _is_dunder(node.value):
            self.flag("dunder", node, f"string '{node.value}' names a dunder attribute")
        for field, name in _template_refusals(node.value):
            self.flag(
                "format", node, f"format field '{{{field}}}' reaches '{name}', which is not allowed"
            )

    def visit_bound(self, node: ast.arg | ast.ExceptHandler) -> None:
        self.check_binding(node, node.arg if isinstance(node, ast.arg) else node.name)
        self.generic_visit(node)

    def visit_scope(self, node: ast.Global | ast.Nonlocal) -> None:
        keyword = type(node).__name__.lower()
        self.flag("scope", node, f"'{keyword}' is not allowed; keep state in instance attributes")

    def visit_async(self, node: ast.AST) -> None:
        what = _ASYNC_NODES[type(node)]
        self.flag("async", node, f"{what} is not allowed; environment code is synchronous")
        self.generic_visit(node)

    visit_arg = visit_ExceptHandler = visit_bound
    visit_Global = visit_Nonlocal = visit_scope
    visit_AsyncFunctionDef = visit_Await = visit_AsyncFor = visit_AsyncWith = visit_async

    def visit_comprehension(self, node: ast.comprehension) -> None:
        if node.is_async:
            self.flag("async", node.target, "'async for' in a comprehension is not allowed")
        self.generic_visit(node)


def _check_top_level(tree: ast.Module) -> Iterator[PolicyViolation]:
    """Only imports, definitions, assignments and docstrings may run at import time."""
    for stmt in tree.body:
        if isinstance(stmt, _TOP_LEVEL_OK):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        kind = type(stmt).__name__
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            kind = "Call"
        what = _STATEMENT_NAMES.get(kind, f"'{kind.lower()}' statement")
        yield _violation(
            "module_code",
            stmt.lineno,
            f"top-level {what} is not allowed; only imports, definitions and assignments",
        )


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name the module binds anywhere (assigned, a parameter, defined, imported)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
    return bound


def _check_purity(tree: ast.Module) -> Iterator[PolicyViolation]:
    """A check writes no attribute: the only place it could keep state between evaluations
    is an object it did not create (a module, a class of an allowed module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            yield _violation(
                "check_purity",
                node.lineno,
                f"a check must not set or delete attributes ('.{node.attr}'); "
                "compute from the two states only",
            )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
        ):
            yield _violation("check_purity", node.lineno, f"a check must not call {node.func.id}()")


def _check_signature(tree: ast.Module) -> Iterator[PolicyViolation]:
    """A check source defines ``def check(initial_state, final_state)`` at top level."""
    defs = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"]
    if not defs:
        yield _violation(
            "check_signature", 1, "no top-level 'def check(initial_state, final_state)'"
        )
        return
    args = defs[-1].args
    positional = len(args.posonlyargs) + len(args.args)
    line = defs[-1].lineno
    if positional != 2:
        yield _violation(
            "check_signature",
            line,
            f"check() must take exactly 2 positional parameters, not {positional}",
        )
    if args.vararg or args.kwarg or args.kwonlyargs:
        yield _violation(
            "check_signature",
            line,
            "check() must not take *args, **kwargs or keyword-only parameters",
        )
