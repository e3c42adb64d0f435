"""The module assembled by code from its parts: the state code, then one method per operation.

Each method goes into the environment class, re-indented; the import lines a method starts with
move to the module's imports (once each). Every line of the module remembers the part it came
from and its line there, so a check that names a line of the module names the part to rewrite,
and a syntax error in one part is found in that part alone, before any other check runs.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field

from envmill.tasks.envs.reading import EnvModuleError, class_chain, find_environment_class

STATE = "state"  # the part name of the state code; methods are named by their operation
_IMPORT = re.compile(r"^(?:import\s+\w|from\s+[\w.]+\s+import\s+[\w*(])")
_DEF = re.compile(r"^([ \t]*)(?:async\s+)?def\s+(\w+)\s*\(")


@dataclass(frozen=True)
class Problem:
    """One finding about a part, its line numbered as the part's listing shows it."""

    part: str
    line: int | None
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass
class AssembledModule:
    """The module's source and, per line, the (part, line in the part) it came from."""

    source: str
    origins: list[tuple[str, int]] = field(default_factory=list)

    def part_of(self, line: int | None) -> str:
        """The part a module line came from; a line outside every method is the state code's."""
        if line is None or not 1 <= line <= len(self.origins):
            return STATE
        return self.origins[line - 1][0]

    def module_line(self, part: str, part_line: int) -> int | None:
        """The module line of line ``part_line`` of ``part`` (the nearest one kept)."""
        found = [(abs(n - part_line), i + 1) for i, (p, n) in enumerate(self.origins) if p == part]
        return min(found)[1] if found else None

    def listing(self, part: str) -> str:
        """The part's lines as they stand in the module, each with its module line number."""
        lines = self.source.splitlines()
        numbered: list[str] = []
        last = None
        for index, (owner, _) in enumerate(self.origins):
            if owner != part:
                continue
            if last is not None and index != last + 1:
                numbered.append("  ... |")  # lines of other parts in between
            numbered.append(f"{index + 1:>5} | {lines[index]}")
            last = index
        return "\n".join(numbered)


def state_problems(state_code: str) -> list[Problem]:
    """What keeps the state code from being assembled: a syntax error, no environment class."""
    try:
        tree = ast.parse(state_code)
    except SyntaxError as exc:
        return [Problem(STATE, exc.lineno, f"syntax error: {exc.msg}")]
    try:
        cls = find_environment_class(tree)
    except EnvModuleError as exc:
        return [Problem(STATE, None, str(exc))]
    if not any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in cls.body):
        return [Problem(STATE, cls.lineno, f"class {cls.name} has no __init__(self)")]
    return []


def method_problems(name: str, code: str) -> list[Problem]:
    """A method's syntax error (line numbered within the method as written), or none."""
    try:
        ast.parse(textwrap.dedent(code))
    except SyntaxError as exc:
        return [Problem(name, exc.lineno, f"syntax error: {exc.msg}")]
    return []


def defined_twice(module: AssembledModule) -> list[Problem]:
    """A method or helper two parts define: the later one would silently replace the earlier
    (two calls' helpers of one name, or a method written again elsewhere)."""
    try:
        cls = find_environment_class(ast.parse(module.source))
    except (SyntaxError, EnvModuleError):
        return []  # the checks after assembly name what is wrong
    first: dict[str, str] = {}
    problems = []
    for node in cls.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        part = module.part_of(node.lineno)
        if node.name in first and first[node.name] != part:
            message = (
                f"`{node.name}` is also defined by {_part_named(first[node.name])}; give this "
                "one another name, or use that one"
            )
            problems.append(Problem(part, node.lineno, message))
        first.setdefault(node.name, part)
    return problems


