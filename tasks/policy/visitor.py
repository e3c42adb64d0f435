"""One AST pass that records every policy violation with its line (environment modules and
checks alike)."""

from __future__ import annotations

import ast

from envmill.schemas.environment import PolicyViolation
from envmill.tasks.policy.names import (
    ALLOWED_IMPORTS,
    ASYNC_NODES,
    ATTR_FUNCS,
    FORBIDDEN_BUILTINS,
    FORMAT_ATTRS,
    MODULE_ATTRS,
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


class PolicyVisitor(ast.NodeVisitor):
    """Walks the whole tree and records every violation instead of stopping at the first."""

    def __init__(self, bound: set[str]) -> None:
        self.found: list[tuple[tuple[int, int, int], PolicyViolation]] = []
        self.bound = bound

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

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in ALLOWED_IMPORTS:
                self.flag("import", node, import_message(alias.name))
            self.check_binding(node, alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.flag(
                "import", node, "relative import is not allowed; the module must be self-contained"
            )
        elif node.module not in ALLOWED_IMPORTS:
            self.flag("import", node, import_message(node.module or ""))
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
        elif problem := name_problem(name):
            self.flag(problem[0], node, problem[1])
        else:
            self.check_binding(node, alias.asname or name)
            return
        self.check_binding(node, alias.asname)

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name in FORBIDDEN_BUILTINS:
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
        attr = node.attr
        if is_dunder(attr):
            if not (attr == "__init__" and is_super_call(node.value)):
                self.flag("dunder", node, f"dunder attribute '{attr}' is not allowed")
        elif attr in FORMAT_ATTRS and not is_str_constant(node.value):
            self.flag(
                "format",
                node,
                f"'.{attr}' on a template that is not a string literal "
                "can reach attributes; use an f-string",
            )
        elif problem := attr_problem(attr):
            self.flag(problem[0], node, problem[1])
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ATTR_FUNCS:
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
        if not is_str_constant(name_arg):
            self.flag("dynamic_attr", node, f"{func}() needs a string literal attribute name")
        else:
            rest.remove(name_arg)
            name = name_arg.value  # type: ignore[union-attr]
            if is_dunder(name):
                self.flag(
                    "dynamic_attr", node, f"{func}() with the dunder name '{name}' is not allowed"
                )
            elif problem := attr_problem(name):
                self.flag(problem[0], node, problem[1])
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
