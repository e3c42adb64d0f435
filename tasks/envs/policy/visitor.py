"""One AST pass that records every policy violation with its line (environment modules and
checks alike)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from envmill.schemas.environment import PolicyViolation
from envmill.tasks.envs.policy.names import (
    ALLOWED_IMPORTS,
    ASYNC_NODES,
    ATTR_FUNCS,
    FORBIDDEN_BUILTINS,
    FORMAT_ATTRS,
    IMPORT_HINTS,
    MODULE_ATTRS,
    MODULE_PRIVATE_NAMES,
    NONDETERMINISTIC,
    attr_problem,
    import_message,
    is_dunder,
    is_str_constant,
    is_super_call,
    name_problem,
    template_refusals,
    violation,
)
from envmill.tasks.envs.policy.walk import children


class PolicyVisitor(ast.NodeVisitor):
    """Walks the whole tree and records every violation instead of stopping at the first."""

    def __init__(
        self, bound: set[str], compared: set[int], owners: set[int], methods: dict[str, set[str]]
    ) -> None:
        self.found: list[tuple[tuple[int, int, int], PolicyViolation]] = []
        self.bound, self.compared = bound, compared
        self.owners, self.methods = owners, methods
        self.refused: dict[str, str] = {}  # name bound by a refused import -> its module

    def visit(self, node: ast.AST) -> None:
        """``NodeVisitor.visit`` with the handler of each node type looked up once per type,
        not by name per node."""
        kind = type(node)
        handler = _HANDLERS.get(kind)
        if handler is None:
            handler = _HANDLERS[kind] = getattr(
                PolicyVisitor, f"visit_{kind.__name__}", PolicyVisitor.generic_visit
            )
        handler(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        """``NodeVisitor.generic_visit``, its children listed without a generator."""
        for child in children(node):
            self.visit(child)

    def flag(self, rule: str, node: ast.AST, message: str) -> None:
        """Record a violation, keyed by where the node ends so a.__x__.__y__ reports __x__ first."""
        line = getattr(node, "lineno", 1)
        end = (getattr(node, "end_lineno", None) or line, getattr(node, "end_col_offset", 0) or 0)
        self.found.append(((line, *end), violation(rule, line, message)))

    def check_binding(self, node: ast.AST, name: str | None) -> None:
        """A name the code binds must not be a dunder nor hide a refused builtin."""
        if name is None:
            return
        if is_dunder(name) and name not in FORBIDDEN_BUILTINS:
            self.flag("dunder", node, f"binding the dunder name '{name}' is not allowed")
        elif name in FORBIDDEN_BUILTINS or name in ATTR_FUNCS:
            self.flag("builtin", node, f"name '{name}' shadows a refused builtin; rename it")
        elif name in OWNERS and id(node) not in self.owners:
            self.flag(
                "self_binding",
                node,
                f"'{name}' may only be a method's first parameter (it reaches private names)",
            )

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in ALLOWED_IMPORTS:
                self.flag("import", node, import_message(alias.name))
                self.refused[alias.asname or alias.name.split(".")[0]] = alias.name
            self.check_binding(node, alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.flag(
                "import", node, "relative import is not allowed; the module must be self-contained"
            )
        elif node.module not in ALLOWED_IMPORTS:
            self.flag("import", node, import_message(node.module or ""))
            for alias in node.names:
                self.refused[alias.asname or alias.name] = node.module or ""
        else:
            for alias in node.names:
                self.check_imported_name(node, node.module, alias)

    def check_imported_name(self, node: ast.ImportFrom, module: str, alias: ast.alias) -> None:
        name = alias.name
        if name == "*":
            self.flag(
                "import", node, f"'from {module} import *' is not allowed; import names explicitly"
            )
        elif name in MODULE_ATTRS:
            self.flag(
                "import", node, f"'{name}' from '{module}' is a module outside the allow-list"
            )
        elif is_dunder(name):
            self.flag("dunder", node, f"importing the dunder name '{name}' is not allowed")
        elif name.startswith("_"):
            self.flag(
                "private", node, f"'{name}' is a private name of '{module}'; use its public API"
            )
        elif problem := name_problem(name):
            self.flag(problem[0], node, problem[1])
        else:
            self.check_binding(node, alias.asname or name)
            return
        self.check_binding(node, alias.asname)

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name in self.refused and isinstance(node.ctx, ast.Load):
            module = self.refused[name]
            hint = IMPORT_HINTS.get(module.split(".")[0], "remove this use")
            message = f"'{name}' comes from the refused import of '{module}'; {hint}"
            self.flag("import", node, message)
        elif name in OWNERS and not isinstance(node.ctx, ast.Load):
            self.check_binding(node, name)
        elif name in FORBIDDEN_BUILTINS:
            if isinstance(node.ctx, ast.Load):
                reason = FORBIDDEN_BUILTINS[name]
                self.flag("builtin", node, f"builtin '{name}' is not allowed ({reason})")
            else:
                self.check_binding(node, name)
        elif name in ATTR_FUNCS:
            self.flag(
                "dynamic_attr",
                node,
                f"'{name}' may only be called directly, with a string literal name",
            )
        elif is_dunder(name):
            self.flag("dunder", node, f"dunder name '{name}' is not allowed")
        elif name == "type" and isinstance(node.ctx, ast.Load):
            self.flag("builtin", node, "'type' may only be called with one argument, not aliased")
        elif name in NONDETERMINISTIC and name not in self.bound:
            why = NONDETERMINISTIC[name]
            self.flag(
                "nondeterministic",
                node,
                f"builtin '{name}' is not allowed ({why}, which differs between processes)",
            )
        elif problem := name_problem(name):
            self.flag(problem[0], node, problem[1])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if not (node.attr == "__init__" and is_super_call(node.value)):
            self.check_attribute(node, node.attr, node.value)
        self.generic_visit(node)

    def check_attribute(self, node: ast.AST, attr: str, receiver: ast.AST | None) -> None:
        """Every way a program names an attribute (``x.a``, ``getattr(x, "a")``, a class
        pattern's ``case C(a=...)``) is held to the same rules; ``receiver`` is None when the
        object is unknown (a match subject)."""
        if is_dunder(attr):
            self.flag("dunder", node, f"dunder attribute '{attr}' is not allowed")
        elif attr in FORMAT_ATTRS and not is_str_constant(receiver):
            self.flag(
                "format",
                node,
                f"'.{attr}' on a template that is not a string literal "
                "can reach attributes; use an f-string",
            )
        elif problem := attr_problem(attr):
            self.flag(problem[0], node, problem[1])
        elif isinstance(receiver, ast.Name) and attr in self.methods.get(receiver.id, ()):
            self.flag(
                "unbound_method",
                node,
                f"'{receiver.id}.{attr}' takes a method off its class, so anything can be its "
                "self; call it on an instance",
            )
        elif attr.startswith("_") and (
            receiver is None or (attr in MODULE_PRIVATE_NAMES and not _is_owner(receiver))
        ):
            self.flag(
                "private",
                node,
                f"'{attr}' is a private name of an allowed module; use its public API",
            )

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        for attr in node.kwd_attrs:
            self.check_attribute(node, attr, None)
        builtin = (
            isinstance(node.cls, ast.Name)
            and node.cls.id in SELF_MATCHING
            and node.cls.id not in self.bound  # ``list = Peek`` makes it another class
        )
        if node.patterns and not builtin:  # reads the attributes __match_args__ names
            self.flag(
                "match",
                node,
                "positional sub-patterns of a class pattern read attributes the class names "
                "elsewhere; name them as keywords (case C(field=x))",
            )
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs | ast.MatchStar) -> None:
        self.check_binding(node, node.name)
        self.generic_visit(node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self.check_binding(node, node.rest)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ATTR_FUNCS:
            self.check_attr_call(node, func.id)
            return
        if isinstance(func, ast.Name) and func.id == "type":
            self.check_type_call(node)
            return
        if (
            isinstance(func, ast.Call)
            and isinstance(func.func, ast.Name)
            and func.func.id == "type"
        ):
            self.flag("builtin", node, "calling type(x)(...) makes objects of a computed class")
        self.generic_visit(node)

    def check_type_call(self, node: ast.Call) -> None:
        """``type(x)`` asks an object's class; anything else (three arguments, keywords) makes a
        class, which a class statement says openly."""
        if len(node.args) != 1 or node.keywords:
            self.flag(
                "builtin",
                node,
                "type() with 3 arguments creates a class dynamically; use a class statement",
            )
        elif id(node) not in self.compared:
            self.flag(
                "builtin",
                node,
                "type(x) may only be compared (type(x) is int); its result is a class factory",
            )
        for child in [*node.args, *node.keywords]:
            self.visit(child)

    def check_attr_call(self, node: ast.Call, func: str) -> None:
        """getattr & co. only with a literal, non-dunder, otherwise allowed attribute name."""
        name_arg = node.args[1] if len(node.args) > 1 else None
        rest: list[ast.AST] = [*node.args, *node.keywords]
        if not is_str_constant(name_arg):
            self.flag("dynamic_attr", node, f"{func}() needs a string literal attribute name")
        else:
            rest.remove(name_arg)
            name = str(name_arg.value)  # is_str_constant: a str already
            if is_dunder(name):
                self.flag(
                    "dynamic_attr", node, f"{func}() with the dunder name '{name}' is not allowed"
                )
            else:
                self.check_attribute(node, name, node.args[0] if node.args else None)
        for child in rest:
            self.visit(child)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str):
            return
        if is_dunder(node.value):
            self.flag("dunder", node, f"string '{node.value}' names a dunder attribute")
        for field, name in template_refusals(node.value):
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
        what = ASYNC_NODES[type(node)]
        self.flag("async", node, f"{what} is not allowed; environment code is synchronous")
        self.generic_visit(node)

    visit_arg = visit_ExceptHandler = visit_bound
    visit_Global = visit_Nonlocal = visit_scope
    visit_AsyncFunctionDef = visit_Await = visit_AsyncFor = visit_AsyncWith = visit_async

    def visit_comprehension(self, node: ast.comprehension) -> None:
        if node.is_async:
            self.flag("async", node.target, "'async for' in a comprehension is not allowed")
        self.generic_visit(node)


SELF_MATCHING = frozenset(
    {
        "bool",
        "bytearray",
        "bytes",
        "dict",
        "float",
        "frozenset",
        "int",
        "list",
        "set",
        "str",
        "tuple",
    }
)  # builtins whose one positional sub-pattern matches the subject itself


OWNERS = frozenset({"self", "cls"})
_HANDLERS: dict[type, Callable[[PolicyVisitor, Any], None]] = {}  # node type -> its visit_ method


def _is_owner(receiver: ast.AST | None) -> bool:
    """``self._x``: a class's private names are its own (``self`` is never rebound)."""
    return isinstance(receiver, ast.Name) and receiver.id in OWNERS
