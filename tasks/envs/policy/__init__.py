"""Static policy for untrusted generated Python (DESIGN §3.1, §3.3, §5).

One AST pass over an environment module or a check source that collects *every* reason to refuse
it, each naming its line, so a generator can be told exactly what to fix. It is a filter with good
messages, not the security boundary (the process sandbox is), so it aims to be precise and never to
refuse ordinary environment code.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Sequence

from envmill.schemas.environment import PolicyViolation
from envmill.tasks.envs.policy.names import (
    ALLOWED_IMPORTS,
    MAX_SOURCE_BYTES,
    violation,
)
from envmill.tasks.envs.policy.purity import check_purity
from envmill.tasks.envs.policy.shape import (
    bound_names,
    check_signature,
    check_top_level,
    compared_type_calls,
    method_owners,
)
from envmill.tasks.envs.policy.visitor import PolicyVisitor

__all__ = ["ALLOWED_IMPORTS", "MAX_SOURCE_BYTES", "check_check_source", "check_module", "describe"]

# Verdicts by source text: certification checks the same check sources again (about one in five).
MAX_REMEMBERED = 256
MAX_REMEMBERED_CHARS = 64 * 1024  # per source: a few larger modules would hold megabytes
_verdicts: dict[tuple[str, str], tuple[PolicyViolation, ...]] = {}
_lock = threading.Lock()


def check_module(source: str) -> list[PolicyViolation]:
    """Every policy violation of an environment module, sorted by line (empty when it passes)."""
    known = _recall("module", source)
    if known is not None:
        return known
    tree, early = _parse(source)
    if tree is None:
        return early
    return _remember("module", source, _sorted([*_visit(tree), *check_top_level(tree)]))


def check_check_source(source: str) -> list[PolicyViolation]:
    """Every policy violation of a check source, which must define ``check(initial, final)``
    and keep nothing between calls (purity.py). Its ``global`` is purity's to name (the
    visitor's ``scope`` message speaks to environment classes)."""
    known = _recall("check", source)
    if known is not None:
        return known
    tree, early = _parse(source)
    if tree is None:
        return early
    found = [v for v in _visit(tree) if v.rule != "scope"]
    found = [*found, *check_top_level(tree), *check_signature(tree), *_purity(tree)]
    return _remember("check", source, _sorted(found))


def describe(violations: Sequence[PolicyViolation]) -> str:
    """One line for a failure row: the first violation and how many more there are."""
    if not violations:
        return "no policy violations"
    more = len(violations) - 1
    return f"{violations[0]} (and {more} more)" if more else str(violations[0])


def _recall(kind: str, source: str) -> list[PolicyViolation] | None:
    """A verdict given before on this exact text, as a new list (the caller may change it)."""
    with _lock:
        known = _verdicts.pop((kind, source), None)
        if known is not None:
            _verdicts[kind, source] = known  # now the most recently used
    return None if known is None else list(known)


def _remember(kind: str, source: str, found: list[PolicyViolation]) -> list[PolicyViolation]:
    """Keep a verdict for the next check of the same text, unless the source is large or hit
    the recursion limit, which depends on how deep the caller's stack already was."""
    if len(source) > MAX_REMEMBERED_CHARS or any(v.rule == "size" for v in found):
        return found
    with _lock:
        if len(_verdicts) >= MAX_REMEMBERED:
            _verdicts.pop(next(iter(_verdicts)))
        _verdicts[kind, source] = tuple(found)
    return found


def _parse(source: str) -> tuple[ast.Module | None, list[PolicyViolation]]:
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_SOURCE_BYTES:
        return None, [
            violation("size", 1, f"source is {size} bytes, over the limit of {MAX_SOURCE_BYTES}")
        ]
    try:
        return ast.parse(source), []
    except SyntaxError as error:
        return None, [violation("syntax", error.lineno or 1, f"syntax error: {error.msg}")]
    except (ValueError, RecursionError, MemoryError) as error:
        return None, [violation("syntax", 1, f"cannot parse: {type(error).__name__}: {error}")]


def _visit(tree: ast.Module) -> list[PolicyViolation]:
    owners, methods = method_owners(tree)
    visitor = PolicyVisitor(bound_names(tree), compared_type_calls(tree), owners, methods)
    try:
        visitor.visit(tree)
    except RecursionError:
        return [violation("size", 1, "source is nested too deeply to check")]
    return [violation for _, violation in sorted(visitor.found, key=lambda f: f[0])]


def _purity(tree: ast.Module) -> list[PolicyViolation]:
    try:
        return list(check_purity(tree))
    except RecursionError:
        return [violation("size", 1, "source is nested too deeply to check")]


def _sorted(found: list[PolicyViolation]) -> list[PolicyViolation]:
    return sorted(dict.fromkeys(found), key=lambda v: v.line)
