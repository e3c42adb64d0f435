"""One BFCL class module rewritten by ``ast`` so its code may live in an environment module: the
logic stays BFCL's, only what the environment policy forbids is replaced.

- ``random.Random(seed)`` becomes ``_SeededRandom(seed)`` (mtrandom.py, bit-exact draws);
- ``.now()``/``.utcnow()`` clock reads become ``BFCL_CLOCK`` (the only one, GorillaFileSystem's
  ``File._last_modified``, is private and read by no tool);
- ``datetime.fromtimestamp(t)`` and ``d.timestamp()`` become UTC arithmetic (the executor runs
  BFCL's code with ``TZ=UTC``, so both agree);
- names imported from ``long_context`` become copies of its constants; a function that writes
  into a module-level value works on its own deep copy (BFCL's vehicle code writes a shared dict,
  which would otherwise be state no environment attribute holds);
- every module-level name is prefixed (``_<module>_NAME``, classes ``_Name``) so several modules
  share one namespace, and no class but the environment's is public;
- a public method that needs a module we cannot offer (``mpmath``, ``subprocess``) is removed and
  reported as refused, with the reason.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from envmill.tasks.backends.imported.bfcl.package import CLASS_FILES, read_class_source

ALLOWED_PLAIN = frozenset({"copy", "datetime", "decimal", "math", "re", "json", "typing"})
DROPPED_MODULES = {
    "random": None,  # replaced by _SeededRandom
    "subprocess": "runs programs (subprocess), which environment code may not",
    "mpmath": "computes with mpmath at a caller-chosen precision, which no allowed module "
    "reproduces digit for digit",
}
LONG_CONTEXT = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.long_context"
MUTATORS = frozenset(
    {"append", "extend", "update", "pop", "clear", "insert", "remove", "setdefault", "add"}
)


class AdaptError(ValueError):
    """The class cannot be adapted; the message is one line naming why."""


@dataclass
class TransformedModule:
    """A BFCL module's statements, ready to join others in one module."""

    module: str
    body: list[ast.stmt]
    imports: set[str]  # lines such as "import copy" or "from typing import Dict as _m_Dict"
    classes: dict[str, str]  # BFCL class name -> its name in the adapted module
    refused: dict[str, str] = field(default_factory=dict)  # method -> reason
    long_context: set[str] = field(default_factory=set)  # constants taken from long_context
    uses_random: bool = False


def transform_module(module: str) -> TransformedModule:
    """The statements of ``func_source_code/<module>.py`` rewritten (see the module docstring)."""
    tree = ast.parse(read_class_source(module))
    out = TransformedModule(module, [], set(), {})
    renames: dict[str, str] = {}
    dropped: dict[str, str | None] = {}
    for stmt in tree.body:
        _read_import(stmt, out, renames, dropped)
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            out.classes[stmt.name] = renames[stmt.name] = f"_{stmt.name}"
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.FunctionDef):
            for name in _bound(stmt):
                renames[name] = f"_{module}_{name}"
    body = [s for s in tree.body if isinstance(s, ast.ClassDef | ast.Assign | ast.AnnAssign)]
    body += [s for s in tree.body if isinstance(s, ast.FunctionDef)]
    body = [s for s in tree.body if s in body]  # keep source order
    module_names = set(renames)
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            _refuse_methods(stmt, dropped, out)
        _copy_mutated_globals(stmt, module_names)
    rewriter = _Rewriter(renames, dropped)
    out.body = [ast.fix_missing_locations(rewriter.visit(s)) for s in body]
    out.uses_random = rewriter.uses_random
    return out


def _read_import(
    stmt: ast.stmt, out: TransformedModule, renames: dict[str, str], dropped: dict
) -> None:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.name in DROPPED_MODULES:
                dropped[alias.asname or alias.name] = DROPPED_MODULES[alias.name]
            elif alias.name in ALLOWED_PLAIN and alias.asname is None:
                out.imports.add(f"import {alias.name}")
            else:
                raise AdaptError(f"{out.module}.py imports {alias.name}, which cannot be adapted")
    elif isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            bound = alias.asname or alias.name
            if stmt.module == LONG_CONTEXT:
                out.long_context.add(alias.name)
                renames[bound] = f"_long_context_{alias.name}"
            elif stmt.module in ALLOWED_PLAIN:
                renames[bound] = f"_{out.module}_{bound}"
                out.imports.add(f"from {stmt.module} import {alias.name} as {renames[bound]}")
            else:
                raise AdaptError(f"{out.module}.py imports from {stmt.module}, not adaptable")


