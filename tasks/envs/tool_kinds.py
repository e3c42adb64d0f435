"""Which tools change state: a static reading of an environment class, leaning to "change".

The kind of a tool is what the warehouse's per-kind statistics and the tool records carry; the
certification gates use what a run actually changed, so a misfiled tool never rejects a scenario.
"""

from __future__ import annotations

import ast

from envmill.schemas.environment import ToolKind
from envmill.tasks.envs.reading import (
    Function,
    decorator_names,
    instance_names,
    list_tool_methods,
    load_environment,
    methods_of,
    walk_nodes,
)

MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "popitem",
        "remove",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "sort",
        "reverse",
    }
)
_VIEW_CALLS = frozenset({"get", "setdefault", "values", "items"})
_ITER_WRAPPERS = frozenset({"list", "tuple", "sorted", "reversed", "enumerate", "iter", "zip"})


def classify_tools(source: str) -> dict[str, ToolKind]:
    """``state_change`` for every tool that may write to the instance, else ``query``.

    A write is an assignment, augmented assignment or ``del`` whose target is rooted at ``self``
    (or at a local bound from a self-rooted expression), or a mutating method called on one, in
    the tool or in any method or module function it calls with such a value. The analysis leans
    to ``state_change`` when unsure: a query misfiled as a change only costs a weaker gate.
    """
    tree, cls = load_environment(source)
    analyzer = _MutationAnalyzer(tree, cls)
    return {
        fn.name: "state_change" if analyzer.mutates(fn, instance_names(fn)) else "query"
        for fn in list_tool_methods(cls)
    }


def _roots(node: ast.AST | None, through_wrappers: bool = False) -> set[str]:
    """Local names whose object ``node`` may be (a part of): ``self.a[k].get(x)`` → {"self"}."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute | ast.Subscript | ast.Starred | ast.NamedExpr):
        return _roots(node.value, through_wrappers)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_roots(v, through_wrappers) for v in node.values))
    if isinstance(node, ast.IfExp):
        return _roots(node.body, through_wrappers) | _roots(node.orelse, through_wrappers)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _VIEW_CALLS:
            return _roots(func.value, through_wrappers)
        if isinstance(func, ast.Attribute) and func.attr.startswith("_"):
            return _roots(func.value, through_wrappers)  # a private helper may hand out state
        if through_wrappers and isinstance(func, ast.Name) and func.id in _ITER_WRAPPERS:
            return set().union(*(_roots(a, True) for a in node.args))
    return set()


def _target_names(target: ast.AST) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Tuple | ast.List):
        return set().union(*(_target_names(e) for e in target.elts))
    return _target_names(target.value) if isinstance(target, ast.Starred) else set()


def _bindings(fn: Function) -> list[tuple[set[str], ast.expr, bool]]:
    """(names bound, value, value is iterated) for each local binding in ``fn``."""
    found: list[tuple[set[str], ast.expr, bool]] = []
    for node in walk_nodes(fn):
        if isinstance(node, ast.Assign):
            found += [(_target_names(t), node.value, False) for t in node.targets]
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            found.append((_target_names(node.target), node.value, False))
        elif isinstance(node, ast.For | ast.AsyncFor):
            found.append((_target_names(node.target), node.iter, True))
    return found


def _tainted_names(fn: Function, seed: frozenset[str]) -> set[str]:
    """``seed`` plus every local bound (transitively) from an expression rooted at one of them."""
    tainted = set(seed)
    bindings = _bindings(fn)
    changed = True
    while changed:
        changed = False
        for names, value, iterated in bindings:
            if not names <= tainted and _roots(value, iterated) & tainted:
                tainted |= names
                changed = True
    return tainted


def _writes_directly(fn: Function, tainted: set[str]) -> bool:
    for node in walk_nodes(fn):
        if isinstance(node, ast.Assign | ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.AugAssign) or (isinstance(node, ast.AnnAssign) and node.value):
            targets = [node.target]
        elif isinstance(node, ast.Call):
            if _is_mutating_call(node, tainted):
                return True
            continue
        else:
            continue
        if any(_is_state_target(t, tainted) for t in targets):
            return True
    return False


def _is_mutating_call(call: ast.Call, tainted: set[str]) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in MUTATORS:
        return bool(_roots(func.value) & tainted)
    if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and call.args:
        return bool(_roots(call.args[0]) & tainted)
    return False


def _is_state_target(target: ast.AST, tainted: set[str]) -> bool:
    if isinstance(target, ast.Tuple | ast.List):
        return any(_is_state_target(e, tainted) for e in target.elts)
    if isinstance(target, ast.Starred):
        return _is_state_target(target.value, tainted)
    return isinstance(target, ast.Attribute | ast.Subscript) and bool(_roots(target) & tainted)


class _MutationAnalyzer:
    """Follows calls into the class's methods and the module's functions, memoized per callee
    and per set of its arguments that carry state."""

    def __init__(self, tree: ast.Module, cls: ast.ClassDef) -> None:
        self._methods = {fn.name: fn for fn in methods_of(cls)}
        self._functions = {n.name: n for n in tree.body if isinstance(n, Function)}
        self._memo: dict[tuple[int, frozenset[str]], bool] = {}

    def mutates(self, fn: Function, seed: frozenset[str]) -> bool:
        key = (id(fn), seed)
        if key not in self._memo:
            self._memo[key] = False  # a recursive call adds nothing new
            tainted = _tainted_names(fn, seed)
            self._memo[key] = _writes_directly(fn, tainted) or any(
                self.mutates(callee, seed) for callee, seed in self._calls(fn, tainted)
            )
        return self._memo[key]

    def _calls(self, fn: Function, tainted: set[str]) -> list[tuple[Function, frozenset[str]]]:
        found = []
        for node in walk_nodes(fn):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in self._methods
                and _roots(func.value) & tainted
            ):
                callee = self._methods[func.attr]
                found.append((callee, instance_names(callee) | _seed_params(node, callee, tainted)))
            elif isinstance(func, ast.Name) and func.id in self._functions:
                callee = self._functions[func.id]
                found.append((callee, _seed_params(node, callee, tainted, bound=False)))
        return found


def _seed_params(
    call: ast.Call, callee: Function, tainted: set[str], bound: bool = True
) -> frozenset[str]:
    """The callee's parameters that receive a state-rooted argument at this call."""
    params = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
    if bound and "staticmethod" not in decorator_names(callee):
        params = params[1:]
    seeded = {
        params[i] for i, arg in enumerate(call.args) if i < len(params) and _roots(arg) & tainted
    }
    seeded |= {kw.arg for kw in call.keywords if kw.arg and _roots(kw.value) & tainted}
    return frozenset(seeded)
