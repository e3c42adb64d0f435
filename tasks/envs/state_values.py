"""Values a method writes into the state that are not JSON values (DESIGN §3.1), found on the
source where the expression shows it: ``Decimal(...)``, a set, a tuple, a datetime, a
``defaultdict``, an enum member, an object of a module class, ``float("nan")``, a non-string key.

A tuple is refused too, although it serialises: JSON has no tuples, so a saved state brings it
back as a list, and a tool that compares it with a tuple or adds one to it then behaves
differently (the state would no longer determine behaviour). A ``defaultdict`` or ``Counter``
is refused because the sandbox takes exactly ``dict`` for an object.

A value reached through a call into a helper is left to the probe calls (``probes``), which see
every state a tool leaves. ``advice`` says what to store instead, for both.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

from envmill.schemas.environment import PolicyViolation
from envmill.tasks.envs.annotations import ENUM_BASES, type_name
from envmill.tasks.envs.policy.names import violation
from envmill.tasks.envs.reading import Function, instance_names, methods_of, walk_nodes

# runtime type name -> (what it is, what to store instead)
_ADVICE = {
    "Decimal": (
        "a Decimal",
        "a float (rounded with round(x, 2)) or integer cents instead of Decimal",
    ),
    "set": ("a set", "a list instead of a set (sorted, without duplicates)"),
    "frozenset": ("a frozenset", "a list instead of a frozenset (sorted, without duplicates)"),
    "tuple": (
        "a tuple",
        "a list instead of a tuple (a saved state holds lists, so a tuple comes back as a list)",
    ),
    "datetime": ("a datetime", "an ISO 8601 string instead (value.isoformat())"),
    "date": ("a date", "an ISO 8601 string instead (value.isoformat())"),
    "time": ("a time", "an ISO 8601 string instead (value.isoformat())"),
    "timedelta": ("a timedelta", "a number of days, hours or minutes instead of a timedelta"),
    "defaultdict": (
        "a defaultdict",
        "a plain dict instead (dict.get(key, 0) and dict.setdefault(key, []) do what it did)",
    ),
    "Counter": ("a Counter", "a plain dict of counts instead (counts.get(key, 0) + 1)"),
    "OrderedDict": ("an OrderedDict", "a plain dict instead (dicts keep insertion order)"),
    "deque": ("a deque", "a plain list instead of a deque"),
    "nan": ("a NaN or infinite float", "None or a finite number instead"),
    "key": (
        "a dict with a non-string key",
        "string keys instead (str(key)): JSON object keys are strings",
    ),
    "generator": ("a generator", "a list instead (list(...))"),
}
_CONVERTED = {"set", "frozenset", "tuple", "defaultdict", "Counter", "OrderedDict", "deque"}
_DATETIME_TYPES = frozenset({"datetime", "date", "time", "timedelta"})
_DATETIME_MAKERS = frozenset({"fromisoformat", "strptime", "combine", "fromordinal"})
_PASS_THROUGH = frozenset({"round", "abs", "min", "max", "sum", "deepcopy"})
_ONE_VALUE = frozenset({"append", "add", "insert", "setdefault", "extend"})
_NAN_TEXT = frozenset({"nan", "inf", "-inf", "+inf", "infinity", "-infinity"})


def advice(
    type_name_: str, kinds: dict[str, str] | None = None, example: str = ""
) -> tuple[str, str]:
    """(what it is, what to store instead) for a value of the runtime type ``type_name_``;
    ``kinds`` tells the module's enums ("enum") and other classes ("object") apart, and
    ``example`` is the expression that makes the value, when it is short."""
    if type_name_ in _ADVICE:
        return _ADVICE[type_name_]
    if (kinds or {}).get(type_name_) == "enum":
        member = example if example and len(example) <= 40 else f"{type_name_}.MEMBER"
        return f"{_article(type_name_)} {type_name_} enum member", f"its value ({member}.value)"
    return (
        f"{_article(type_name_)} {type_name_} object",
        "a plain dict instead (dataclasses.asdict(obj), or build the dict yourself)",
    )


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def check_stored_values(tree: ast.Module, cls: ast.ClassDef) -> list[PolicyViolation]:
    """Every non-JSON value a method of ``cls`` visibly writes into the instance."""
    finder = _ValueFinder(tree)
    found = []
    for fn in methods_of(cls):
        owners = instance_names(fn)
        if not owners:
            continue
        finder.start(fn)
        for path, value in stores(fn, owners):
            attr = path[0]
            for node, kind in finder.problems(value):
                what, instead = advice(kind, finder.kinds, ast.unparse(node))
                found.append(
                    violation(
                        "state_json",
                        node.lineno,
                        f"'{fn.name}' writes {what} into the state (self.{attr}); store {instead}",
                    )
                )
    return found


_VIEWS = frozenset({"get", "setdefault", "values", "items"})
Path = tuple[str, ...]  # ("orders", "*", "total"): an attribute, then keys; "*" is any key


def _root_path(node: ast.AST, owners: frozenset[str], aliases: dict[str, Path]) -> Path | None:
    """``self.a[k]["f"]`` → ("a", "*", "f") (a local bound to a part of the state continues
    that part's path); None when ``node`` is not a part of the instance."""
    keys: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            keys.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            key = node.slice
            keys.append(key.value if isinstance(key, ast.Constant) else "*")  # type: ignore
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _VIEWS
        ):
            keys.append("*")
            node = node.func.value
        else:
            break
    if not isinstance(node, ast.Name):
        return None
    if node.id in owners:
        return tuple(str(k) for k in reversed(keys)) or None
    base = aliases.get(node.id)
    return (*base, *(str(k) for k in reversed(keys))) if base else None