def _bound(stmt: ast.Assign | ast.AnnAssign | ast.FunctionDef) -> list[str]:
    if isinstance(stmt, ast.FunctionDef):
        return [stmt.name]
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _refuse_methods(cls: ast.ClassDef, dropped: dict[str, str | None], out: TransformedModule):
    """Remove the public methods that use a dropped module; a private one is not adaptable."""
    kept: list[ast.stmt] = []
    for item in cls.body:
        reason = _dropped_use(item, dropped)
        if reason is None:
            kept.append(item)
        elif isinstance(item, ast.FunctionDef) and not item.name.startswith("_"):
            out.refused[item.name] = reason
        else:
            name = getattr(item, "name", "a statement")
            raise AdaptError(f"{cls.name}.{name} {reason}; it cannot be adapted")
    if cls.name in CLASS_FILES:  # only BFCL's checker compares instances; envmill: public_state
        kept = [s for s in kept if not (isinstance(s, ast.FunctionDef) and s.name == "__eq__")]
    cls.body = kept


def _dropped_use(node: ast.AST, dropped: dict[str, str | None]) -> str | None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in dropped and dropped[sub.id]:
            return dropped[sub.id]
    return None


def _copy_mutated_globals(stmt: ast.stmt, module_names: set[str]) -> None:
    """In each function, a module-level value it writes into becomes a local deep copy."""
    for fn in [n for n in ast.walk(stmt) if isinstance(n, ast.FunctionDef)]:
        written = sorted(_written_globals(fn, module_names))
        for name in written:
            local = f"local_{name}"
            for node in ast.walk(fn):
                if isinstance(node, ast.Name) and node.id == name:
                    node.id = local
            copied = ast.parse(f"{local} = copy.deepcopy({name})").body[0]
            fn.body.insert(1 if ast.get_docstring(fn) else 0, copied)


def _written_globals(fn: ast.FunctionDef, module_names: set[str]) -> set[str]:
    local = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    local |= {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    found = set()
    for node in ast.walk(fn):
        base = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
            base = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
        ):
            base = node.func.value
        while isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Name) and base.id in module_names and base.id not in local:
            found.add(base.id)
    return found


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


class _Rewriter(ast.NodeTransformer):
    """Renames module-level names (not a function's own locals) and replaces the calls the
    policy refuses."""

    def __init__(self, renames: dict[str, str], dropped: dict[str, str | None]) -> None:
        self.renames, self.dropped = renames, dropped
        self.locals: list[set[str]] = []
        self.uses_random = False

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        names = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        names |= {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        self.locals.append(names)
        self.generic_visit(node)
        self.locals.pop()
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self.renames.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.dropped:
            raise AdaptError(f"line {node.lineno}: '{node.id}' is used in a way not adaptable")
        if (not self.locals or node.id not in self.locals[-1]) and node.id in self.renames:
            node.id = self.renames[node.id]
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id == "random":
                if func.attr != "Random":
                    raise AdaptError(f"line {node.lineno}: random.{func.attr} is not adaptable")
                self.uses_random = True
                node.func = ast.Name("_SeededRandom", ast.Load())
                node.args = [self.visit(a) for a in node.args]
                return node
            if func.attr in ("now", "utcnow", "today") and not node.args:
                return ast.Name("BFCL_CLOCK", ast.Load())
            if func.attr == "fromtimestamp" and len(node.args) == 1:
                return self._helper("utc_from_timestamp", node.args[0])
            if func.attr == "timestamp" and not node.args:
                return self._helper("utc_timestamp", receiver)
            if func.attr == "format" and not _is_str(receiver) and not node.args:
                values = ast.Dict(
                    [ast.Constant(k.arg) for k in node.keywords], [k.value for k in node.keywords]
                )
                call = ast.Call(ast.Name("format_fields", ast.Load()), [receiver, values], [])
                self.generic_visit(call)
                return call
        self.generic_visit(node)
        return node

    def _helper(self, name: str, argument: ast.expr) -> ast.Call:
        return ast.Call(ast.Name(name, ast.Load()), [self.visit(copy.deepcopy(argument))], [])
