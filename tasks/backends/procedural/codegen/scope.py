"""The local names of one generated tool: argument checks, entity handles, paths and operands.

A *handle* is an entity record the tool reads or writes: the target, an entity named by an id
argument, or one reached by following ref fields (``target.book_id``). Rule and effect codegen ask
the scope for expressions; the scope remembers which handles they touched, so the method looks up
exactly those records (each with its own "not found" error) before any check runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envmill.tasks.backends.procedural.codegen.text import error_return, human_list, lit
from envmill.tasks.backends.procedural.spec.domain import ArgSpec, EntitySpec
from envmill.tasks.backends.procedural.spec.paths import (
    PathError,
    find_arg,
    resolve_operand,
    resolve_path,
)

if TYPE_CHECKING:
    from envmill.tasks.backends.procedural.plan import EnvPlan, ToolPlan

Handle = tuple[str, ...]
RESERVED = {
    "self",
    "now",
    "moment",
    "count",
    "counts",
    "item",
    "items",
    "record",
    "new_id",
    "total",
    "needle",
    "key",
    "data",
    "datetime",
    "timedelta",
    "TypedDict",
    "dict",
    "str",
    "int",
    "float",
    "bool",
    "len",
    "list",
    "sum",
    "round",
    "any",
    "isinstance",
}
_TYPE_TESTS = {
    "int": ("isinstance({n}, bool) or not isinstance({n}, int)", "an integer"),
    "float": ("isinstance({n}, bool) or not isinstance({n}, int | float)", "a number"),
    "bool": ("not isinstance({n}, bool)", "true or false"),
}


def to_single_quotes(expr: str) -> str:
    """An expression usable inside a double-quoted f-string (subscript keys are identifiers)."""
    return expr.replace('"', "'")


class OpScope:
    """Names and lookups of one tool method."""

    def __init__(self, plan: EnvPlan, tool: ToolPlan) -> None:
        self.plan, self.tool, self.op = plan, tool, tool.op
        self.spec = plan.spec
        self.entity: EntitySpec = plan.entity(self.op.entity)
        self.handles: dict[Handle, str] = {}
        self.used: set[str] = RESERVED | {arg.name for arg in self.op.args}
        self.uses_now = False
        self.new_values: dict[str, str] = {}
        if self.op.kind == "create":
            self.handles[("new",)] = "record"
        for arg in self.op.args:
            if arg.type == "ref" and not arg.optional:
                self.ensure_handle((arg.name,))

    # -- handles -------------------------------------------------------------------------------
    def root(self, subject: str) -> str:
        return self.entity.id_field if subject == "target" else subject

    def handle_entity(self, key: Handle) -> EntitySpec:
        key = (self.root(key[0]), *key[1:])
        if key == ("new",):
            return self.entity
        arg = find_arg(self.op, key[0])
        if arg is None:  # the spec check resolved every handle
            raise PathError(f"unknown argument '{key[0]}'")
        entity = self.plan.entity(arg.entity or "")
        for hop in key[1:]:
            entity = self.plan.entity(entity.fields[hop].entity or "")
        return entity

    def ensure_handle(self, key: Handle) -> str:
        """The variable holding the record at ``key``, registering it (and its parents)."""
        key = (self.root(key[0]), *key[1:])
        if key in self.handles:
            return self.handles[key]
        if len(key) > 1:
            self.ensure_handle(key[:-1])
        stem = key[-1].removesuffix("_id")
        name = stem if stem not in self.used and stem.isidentifier() else None
        if name is None and len(key) > 1:
            name = f"{self.handles[key[:-1]]}_{stem}"
        name = name if name and name not in self.used else f"{stem}_record"
        self.used.add(name)
        self.handles[key] = name
        return name

    def id_expr(self, key: Handle) -> str:
        """The id of the record at ``key`` (an argument, or a ref field of its parent)."""
        key = (self.root(key[0]), *key[1:])
        if key == ("new",):
            return "new_id"
        if len(key) == 1:
            return key[0]
        return f'{self.ensure_handle(key[:-1])}["{key[-1]}"]'

    def describe(self, key: Handle) -> str:
        """f-string text naming a record, e.g. ``book {book_id}``."""
        title = self.handle_entity(key).title
        return f"{title} {{{to_single_quotes(self.id_expr(key))}}}"

    # -- expressions ---------------------------------------------------------------------------
    def path(self, path: str) -> str:
        resolved = resolve_path(self.spec, self.op, path)
        var = self.ensure_handle(resolved.handle)
        return f'{var}["{resolved.field}"]'

    def path_owner(self, path: str) -> Handle:
        resolved = resolve_path(self.spec, self.op, path)
        return (self.root(resolved.subject), *resolved.hops)

    def operand(self, value: str | int | float) -> str:
        ref = resolve_operand(self.spec, self.op, value)
        if ref.kind == "const":
            return lit(ref.value)
        if ref.kind == "limit":
            return f"self.{str(ref.value).upper()}"
        if ref.kind == "arg":
            return str(ref.value)
        return self.path(str(value))

    def operand_text(self, value: str | int | float) -> str:
        """f-string text describing an operand and its current value."""
        ref = resolve_operand(self.spec, self.op, value)
        code = to_single_quotes(self.operand(value))
        if ref.kind == "const":
            return lit(ref.value)
        if ref.kind == "limit":
            return f"the limit {{{code}}}"
        if ref.kind == "arg":
            return f"{str(ref.value).replace('_', ' ')} ({{{code}!r}})"
        resolved = ref.at
        field = resolved.field.replace("_", " ")
        return f"the {field} of {self.describe(resolved.handle)} ({{{code}}})"

    def now(self) -> str:
        self.uses_now = True
        return "now"

    # -- generated blocks ----------------------------------------------------------------------
    def lookup_lines(self) -> list[str]:
        lines: list[str] = []
        for key, var in self.handles.items():
            if key == ("new",):
                continue
            entity = self.handle_entity(key)
            ident = self.id_expr(key)
            lines.append(f"{var} = self.{entity.plural}.get({ident})")
            lines.append(f"if {var} is None:")
            text = f"{entity.title.capitalize()} '{{{to_single_quotes(ident)}}}' not found"
            if len(key) > 1:
                text += f" (the {key[-1]} of {self.describe(key[:-1])})"
            lines.append(f"    {error_return(f'f{lit(text)}')}")
        if self.uses_now:
            lines.append("now = datetime.fromisoformat(self.current_time)")
        return lines


def arg_check_lines(scope: OpScope, arg: ArgSpec) -> list[str]:
    """Type and range checks of one argument, each failure an error return."""
    name = arg.name
    guard = f"{name} is not None and " if arg.optional else ""
    test, expected = _TYPE_TESTS.get(arg.type or "str", ("not isinstance({n}, str)", "a string"))
    test = test.format(n=name)
    lines = _check(guard, test, f'"Invalid {name}: expected {expected}"')
    if arg.type == "str" and not arg.optional:
        lines += _check("", f"not {name}.strip()", f'"Invalid {name}: must not be empty"')
    if arg.type == "enum":
        allowed = lit(tuple(arg.values))
        text = f"Invalid {name} {{{name}!r}}: must be one of {human_list(arg.values)}"
        lines += _check(guard, f"{name} not in {allowed}", f"f{lit(text)}")
    if arg.type in ("int", "float"):
        lines += _range_check(guard, name, arg.min, arg.max)
    if arg.type in ("date", "datetime"):
        shape = "YYYY-MM-DD" if arg.type == "date" else "YYYY-MM-DDTHH:MM:SS"
        text = f"Invalid {name} {{{name}!r}}: expected an ISO {arg.type} ({shape})"
        lines += _check(guard, f"self._parse_time({name}) is None", f"f{lit(text)}")
    if arg.type == "ref" and arg.optional:
        entity = scope.plan.entity(arg.entity or "")
        text = f"{entity.title.capitalize()} '{{{name}}}' not found"
        lines += _check(guard, f"{name} not in self.{entity.plural}", f"f{lit(text)}")
    return lines


def _check(guard: str, test: str, message: str) -> list[str]:
    if guard and " or " in test:
        test = f"({test})"
    return [f"if {guard}{test}:", f"    {error_return(message)}"]


def _range_check(guard: str, name: str, low: float | None, high: float | None) -> list[str]:
    tests, words = [], []
    if low is not None:
        tests.append(f"{name} < {_num(low)}")
        words.append(f"at least {_num(low)}")
    if high is not None:
        tests.append(f"{name} > {_num(high)}")
        words.append(f"at most {_num(high)}")
    if not tests:
        return []
    text = f"Invalid {name} {{{name}}}: must be {' and '.join(words)}"
    return _check(guard, " or ".join(tests), f"f{lit(text)}")


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)