def _aliases(fn: Function, owners: frozenset[str]) -> dict[str, Path]:
    """Locals bound to a part of the state: ``order = self.orders[oid]`` → ("orders", "*")."""
    aliases: dict[str, Path] = {}
    for node in walk_nodes(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value, iterated = node.targets[0], node.value, False
        elif isinstance(node, ast.For):
            target, value, iterated = node.target, node.iter, True
        else:
            continue
        path = _root_path(value, owners, aliases)
        if path and iterated and path[-1] != "*":
            path = (*path, "*")
        names = [target] if isinstance(target, ast.Name) else getattr(target, "elts", [])
        for name in names:
            if path and isinstance(name, ast.Name):
                aliases.setdefault(name.id, path)
    return aliases


@functools.lru_cache(maxsize=4096)
def stores(fn: Function, owners: frozenset[str]) -> tuple[tuple[Path, ast.expr], ...]:
    """(where in the state, value expression) for each value ``fn`` writes into the instance;
    the path starts with the attribute. Read once per function (the contract, the probe lines
    and the made-up records all ask)."""
    return tuple(_stores(fn, owners))


def _stores(fn: Function, owners: frozenset[str]) -> Iterator[tuple[Path, ast.expr]]:
    aliases = _aliases(fn, owners)
    for node in walk_nodes(fn):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                yield from _paired(target, node.value, owners, aliases)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            path = _root_path(node.func.value, owners, aliases)
            method = node.func.attr
            if path and method in _ONE_VALUE and node.args:
                value = node.args[-1]
                values = _elements(value) if method == "extend" else [value]
                yield from (((*path, "*"), v) for v in values)
            elif path and method == "update":
                yield from ((path, v) for v in [*node.args, *(k.value for k in node.keywords)])
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", "") == "setattr"
            and len(node.args) == 3
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in owners
            and isinstance(node.args[1], ast.Constant)
        ):
            yield (str(node.args[1].value),), node.args[2]


def _paired(target: ast.expr, value: ast.expr, owners: frozenset[str], aliases: dict[str, Path]):
    if isinstance(target, ast.Tuple | ast.List):
        if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts, strict=True):
                yield from _paired(t, v, owners, aliases)
        return
    if isinstance(target, ast.Name):
        return  # a local, not the state (an alias is rebound, not written through)
    path = _root_path(target, owners, aliases)
    if path:
        yield path, value


def _elements(value: ast.expr) -> list[ast.expr]:
    """What ``extend`` adds: the elements of a literal, else nothing visible."""
    if isinstance(value, ast.List | ast.Tuple | ast.Set):
        return list(value.elts)
    if isinstance(value, ast.ListComp | ast.GeneratorExp | ast.SetComp):
        return [value.elt]
    return []