def undefined_helpers(module: AssembledModule) -> list[Problem]:
    """A method calling a private helper no part defines (``self._ok()``): a repair that
    rewrote the part a helper lived in may have dropped it, and the tools that still call it
    would raise on every call."""
    try:
        tree = ast.parse(module.source)
        cls, chain = find_environment_class(tree), class_chain(tree)
    except (SyntaxError, EnvModuleError):
        return []
    body = [node for klass in chain for node in klass.body]  # its own bases' helpers count
    defined = {n.name for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    defined |= {
        t.id
        for n in body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    problems = []
    for node in ast.walk(cls):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            continue
        name = func.attr
        if func.value.id == "self" and name.startswith("_") and not name.startswith("__"):
            if name not in defined:
                message = f"calls self.{name}(), which no part of the class defines; define it here"
                problems.append(Problem(module.part_of(node.lineno), node.lineno, message))
    return problems


def _part_named(part: str) -> str:
    return "the state code" if part == STATE else f"the method {part}"


def split_methods(code: str, names: list[str]) -> dict[str, str]:
    """The methods ``names`` one answer wrote together, each as a part of its own.

    Split by lines, not parsed: a syntax error in one method stays in that method's part, for
    the checks after assembly to name and repair alone. An import line goes with each part that
    uses a name it binds (so a refused import is repaired where it is used; assembly keeps one
    of each); a helper the answer defines goes with the method before it, or the first one.
    """
    answer = _GroupAnswer(code, names)
    written = {}
    for name, body in answer.bodies().items():
        used = [line for line in answer.imports if _uses(body, line)]
        written[name] = "\n".join([*used, "", *body] if used else body) + "\n"
    return written


def group_problem(code: str, names: list[str]) -> str | None:
    """Why an answer that was to write ``names`` cannot be split into them (None when it can):
    one missing, one written twice, or a public method nobody asked for (it would replace the
    one another call writes, or be a tool no operation lists)."""
    answer = _GroupAnswer(code, names)
    defined = [name for _, name in answer.starts]
    missing = [name for name in names if name not in defined]
    twice = sorted({name for name in defined if defined.count(name) > 1})
    unasked = [name for name in defined if name not in names and not name.startswith("_")]
    if missing:
        listed = ", ".join(f"`def {name}(self, ...)`" for name in missing)
        return f"the code must define every method asked for; missing: {listed}"
    if twice:
        return f"`{twice[0]}` is defined twice; define each method once"
    if unasked:
        return (
            f"`{unasked[0]}` was not asked for: write only {', '.join(names)} (other operations "
            "are written separately; a helper of your own starts with an underscore)"
        )
    return None


class _GroupAnswer:
    """An answer's lines: its methods' starts, at the level the asked methods are written at
    (unindented, or inside a class the model wrapped them in), and its import statements."""

    def __init__(self, code: str, names: list[str]) -> None:
        self.lines = textwrap.dedent(code).rstrip().splitlines()
        defs = [(i, m[1], m[2]) for i, line in enumerate(self.lines) if (m := _DEF.match(line))]
        asked = [len(indent) for _, indent, name in defs if name in names]
        level = min(asked or [len(indent) for _, indent, _ in defs] or [0])
        self.starts = [
            (_decorated_from(self.lines, i), name)
            for i, indent, name in defs
            if len(indent) == level
        ]
        self.names = names
        self.imports, self.import_lines = _imports(self.lines)

    def bodies(self) -> dict[str, list[str]]:
        if not self.starts:
            return {}
        parts: dict[str, list[str]] = {}
        owner = next((name for _, name in self.starts if name in self.names), "")
        ends = [*self.starts[1:], (len(self.lines), "")]
        for (start, name), (end, _) in zip(self.starts, ends, strict=True):
            owner = name if name in self.names else owner
            body = [self.lines[i] for i in range(start, end) if i not in self.import_lines]
            parts.setdefault(owner, []).extend(body)
        return {name: parts[name] for name in self.names if name in parts}


def _imports(lines: list[str]) -> tuple[list[str], set[int]]:
    """The unindented import statements, each on one line (a parenthesised one joined), and
    the line numbers they took."""
    imports: list[str] = []
    taken: set[int] = set()
    index = 0
    while index < len(lines):
        if not _IMPORT.match(lines[index]):
            index += 1
            continue
        end = index
        if "(" in lines[index] and ")" not in lines[index]:
            while end + 1 < len(lines) and ")" not in lines[end]:
                end += 1
        imports.append(" ".join(line.strip() for line in lines[index : end + 1]))
        taken.update(range(index, end + 1))
        index = end + 1
    return imports, taken


def _uses(lines: list[str], import_line: str) -> bool:
    """Whether ``lines`` use a name the import binds (an import that cannot be read: yes)."""
    try:
        (node,) = ast.parse(import_line).body
    except (SyntaxError, ValueError):
        return True
    bound = [(alias.asname or alias.name).split(".")[0] for alias in getattr(node, "names", [])]
    text = "\n".join(lines)
    return any(re.search(rf"\b{re.escape(name)}\b", text) for name in bound)


def _decorated_from(lines: list[str], index: int) -> int:
    """Where a def starts, its decorators included."""
    while index > 0 and lines[index - 1].lstrip().startswith("@"):
        index -= 1
    return index


def assemble_module(state_code: str, methods: dict[str, str]) -> AssembledModule:
    """The module: the state code with the methods (in order) at the end of its class.

    The state code must pass :func:`state_problems`.
    """
    state_lines = state_code.rstrip().splitlines()
    tree = ast.parse(state_code)
    cls_end = find_environment_class(tree).end_lineno or len(state_lines)
    imports_at = _imports_end(tree)
    known = {line.strip() for line in state_lines if _IMPORT.match(line)}
    hoisted: list[tuple[str, tuple[str, int]]] = []
    bodies: list[list[tuple[str, tuple[str, int]]]] = []
    for name, code in methods.items():
        imports, body = _split_method(name, code)
        for text, origin in imports:
            if text.strip() not in known:
                known.add(text.strip())
                hoisted.append((text, origin))
        bodies.append(body)
    out: list[tuple[str, tuple[str, int]]] = []
    out += [(line, (STATE, i + 1)) for i, line in enumerate(state_lines[:imports_at])]
    out += hoisted
    out += [
        (line, (STATE, i + 1)) for i, line in enumerate(state_lines) if imports_at <= i < cls_end
    ]
    for body in bodies:
        out.append(("", (STATE, cls_end)))
        out += body
    out += [(line, (STATE, i + 1)) for i, line in enumerate(state_lines) if i >= cls_end]
    source = "\n".join(text for text, _ in out) + "\n"
    return AssembledModule(source, [origin for _, origin in out])


def _imports_end(tree: ast.Module) -> int:
    """The line after the module's leading imports (and docstring): where new imports go."""
    end = 0
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            end = node.end_lineno or end
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and end == 0:
            end = node.end_lineno or end
        else:
            break
    return end


def _split_method(name: str, code: str) -> tuple[list, list]:
    """(import lines, method lines indented into the class), each with its origin."""
    lines = code.rstrip().splitlines()
    imports, body = [], []
    for index, line in enumerate(lines):
        if _IMPORT.match(line):
            imports.append((line.strip(), (name, index + 1)))
        else:
            body.append((line, (name, index + 1)))
    while body and not body[0][0].strip():
        body.pop(0)
    dedented = textwrap.dedent("\n".join(text for text, _ in body)).splitlines()
    indented = [
        ("    " + text if text.strip() else "", origin)
        for text, (_, origin) in zip(dedented, body, strict=True)
    ]
    return imports, indented
