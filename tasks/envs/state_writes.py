"""Where a function writes: the instance, the class or a module variable, and how (a change
inside a value, a rebinding, a deletion), through names, ``cls``, ``type(self)`` and the locals
that alias a part of them. The state contract (``contract``) judges what it finds."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from envmill.tasks.envs.reading import (
    Function,
    decorator_names,
    instance_names,
    walk_nodes,
)
from envmill.tasks.envs.tool_kinds import MUTATORS

_VIEWS = frozenset({"get", "setdefault", "values", "items", "keys"})
_ITERATED = frozenset({"list", "tuple", "sorted", "reversed", "enumerate", "iter", "zip"})

Root = tuple[str, str]  # ("instance" | "class" | "module", attribute or variable name)
# (node, what it writes, "mutate" | "rebind" | "delete")
Write = tuple[ast.stmt | ast.expr, Root, str]


class WriteScope:
    """Who a method reaches shared or instance state through, and the locals that alias it."""

    def __init__(
        self,
        fn: Function,
        class_names: frozenset[str],
        module_names: set[str],
        is_method: bool = True,
    ) -> None:
        """``class_names``: the environment class and its module bases; ``module_names``: the
        module variables that hold containers; ``is_method``: ``fn`` is a method of the class
        (its first parameter is the instance, or the class for a classmethod)."""
        owners = instance_names(fn) if is_method else frozenset()
        is_classmethod = "classmethod" in decorator_names(fn)
        self.instance = frozenset() if is_classmethod else owners
        self.klass = class_names | (owners if is_classmethod else frozenset())
        self.module = module_names - _local_names(fn)
        self.aliases: dict[str, Root] = {}
        self._bind_aliases(fn)

    def root(self, node: ast.AST | None, iterated: bool = False) -> Root | None:
        """What ``node`` is (a part of): ``self.carts[c]["items"]`` → ("instance", "carts")."""
        while node is not None:
            if isinstance(node, ast.Name):
                if node.id in self.aliases:
                    return self.aliases[node.id]
                return ("module", node.id) if node.id in self.module else None
            if isinstance(node, ast.Attribute):
                base = node.value
                if isinstance(base, ast.Name) and base.id in self.instance:
                    return ("instance", node.attr)
                if (isinstance(base, ast.Name) and base.id in self.klass) or self.type_of(base):
                    return ("class", node.attr)
                node = base
            elif isinstance(node, ast.Subscript | ast.Starred | ast.NamedExpr):
                node = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                node = node.func.value if node.func.attr in _VIEWS else None
            elif (
                isinstance(node, ast.Call)
                and iterated
                and getattr(node.func, "id", "") in _ITERATED
            ):
                node = node.args[0] if node.args else None
            else:
                return None
        return None

    def type_of(self, node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", "") == "type"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in self.instance
        )

    def _bind_aliases(self, fn: Function) -> None:
        bindings = []
        for node in walk_nodes(fn):
            if isinstance(node, ast.Assign):
                bindings += [(t, node.value, False) for t in node.targets]
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                bindings.append((node.target, node.value, False))
            elif isinstance(node, ast.For | ast.comprehension):
                bindings.append((node.target, node.iter, True))
        changed = True
        while changed:
            changed = False
            for target, value, iterated in bindings:
                root = self.root(value, iterated)
                if root is None:
                    continue
                for name in _names(target):
                    if name not in self.aliases:
                        self.aliases[name], changed = root, True


def _names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List | ast.Starred):
        elts = target.elts if not isinstance(target, ast.Starred) else [target.value]
        return [n for e in elts for n in _names(e)]
    return []


def _local_names(fn: Function) -> set[str]:
    found = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    for node in walk_nodes(fn):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found.add(node.id)
    return found


def find_writes(fn: Function, scope: WriteScope) -> list[Write]:
    """(node, what it writes, how: "mutate" | "rebind" | "delete") for each write in ``fn``."""
    found: list[Write] = []
    for node in walk_nodes(fn):
        if isinstance(node, ast.Call):
            found += _call_writes(node, scope)
            continue
        if isinstance(node, ast.Assign):
            targets, how = node.targets, "rebind"
        elif isinstance(node, ast.AugAssign) or (isinstance(node, ast.AnnAssign) and node.value):
            targets, how = [node.target], "rebind"
        elif isinstance(node, ast.Delete):
            targets, how = node.targets, "delete"
        else:
            continue
        for target in flat_targets(targets):
            attribute = target if isinstance(target, ast.Attribute) else None
            direct = scope.root(attribute) if attribute else None
            if attribute and direct and _is_direct(attribute, scope):
                found.append((node, direct, how))
            elif isinstance(target, ast.Attribute | ast.Subscript):
                root = scope.root(target.value)
                if root:
                    found.append((node, root, "mutate"))
    return found


def _is_direct(target: ast.Attribute, scope: WriteScope) -> bool:
    """``self.x`` or ``Cls.x`` itself (a rebinding), not ``self.x.y`` (a change inside x)."""
    base = target.value
    return (isinstance(base, ast.Name) and base.id in scope.instance | scope.klass) or (
        scope.type_of(base)
    )


def _call_writes(node: ast.Call, scope: WriteScope) -> list[Write]:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in MUTATORS:
        root = scope.root(func.value)
        return [(node, root, "mutate")] if root else []
    if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and len(node.args) >= 2:
        target, name = node.args[0], node.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return []
        how = "rebind" if func.id == "setattr" else "delete"
        if isinstance(target, ast.Name) and target.id in scope.instance:
            return [(node, ("instance", name.value), how)]
        if (isinstance(target, ast.Name) and target.id in scope.klass) or scope.type_of(target):
            return [(node, ("class", name.value), how)]
    return []


def flat_targets(targets: Sequence[ast.expr]) -> list[ast.expr]:
    flat: list[ast.expr] = []
    for target in targets:
        if isinstance(target, ast.Tuple | ast.List):
            flat += flat_targets(list(target.elts))
        elif isinstance(target, ast.Starred):
            flat += flat_targets([target.value])
        else:
            flat.append(target)
    return flat
