"""Rules about a program's shape rather than its names: what may run at import time, the
check signature, and which names a module binds (what a check may keep: purity.py)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from envmill.schemas.environment import PolicyViolation
from envmill.tasks.envs.policy.names import STATEMENT_NAMES, TOP_LEVEL_OK, violation
from envmill.tasks.envs.policy.walk import nodes


def check_top_level(tree: ast.Module) -> Iterator[PolicyViolation]:
    """Only imports, definitions, assignments and docstrings may run at import time."""
    for stmt in tree.body:
        if isinstance(stmt, TOP_LEVEL_OK):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        kind = type(stmt).__name__
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            kind = "Call"
        what = STATEMENT_NAMES.get(kind, f"'{kind.lower()}' statement")
        yield violation(
            "module_code",
            stmt.lineno,
            f"top-level {what} is not allowed; only imports, definitions and assignments",
        )


def bound_names(tree: ast.Module) -> set[str]:
    """Every name the module binds anywhere (assigned, a parameter, defined, imported)."""
    index = nodes(tree)
    bound = {node.id for node in index.of(ast.Name) if not isinstance(node.ctx, ast.Load)}
    bound.update(node.arg for node in index.of(ast.arg))
    definitions = index.collect(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    bound.update(node.name for node in definitions)
    bound.update(node.asname or node.name.split(".")[0] for node in index.of(ast.alias))
    bound.update(node.name for node in index.collect(ast.MatchAs, ast.MatchStar) if node.name)
    return bound


def compared_type_calls(tree: ast.Module) -> set[int]:
    """Ids of the ``type(x)`` calls that are operands of a comparison (``type(x) is int``)."""
    found = set()
    for node in nodes(tree).of(ast.Compare):
        for operand in [node.left, *node.comparators]:
            if (
                isinstance(operand, ast.Call)
                and isinstance(operand.func, ast.Name)
                and operand.func.id == "type"
            ):
                found.add(id(operand))
    return found


def check_signature(tree: ast.Module) -> Iterator[PolicyViolation]:
    """A check source defines ``def check(initial_state, final_state)`` at top level. It never
    reads the agent's reply (DESIGN §3.3): a third parameter is refused, whichever backend wrote
    it, since envmill's judge decides what a reply says."""
    defs = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"]
    if not defs:
        yield violation(
            "check_signature", 1, "no top-level 'def check(initial_state, final_state)'"
        )
        return
    args = defs[-1].args
    positional = len(args.posonlyargs) + len(args.args)
    line = defs[-1].lineno
    if positional == 3:
        yield violation(
            "check_signature",
            line,
            "check() reads the reply (a third parameter): checks judge states only; say what "
            "the reply must state as expected_answer or refusal, and envmill judges it",
        )
    elif positional != 2:
        yield violation(
            "check_signature", line, f"check() must take 2 positional parameters, not {positional}"
        )
    if args.vararg or args.kwarg or args.kwonlyargs:
        yield violation(
            "check_signature",
            line,
            "check() must not take *args, **kwargs or keyword-only parameters",
        )


def method_owners(tree: ast.Module) -> tuple[set[int], dict[str, set[str]]]:
    """Who ``self`` can be: the ids of the parameters that may be called ``self`` or ``cls``
    (the first of a method that is not static, with no default: ``A.m()`` would bind it), and
    per class the names of those methods, which may not be taken off the class itself
    (``A.m(other)`` binds ``self`` to anything)."""
    owners, methods = set(), {}
    for node in nodes(tree).of(ast.ClassDef):
        for item in node.body:
            if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            decorators = {d.id for d in item.decorator_list if isinstance(d, ast.Name)}
            positional = [*item.args.posonlyargs, *item.args.args]
            if "staticmethod" in decorators or not positional:
                continue
            if len(item.args.defaults) < len(positional):
                owners.add(id(positional[0]))
            if "classmethod" not in decorators:
                methods.setdefault(node.name, set()).add(item.name)
    return owners, methods