class _ValueFinder:
    """Reads what kind of value an expression makes, following the function's local names."""

    def __init__(self, tree: ast.Module) -> None:
        self.kinds = module_class_kinds(tree)
        self.datetime_classes, self.datetime_modules, self.math_modules = _imported_names(tree)
        self.locals: dict[str, list[ast.expr]] = {}

    def start(self, fn: Function) -> None:
        self.locals = {}
        for node in walk_nodes(fn):
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.locals.setdefault(target.id, []).append(node.value)

    def problems(self, node: ast.expr, seen: frozenset[str] = frozenset(), at=None):
        """(node to report, runtime type name) for each part of ``node`` that is not a JSON
        value; a value reached through a local is reported where the local is stored (``at``)."""
        kind = self._kind(node)
        if kind:
            yield at or node, kind
            if kind in _CONVERTED or kind in self.kinds:
                return
        if isinstance(node, ast.BinOp):  # one kind of result, whichever operand decides it
            for child in (node.left, node.right) if not _is_text(node.left) else ():
                first = next(self.problems(child, seen, at), None)
                if first:
                    yield first
                    return
            return
        for child, more_seen, where in self._parts(node, seen, at):
            yield from self.problems(child, more_seen, where)

    def _parts(self, node: ast.expr, seen: frozenset[str], at):
        yield from ((v, seen, at) for v in self._children(node))
        if isinstance(node, ast.Name) and node.id in self.locals and node.id not in seen:
            yield from ((v, seen | {node.id}, at or node) for v in self.locals[node.id])

    def _children(self, node: ast.expr) -> list[ast.expr]:
        """The parts of ``node`` whose values end up in it."""
        for kinds, parts in _CHILDREN:
            if isinstance(node, kinds):
                return parts(node)
        if isinstance(node, ast.Call):
            name = _call_name(node)
            if name in _PASS_THROUGH:
                args = node.args if name in ("min", "max") else node.args[:1]
                return [e for a in args for e in _element_or_self(a)]
            if self.kinds.get(name or "") == "dict":
                return [*node.args, *(k.value for k in node.keywords)]
        return []

    def _kind(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Dict):
            bad_key = any(_is_bad_key(k) for k in node.keys if k is not None)
            return "key" if bad_key else None
        if isinstance(node, ast.DictComp):
            return "key" if _is_bad_key(node.key) else None
        if isinstance(node, ast.Set | ast.SetComp):
            return "set"
        if isinstance(node, ast.Tuple):
            return "tuple"
        if isinstance(node, ast.GeneratorExp):
            return "generator"
        if isinstance(node, ast.Attribute):
            return self._attribute_kind(node)
        if isinstance(node, ast.Call):
            return self._call_kind(node)
        return None

    def _attribute_kind(self, node: ast.Attribute) -> str | None:
        base = node.value
        if isinstance(base, ast.Name) and base.id in self.math_modules:
            return "nan" if node.attr in ("nan", "inf") else None
        if isinstance(base, ast.Name) and self.kinds.get(base.id) == "enum":
            return base.id
        return None

    def _call_kind(self, node: ast.Call) -> str | None:
        name = _call_name(node)
        func = node.func
        if name == "float" and node.args and _is_nan_text(node.args[0]):
            return "nan"
        if name in _CONVERTED or name == "Decimal":
            return name
        if self._is_datetime_class(func):
            return self._datetime_type(func)
        if (
            isinstance(func, ast.Attribute)
            and func.attr in _DATETIME_MAKERS
            and self._is_datetime_class(func.value)
        ):
            return self._datetime_type(func.value)
        kind = self.kinds.get(name or "")
        if kind in ("enum", "object") and isinstance(func, ast.Name):
            return name
        if kind == "tuple":
            return "tuple"
        return None

    def _datetime_type(self, node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            return self.datetime_classes[node.id]
        return node.attr  # type: ignore[attr-defined]

    def _is_datetime_class(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.datetime_classes
        return (
            isinstance(node, ast.Attribute)
            and node.attr in _DATETIME_TYPES
            and isinstance(node.value, ast.Name)
            and node.value.id in self.datetime_modules
        )


_CHILDREN = [
    (ast.Dict, lambda n: list(n.values)),
    (ast.List | ast.Tuple | ast.Set, lambda n: list(n.elts)),
    (ast.ListComp | ast.SetComp | ast.GeneratorExp, lambda n: [n.elt]),
    (ast.DictComp, lambda n: [n.value]),
    (ast.IfExp, lambda n: [n.body, n.orelse]),
    (ast.BoolOp, lambda n: list(n.values)),
    (ast.NamedExpr | ast.Starred, lambda n: [n.value]),
    (ast.UnaryOp, lambda n: [n.operand]),
]


def _element_or_self(node: ast.expr) -> list[ast.expr]:
    """``sum(x for x in ...)`` adds up the elements: look at them, not at the generator."""
    if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
        return [node.elt]
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return list(node.elts)
    return [node]


def _call_name(node: ast.Call) -> str | None:
    name = type_name(node.func)
    return name.rsplit(".", 1)[-1] if name else None


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _is_nan_text(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.strip().lower() in _NAN_TEXT
    )


def _is_bad_key(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is not None and not isinstance(node.value, str)
    return isinstance(node, ast.Tuple)


def _imported_names(tree: ast.Module) -> tuple[dict[str, str], set[str], set[str]]:
    """Names bound to datetime's classes (→ the class), to the datetime module, and to math."""
    classes: dict[str, str] = {}
    datetime_modules, math_modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "datetime":
            classes |= {a.asname or a.name: a.name for a in node.names if a.name in _DATETIME_TYPES}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "datetime":
                    datetime_modules.add(alias.asname or alias.name)
                elif alias.name == "math":
                    math_modules.add(alias.asname or alias.name)
    return classes, datetime_modules, math_modules


def module_class_kinds(tree: ast.Module) -> dict[str, str]:
    """Each module class → "dict" (a TypedDict: its instances are dicts), "enum", "tuple" (a
    NamedTuple) or "object"; exceptions are left out."""
    kinds: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [type_name(b) or "" for b in node.bases]
        inherited = [kinds.get(b) for b in bases if b in kinds]
        if "TypedDict" in bases or "dict" in inherited:
            kinds[node.name] = "dict"
        elif any(b in ENUM_BASES for b in bases) or "enum" in inherited:
            kinds[node.name] = "enum"
        elif "NamedTuple" in bases or "tuple" in inherited:
            kinds[node.name] = "tuple"
        elif not any(b.endswith(("Error", "Exception", "Warning")) for b in bases):
            kinds[node.name] = "object"
    for node in tree.body:  # functional TypedDicts: Book = TypedDict("Book", {...})
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if type_name(node.value.func) == "TypedDict":
                kinds.update({t.id: "dict" for t in node.targets if isinstance(t, ast.Name)})
    return kinds
