"""What a check could keep from one call to the next, refused so that many evaluations may share
one process, each in a fresh namespace (``exec(code, {})`` anew; DESIGN §3.3).

A fresh namespace rebuilds everything the source defines; what outlives it is what the source did
not make (the modules it imports: a table inside ``json``, the decimal context, an abstract
class's registry) and, in a namespace kept for the probes, what it made once and changed later.
One rule name per kind of problem, so a failure row says which; each message says what to do
instead, for a model repairing its check:

- ``check_purity``: an attribute write, ``setattr``/``delattr`` (a function attribute, a module's).
- ``global_state``: ``global``/``nonlocal``; a value made at import (module level, class body) by
  a call or a comprehension; a write into a module-level name anywhere (``CACHE[k] = v``,
  ``calls['n'] += 1``, ``SEEN.add(x)``).
- ``mutable_default``: a parameter default that is not provably immutable (``seen=[]``).
- ``caching``: ``functools.lru_cache``, ``cache``, ``cached_property``.
- ``module_write``: a write or mutating call into something an import binds, ``.register`` (an
  abstract class's registry), and the helpers that write onto what they are given
  (``dataclasses.dataclass``, ``functools.wraps``, ...) used other than as a decorator.
- ``process_state``: the mutable objects of the allowed modules (:data:`MUTABLE_MODULE_NAMES`) and
  the functions that read or change process-wide state (:data:`PROCESS_FUNCTIONS`), by name
  wherever they appear, so no alias escapes (``table = json.encoder.ESCAPE_DCT``).

Module-level *literal data* (a list, dict or set display of constants) is allowed, though
mutable: the guard every scenario carries keeps its allow-lists so (tasks/certify/guard.py).
``exec`` rebuilds it for each evaluation and a direct write into it is refused; a write through
an alias (``t = CACHE; t.append(1)``) can only change a later call in one namespace, which the
probes' kept namespace catches (tasks/sandbox/checkrunner.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from envmill.schemas.environment import PolicyViolation
from envmill.tasks.envs.policy.names import violation
from envmill.tasks.envs.policy.state_names import (
    CACHING_IDS,
    MUTATORS,
    PROCESS_STATE_NAMES,
    WRITER_IDS,
    process_state_message,
    resolves_into,
)
from envmill.tasks.envs.policy.values import (
    FUNCTIONS,
    SourceNames,
    is_immutable,
    is_literal_data,
    module_names,
    qualified,
    root_name,
    scoped,
    source_names,
)
from envmill.tasks.envs.policy.walk import nodes

CACHING_NAMES = frozenset({"lru_cache", "cached_property"})  # ``cache`` only as functools'


def check_purity(tree: ast.Module) -> Iterator[PolicyViolation]:
    """Every reason a check source could keep something between calls (see the module doc)."""
    names = source_names(tree)
    yield from _attribute_writes(tree)
    yield from _scope_statements(tree)
    yield from _module_values(tree, names)
    yield from _defaults(tree, names)
    yield from _named_state(tree, names)
    yield from _writes(tree, names)
    yield from _writers_off_decorators(tree, names)
    yield from _classes(tree)
    yield from _cached_generics(tree, names)


def _classes(tree: ast.Module) -> Iterator[PolicyViolation]:
    """A check defines no class: a class's methods run inside the process-wide caches and
    registries its objects reach (``__eq__`` and ``__hash__`` in ``typing``'s caches, a
    ``__subclasshook__`` every later ``isinstance`` asks, a ``__del__`` that runs during
    another check), so an object of one evaluation could act in the next."""
    for node in nodes(tree).of(ast.ClassDef):
        yield violation(
            "check_purity",
            node.lineno,
            f"a check must not define classes ('class {node.name}'); use dicts, tuples "
            "and functions instead",
        )


def _cached_generics(tree: ast.Module, names: SourceNames) -> Iterator[PolicyViolation]:
    """``typing.List[...]``, ``Annotated[...]`` and the like outside annotations: ``typing``
    keeps every one it made in a process-wide cache and hands it back for equal arguments
    (``(True,)`` for ``(1,)``), so what one evaluation made shows in the next. The hints are
    listed only once such a subscript is found (most checks have none)."""
    hints: set[int] | None = None
    for node in nodes(tree).of(ast.Subscript):
        dotted = qualified(node.value, names) or ""
        if not dotted.startswith(("typing.", "collections.abc.")):
            continue
        if hints is None:
            hints = {id(n) for hint in _annotations(tree) for n in ast.walk(hint)}
        if id(node) not in hints:
            yield violation(
                "process_state",
                node.lineno,
                f"'{_snippet(node.value)}[...]' outside a type hint is kept in a process-wide "
                "cache; use it in annotations only, and plain values in code",
            )


def _annotations(tree: ast.Module) -> Iterator[ast.expr]:
    """The type hints, kind by kind (their caller makes a set of them)."""
    index = nodes(tree)
    yield from (node.annotation for node in index.of(ast.arg) if node.annotation is not None)
    functions = index.collect(ast.FunctionDef, ast.AsyncFunctionDef)
    yield from (node.returns for node in functions if node.returns)
    yield from (node.annotation for node in index.of(ast.AnnAssign))


def _attribute_writes(tree: ast.Module) -> Iterator[PolicyViolation]:
    """A check writes no attribute: a function's, a class's or an imported module's attributes
    are all places to keep something between calls."""
    for node in nodes(tree).of(ast.Attribute, ast.Call):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            yield violation(
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
            yield violation("check_purity", node.lineno, f"a check must not call {node.func.id}()")


def _scope_statements(tree: ast.Module) -> Iterator[PolicyViolation]:
    for node in nodes(tree).of(ast.Global, ast.Nonlocal):
        keyword = type(node).__name__.lower()
        yield violation(
            "global_state",
            node.lineno,
            f"'{keyword}' lets a check keep state between calls; compute from the two "
            "states only, passing values as arguments and return values",
        )


def _module_values(tree: ast.Module, names: SourceNames) -> Iterator[PolicyViolation]:
    """A value made once, at import (module level or in a class body), must be immutable or
    literal data (see the module doc)."""
    for where, stmt in _made_at_import(tree):
        if not isinstance(stmt, ast.Assign | ast.AnnAssign) or stmt.value is None:
            continue
        if is_literal_data(stmt.value, names):
            continue
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
        name = f"{where}{ast.unparse(target)}"
        yield violation("global_state", stmt.lineno, _module_value_message(name, stmt.value))


def _made_at_import(tree: ast.Module) -> Iterator[tuple[str, ast.stmt]]:
    """The statements that run once per namespace, with the class they are in (``A.``)."""
    yield from (("", stmt) for stmt in tree.body)
    for node in nodes(tree).of(ast.ClassDef):
        yield from ((f"{node.name}.", stmt) for stmt in node.body)


def _module_value_message(name: str, value: ast.expr) -> str:
    made = "is not a constant"
    for node in ast.walk(value):
        if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            made = "is built once, at import, by a comprehension"
            break
        if isinstance(node, ast.Call):
            made = f"is made once, at import, by {_snippet(node.func)}(), and can keep state"
            break
    return (
        f"'{name}' {made}; build it inside check() from the two states, or make it a constant "
        "(a number, string, tuple or frozenset)"
    )


def _defaults(tree: ast.Module, names: SourceNames) -> Iterator[PolicyViolation]:
    """A default is made once, when its function is defined, and shared by every call."""
    for node in nodes(tree).of(*FUNCTIONS):
        owner = "a lambda" if isinstance(node, ast.Lambda) else f"{node.name}()"
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None and not is_immutable(default, names):
                yield violation(
                    "mutable_default",
                    default.lineno,
                    f"the default '{_snippet(default)}' of {owner} is made once and shared by "
                    "every call; default to None and build the value inside the function",
                )


def _writes(tree: ast.Module, names: SourceNames) -> Iterator[PolicyViolation]:
    """A write into a value rooted at an import or a module-level name, wherever it is (the
    function's own names shadow module-level ones; an import is never shadowed, as
    :func:`source_names` drops an import name the source rebinds)."""
    module_level = module_names(tree) - set(names.imports)
    outer = module_level | set(names.imports)
    index = nodes(tree)
    writes = index.collect(ast.Subscript, ast.Call)  # the nodes _written reads
    if not any(_outer_root(node, outer) for node in writes):
        return  # the usual check: it writes only into its own values (scoping them is dearer)
    for node, local in scoped(tree):
        written = _written(node) if isinstance(node, ast.expr) else None
        root = root_name(written) if written is not None else None
        if root is None or root in local or not isinstance(node, ast.expr):
            continue
        if root in names.imports:
            yield violation(
                "module_write",
                node.lineno,
                f"'{_snippet(node)}' changes what the import '{root}' binds, which every later "
                "check shares; copy what you need into a local value (dict(...), list(...)) first",
            )
        elif root in module_level:
            yield violation(
                "global_state",
                node.lineno,
                f"'{_snippet(node)}' changes module-level '{root}', which outlives a call; compute "
                "from the two states only, building and changing local values inside the function",
            )


def _outer_root(node: ast.AST, outer: set[str]) -> bool:
    """Whether ``node`` writes into a value reached from one of the ``outer`` names."""
    written = _written(node) if isinstance(node, ast.expr) else None
    return written is not None and root_name(written) in outer


def _named_state(tree: ast.Module, names: SourceNames) -> Iterator[PolicyViolation]:
    """The names refused wherever they appear: caching helpers, ``register`` and the
    process-wide state of the allowed modules."""
    for node, name, origin in _references(tree, names):
        if name in CACHING_NAMES or resolves_into(origin, name, CACHING_IDS):
            yield violation(
                "caching",
                node.lineno,
                f"'{name}' caches results between calls; compute from the two states each time",
            )
        elif name == "register":
            yield violation(
                "module_write",
                node.lineno,
                "'register' changes an abstract class every later check shares; "
                "test types with isinstance() only",
            )
        elif name in PROCESS_STATE_NAMES:
            yield violation("process_state", node.lineno, process_state_message(name))


def _writers_off_decorators(tree: ast.Module, names: SourceNames) -> Iterator[PolicyViolation]:
    """``dataclass``, ``wraps`` and the like write onto the object they are given: as a
    decorator that is a definition of the check's own; anywhere else it may be an import's."""
    decorators = _decorator_ids(tree)
    for node in nodes(tree).of(ast.Name, ast.Attribute):
        if id(node) in decorators:
            continue
        dotted = qualified(node, names)
        if dotted and resolves_into(dotted, None, WRITER_IDS):
            yield violation(
                "module_write",
                node.lineno,
                f"'{dotted}' writes onto the object it is given; use it only as a decorator "
                "on a class or function the check defines",
            )


def _written(node: ast.expr) -> ast.expr | None:
    """The value ``node`` writes into (``x`` of ``x[k] = v``, ``x[k] += 1``, ``del x[k]``,
    ``x.append(v)``)."""
    if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
        return node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MUTATORS
    ):
        return node.func.value
    return None


def _references(
    tree: ast.Module, names: SourceNames
) -> Iterator[tuple[ast.expr | ast.stmt | ast.pattern, str, str | None]]:
    """(node, name, the dotted name it is taken from) for every attribute the source names:
    ``x.a``, ``getattr(x, "a")``, ``case C(a=...)``, ``from m import a``."""
    for node in nodes(tree).of(ast.Attribute, ast.ImportFrom, ast.MatchClass, ast.Call):
        if isinstance(node, ast.Attribute):
            yield node, node.attr, qualified(node.value, names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                yield node, alias.name, node.module
        elif isinstance(node, ast.MatchClass):
            for attr in node.kwd_attrs:
                yield node, attr, None
        elif isinstance(node, ast.Call) and (named := _getattr_name(node)):
            yield node, named, qualified(node.args[0], names)


def _getattr_name(node: ast.Call) -> str | None:
    """The literal attribute name of ``getattr(x, "a")`` or ``hasattr(x, "a")``."""
    if not (isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")):
        return None
    name = node.args[1] if len(node.args) > 1 else None
    return name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None


def _decorator_ids(tree: ast.Module) -> set[int]:
    """Ids of the decorator expressions (``@d``, and ``d`` of ``@d(...)``)."""
    found = set()
    for node in nodes(tree).collect(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        for decorator in node.decorator_list:
            found.add(id(decorator))
            if isinstance(decorator, ast.Call):
                found.add(id(decorator.func))
    return found


def _snippet(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."
