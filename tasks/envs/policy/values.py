"""What a check source's names and expressions stand for, as the purity rules need it: which
import a name is, which values are provably immutable, which names a function binds for itself."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from envmill.tasks.envs.policy.walk import nodes

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
SCOPES = (*FUNCTIONS, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Expressions whose value is immutable when every sub-expression's is (names and attributes
# refer to imports or other module-level values, which the other rules hold).
FROZEN_BRANCHES = (
    ast.Tuple,
    ast.Starred,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.UnaryOp,
    ast.BinOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.JoinedStr,
    ast.FormattedValue,
)


@dataclass(frozen=True)
class SourceNames:
    """What the source's names are: ``imports`` maps a name an import binds (and nothing else
    rebinds) to the dotted name it imports; ``assigned`` holds every other name it binds."""

    imports: dict[str, str]
    assigned: frozenset[str]


def source_names(tree: ast.Module) -> SourceNames:
    index = nodes(tree)
    imports = {}
    for node in index.of(ast.Import, ast.ImportFrom):  # in order: a later import wins
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                imports[alias.asname or top] = alias.name if alias.asname else top
        elif node.module and not node.level:
            for alias in node.names:
                imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    assigned = {node.id for node in index.of(ast.Name) if not isinstance(node.ctx, ast.Load)}
    assigned.update(node.arg for node in index.of(ast.arg))
    definitions = index.collect(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    assigned.update(node.name for node in definitions)
    kept = {name: dotted for name, dotted in imports.items() if name not in assigned}
    return SourceNames(kept, frozenset(assigned))


def is_immutable(node: ast.expr, names: SourceNames) -> bool:
    """Whether ``node`` provably makes an immutable value (references count: other rules hold
    what they refer to)."""
    if isinstance(node, ast.Constant | ast.Name | ast.Lambda):
        return True
    if isinstance(node, ast.Call):
        return _immutable_call(node, names)
    if isinstance(node, FROZEN_BRANCHES):
        children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        return all(is_immutable(child, names) for child in children)
    return False


def is_literal_data(node: ast.expr, names: SourceNames) -> bool:
    """An immutable value, or a list, dict or set display of literal data, or what a pure
    builtin makes of literal data (``tuple(range(8, 17))``, ``set([...])``, ``[0] * 3``,
    ``", ".join(...)``): rebuilt by every evaluation, like a display."""
    if isinstance(node, ast.List | ast.Set | ast.Tuple):
        return all(is_literal_data(item, names) for item in node.elts)
    if isinstance(node, ast.BinOp | ast.UnaryOp | ast.BoolOp | ast.Compare | ast.IfExp):
        children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        return all(is_literal_data(child, names) for child in children)
    if isinstance(node, ast.Call) and _pure_maker(node.func, names):
        arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
        return all(is_literal_data(argument, names) for argument in arguments)
    if isinstance(node, ast.Dict):
        keys = [key for key in node.keys if key is not None]  # None: a ``**`` spread
        return len(keys) == len(node.keys) and all(
            is_literal_data(item, names) for item in [*keys, *node.values]
        )
    return is_immutable(node, names)


PURE_BUILTINS = frozenset(
    {
        "tuple", "frozenset", "set", "list", "dict", "range", "sorted", "reversed", "len",
        "int", "float", "str", "bool", "sum", "min", "max", "abs", "round", "enumerate", "zip",
    }
)  # fmt: skip
PURE_MAKERS = frozenset({"collections.namedtuple", "enum.Enum", "typing.TypeVar"})


def _pure_maker(func: ast.expr, names: SourceNames) -> bool:
    """A builtin that makes a new value from its arguments and keeps nothing, a method of a
    constant (``", ".join``, ``dict.fromkeys``), or a maker of new classes and names."""
    if isinstance(func, ast.Name):
        return func.id in PURE_BUILTINS and func.id not in names.assigned
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Constant):
        return True
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id in PURE_BUILTINS and func.value.id not in names.assigned:
            return True
    return (qualified(func, names) or "") in PURE_MAKERS


def _immutable_call(node: ast.Call, names: SourceNames) -> bool:
    """``frozenset``/``tuple`` of displays of immutable values, and the makers of immutable
    values (``re.compile``, ``datetime.*``, ``decimal.Decimal``; a dataclass's ``field``, a
    description its class reads) on immutable arguments."""
    func = node.func
    if isinstance(func, ast.Name) and func.id in ("frozenset", "tuple"):
        return (
            func.id not in names.assigned
            and not node.keywords
            and all(_frozen_display(arg, names) for arg in node.args)
        )
    dotted = qualified(func, names) or ""
    maker = dotted in ("re.compile", "decimal.Decimal", "dataclasses.field") or dotted.startswith(
        ("datetime.", "decimal.Decimal.")
    )
    arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
    return maker and all(is_immutable(arg, names) for arg in arguments)


def _frozen_display(node: ast.expr, names: SourceNames) -> bool:
    if isinstance(node, ast.List | ast.Set | ast.Tuple):
        return all(is_immutable(item, names) for item in node.elts)
    return is_immutable(node, names)


def qualified(node: ast.expr, names: SourceNames) -> str | None:
    """The dotted name an import-rooted ``a.b.c`` stands for (``from json import encoder as e;
    e.ESCAPE_DCT`` is ``json.encoder.ESCAPE_DCT``), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in names.imports:
        return None
    return ".".join([names.imports[node.id], *reversed(parts)])


def module_names(tree: ast.Module) -> set[str]:
    found = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(stmt.name)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            found.update(
                n.id
                for target in targets
                for n in ast.walk(target)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
    return found


def scoped(tree: ast.Module) -> Iterator[tuple[ast.AST, frozenset[str]]]:
    """Every node with the names local to the functions (and comprehensions) around it."""
    stack: list[tuple[ast.AST, frozenset[str]]] = [(tree, frozenset())]
    while stack:
        node, local = stack.pop()
        for child in ast.iter_child_nodes(node):
            inner = local | _locals_of(child) if isinstance(child, SCOPES) else local
            yield child, inner
            stack.append((child, inner))


def _locals_of(scope: ast.AST) -> frozenset[str]:
    """The names a function binds for itself: its parameters and what its own body assigns
    (not nested functions' names; not imports, which stay imports)."""
    found, stack = set(), list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found.add(node.id)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            found.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            found.add(node.rest)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif not isinstance(node, ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
    return frozenset(found)


def root_name(node: ast.expr) -> str | None:
    """The name an expression is reached from (``a`` of ``a.b[0].c()``)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call | ast.Starred):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None
