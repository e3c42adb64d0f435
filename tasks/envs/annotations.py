"""Type annotations and docstrings → JSON Schema, read from a module's AST alone (DESIGN §3.1).

Environment modules are untrusted, so their type hints are never evaluated: names are looked up in
the module's own TypedDicts, Enums and type aliases, and anything unknown becomes ``{}`` (any
value), which keeps a derived schema permissive rather than wrong.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from typing import Any

_PREFIXES = (
    "typing_extensions.",
    "typing.",
    "collections.abc.",
    "collections.",
    "builtins.",
    "enum.",
    "dataclasses.",
)
_SCALARS = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "None": "null",
    "NoneType": "null",
}
_OBJECTS = frozenset(
    {"dict", "Dict", "Mapping", "MutableMapping", "DefaultDict", "defaultdict", "OrderedDict"}
)
_ARRAYS = frozenset(
    {
        "list",
        "List",
        "Sequence",
        "MutableSequence",
        "set",
        "Set",
        "frozenset",
        "FrozenSet",
        "AbstractSet",
        "MutableSet",
        "tuple",
        "Tuple",
        "Iterable",
        "Collection",
    }
)
_WRAPPERS = frozenset({"Annotated", "Required", "NotRequired", "ReadOnly", "ClassVar", "Final"})
ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})
_SECTIONS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "keyword args",
        "keyword arguments",
        "other parameters",
        "returns",
        "return",
        "yields",
        "raises",
        "example",
        "examples",
        "note",
        "notes",
        "attributes",
        "see also",
        "todo",
        "warning",
        "warnings",
    }
)
# Sections that state what a tool enforces: they belong in the description the agent reads.
_RULE_SECTIONS = frozenset(
    {
        "constraints",
        "constraint",
        "rules",
        "business rules",
        "preconditions",
        "requirements",
        "restrictions",
        "policy",
        "policies",
        "conditions",
        "limits",
        "validation",
    }
)
_RULE_WORDS = ("constraint", "rule", "precondition", "requirement", "restriction", "polic")
_BULLET = re.compile(r"^(?:[-*\u2022]|\d{1,2}[.)])\s+")
_ARG_SECTIONS = frozenset({"args", "arguments", "parameters", "keyword args", "keyword arguments"})
_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*):(.*)$")
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def type_name(node: ast.AST | None) -> str | None:
    """The dotted name of a Name/Attribute with typing-like module prefixes stripped, else None."""
    if not isinstance(node, ast.Name | ast.Attribute):
        return None
    text = ast.unparse(node)
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def literal_value(node: ast.AST | None) -> tuple[bool, Any]:
    """``(True, value)`` when ``node`` is a JSON-compatible literal (tuples become lists)."""
    if node is None:
        return False, None
    try:
        return True, json.loads(json.dumps(ast.literal_eval(node)))
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False, None


def infer_value_schema(value: Any) -> dict[str, Any]:
    """A shallow schema from a runtime JSON value; ``None`` says nothing about the type."""
    for kind, name in (
        (bool, "boolean"),
        (int, "integer"),
        (float, "number"),
        (str, "string"),
        (list | tuple, "array"),
        (dict, "object"),
    ):
        if isinstance(value, kind):
            return {"type": name}
    return {}


def infer_node_schema(node: ast.AST | None) -> dict[str, Any]:
    """A shallow schema from a default expression such as ``{}``, ``[]``, ``0`` or ``dict()``."""
    ok, value = literal_value(node)
    if ok:
        return infer_value_schema(value)
    if isinstance(node, ast.Dict | ast.DictComp):
        return {"type": "object"}
    if isinstance(node, ast.List | ast.ListComp | ast.Tuple):
        return {"type": "array"}
    if isinstance(node, ast.JoinedStr):
        return {"type": "string"}
    if isinstance(node, ast.Call):
        name = type_name(node.func)
        if name in _OBJECTS:
            return {"type": "object"}
        if name in ("list", "tuple"):
            return {"type": "array"}
        if name in _SCALARS and name != "None":
            return {"type": _SCALARS[name]}
    return {}


def enum_schema(values: list[Any]) -> dict[str, Any]:
    """``{"type": T, "enum": values}``, with ``type`` only when every value has the same one."""
    types = {json.dumps(infer_value_schema(v) or {"type": "null"}) for v in values}
    if len(types) == 1:
        return {**json.loads(types.pop()), "enum": values}
    return {"enum": values}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that admits null too: ``"type": ["string", "null"]`` (plain JSON Schema, which
    non-strict OpenAI tools take), null among an enum's values or a null choice in an ``anyOf``.

    A tool parameter whose default is None declared only ``"type": "string"`` with
    ``"default": null``, a schema that refuses its own default.
    """
    if not schema or _admits_null(schema):
        return schema
    out = dict(schema)
    kind = out.get("type")
    if kind is not None:
        out["type"] = [*(kind if isinstance(kind, list) else [kind]), "null"]
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    if "anyOf" in out:
        out["anyOf"] = [*out["anyOf"], {"type": "null"}]
    return out


def _admits_null(schema: dict[str, Any]) -> bool:
    """Whether null is a valid value of ``schema`` as :func:`nullable` and the resolver write it
    (``{}`` admits anything)."""
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if any(isinstance(o, dict) and _admits_null(o) for o in schema.get("anyOf") or []):
        return True
    return not ({"type", "enum", "anyOf", "$ref", "const"} & set(schema))


def parse_forward_ref(text: str) -> ast.expr | None:
    """The expression of a string annotation such as ``"Book"``, or None when it is not one."""
    try:
        return ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None


def _union_members(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_union_members(node.left), *_union_members(node.right)]
    return [node]


def _subscript_args(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _is_none(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None or node.value in ("None", "NoneType")
    return type_name(node) in ("None", "NoneType")


class TypeResolver:
    """Turns annotation nodes into JSON Schema using the TypedDicts, Enums and aliases of a module.

    Args:
        tree: the parsed module whose own type definitions resolve names.
        keep_null: True for a state schema (an ``X | None`` attribute may hold null); False for
            tool parameters, where ``X | None`` just means "optional" and the schema is X's.
    """

    def __init__(self, tree: ast.Module, keep_null: bool = False) -> None:
        self.keep_null = keep_null
        self._typed_dicts: dict[str, list[tuple[str, ast.expr, bool]]] = {}
        self._enums: dict[str, list[Any]] = {}
        self._aliases: dict[str, ast.expr] = {}
        self._active: set[str] = set()
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef):
                self._collect_class(stmt)
            elif isinstance(stmt, ast.Assign | ast.AnnAssign):
                self._collect_assignment(stmt)

    def _collect_class(self, cls: ast.ClassDef) -> None:
        bases = [type_name(base) for base in cls.bases]
        if any(b == "TypedDict" or b in self._typed_dicts for b in bases):
            total = next(
                (
                    k.value.value
                    for k in cls.keywords
                    if k.arg == "total" and isinstance(k.value, ast.Constant)
                ),
                True,
            )
            fields = [f for b in bases for f in self._typed_dicts.get(b or "", [])]
            fields += [
                (s.target.id, s.annotation, bool(total))
                for s in cls.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            ]
            self._typed_dicts[cls.name] = fields
        elif any(b in ENUM_BASES for b in bases):
            found = [literal_value(s.value) for s in cls.body if isinstance(s, ast.Assign)]
            self._enums[cls.name] = [value for ok, value in found if ok]

    def _collect_assignment(self, stmt: ast.Assign | ast.AnnAssign) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name) or stmt.value is None:
            return
        name, value = targets[0].id, stmt.value
        if isinstance(value, ast.Call) and type_name(value.func) == "TypedDict":
            self._typed_dicts[name] = _functional_typed_dict(value)
        elif isinstance(value, ast.Call) and type_name(value.func) == "NewType" and value.args[1:]:
            self._aliases[name] = value.args[1]
        elif isinstance(value, ast.Subscript | ast.Name | ast.Attribute | ast.BinOp):
            self._aliases[name] = value

    def schema(self, node: ast.expr | None) -> dict[str, Any]:
        """The JSON Schema of an annotation; ``{}`` (any value) when missing or unknown."""
        if node is None:
            return {}
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str) and node.value not in ("None", "NoneType"):
                return self.schema(parse_forward_ref(node.value))
            return {"type": "null"} if _is_none(node) else {}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self._union(_union_members(node))
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        name = type_name(node)
        return self._named(name) if name else {}

    def admits_none(self, node: ast.expr | None) -> bool:
        """Whether the annotation says None is allowed (``Optional[X]``, ``X | None``, ...)."""
        if node is None:
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and not _is_none(node):
            return self.admits_none(parse_forward_ref(node.value))
        if _is_none(node):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return any(self.admits_none(m) for m in _union_members(node))
        if isinstance(node, ast.Subscript):
            name, args = type_name(node.value), _subscript_args(node)
            if name == "Optional":
                return True
            if name in ("Union", "Literal"):
                return any(self.admits_none(a) for a in args)
            return name in _WRAPPERS and self.admits_none(args[0])
        name = type_name(node)
        if name not in self._aliases:
            return False
        return self._guarded(name, lambda: self.admits_none(self._aliases[name]), False)

    def _guarded(self, name: str, resolve: Callable[[], Any], fallback: Any) -> Any:
        """Resolves a module-defined name once per chain, so recursive types end in ``fallback``."""
        if name in self._active:
            return fallback
        self._active.add(name)
        try:
            return resolve()
        finally:
            self._active.discard(name)

    def _named(self, name: str) -> dict[str, Any]:
        if name in _SCALARS:
            return {"type": _SCALARS[name]}
        if name in _OBJECTS:
            return {"type": "object"}
        if name in _ARRAYS:
            return {"type": "array"}
        if name in self._enums:
            return enum_schema(self._enums[name]) if self._enums[name] else {}
        if name in self._typed_dicts:
            return self._guarded(name, lambda: self._typed_dict_schema(name), {})
        if name in self._aliases:
            return self._guarded(name, lambda: self.schema(self._aliases[name]), {})
        return {}

    def _subscript(self, node: ast.Subscript) -> dict[str, Any]:
        name, args = type_name(node.value), _subscript_args(node)
        if name == "Optional":
            return self._union([*args, ast.Constant(None)])
        if name == "Union":
            return self._union(args)
        if name in _WRAPPERS:
            return self.schema(args[0])
        if name == "Literal":
            found = [literal_value(a) for a in args]
            return enum_schema([value for ok, value in found if ok])
        if name in _OBJECTS:
            values = self.schema(args[-1]) if len(args) == 2 else {}
            return (
                {"type": "object", "additionalProperties": values} if values else {"type": "object"}
            )
        if name in _ARRAYS:
            return self._array(name, args)
        return self.schema(node.value)

    def _array(self, name: str, args: list[ast.expr]) -> dict[str, Any]:
        fixed = name in ("tuple", "Tuple") and not (len(args) == 2 and _is_ellipsis(args[1]))
        items = [self.schema(a) for a in (args if fixed else args[:1])]
        schema: dict[str, Any] = {"type": "array"}
        unique = _dedupe(items)
        if unique and all(unique):
            schema["items"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
        if fixed:
            schema["minItems"] = schema["maxItems"] = len(args)
        return schema

    def _union(self, members: list[ast.expr]) -> dict[str, Any]:
        has_none = any(_is_none(m) for m in members)
        schemas = _dedupe([self.schema(m) for m in members if not _is_none(m)])
        if not schemas:
            return {"type": "null"}
        if not all(schemas):
            return {}
        if has_none and self.keep_null:
            schemas.append({"type": "null"})
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}

    def _typed_dict_schema(self, name: str) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for key, annotation, total in self._typed_dicts[name]:
            node = _unquote(annotation)
            marker = type_name(node.value) if isinstance(node, ast.Subscript) else None
            properties[key] = self.schema(node)
            if marker == "Required" or (total and marker != "NotRequired"):
                required.append(key)
        return {"type": "object", "properties": properties, "required": required}


def _functional_typed_dict(call: ast.Call) -> list[tuple[str, ast.expr, bool]]:
    """Fields of ``TypedDict("Book", {"title": str}, total=False)`` (or the keyword form)."""
    total_kw = next((k.value for k in call.keywords if k.arg == "total"), None)
    total = not (isinstance(total_kw, ast.Constant) and total_kw.value is False)
    spec = call.args[1] if len(call.args) > 1 else None
    if isinstance(spec, ast.Dict):
        return [
            (k.value, v, total)
            for k, v in zip(spec.keys, spec.values, strict=True)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)
        ]
    return [(k.arg, k.value, total) for k in call.keywords if k.arg and k.arg != "total"]


def _unquote(node: ast.expr) -> ast.expr | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return parse_forward_ref(node.value)
    return node


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _dedupe(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for schema in schemas:
        seen.setdefault(json.dumps(schema, sort_keys=True), schema)
    return list(seen.values())


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The tool description and the ``Args:`` descriptions of a Google-style docstring.

    The description is the summary (text before the first section) followed by every rule
    section the docstring states (``Constraints:``, ``Rules:``, ``Preconditions:``, ``Business
    rules:``, ...), so the agent sees the rules a tool enforces; ``Args:``, ``Returns:``,
    ``Raises:`` and the other sections stay out. Both ``name: text`` and ``name (type): text``
    entries are read; deeper-indented lines continue the entry above. Whitespace is collapsed,
    since both end up in one-line schema fields.
    """
    summary: list[str] = []
    args: dict[str, str] = {}
    rules: list[tuple[str, list[str]]] = []
    section: str | None = None  # None (the summary), "args", "rule" or "other"
    entry: tuple[str | None, int | None] = (None, None)  # the Args entry and its indent
    for line in (doc or "").splitlines():
        kind = _section_kind(line, started=section is not None)
        if kind:
            section, entry = kind, (None, None)
            if kind == "rule":
                header = _HEADER.match(line)
                rules.append((header[1].strip(), []))  # type: ignore[index]
                _add_rule_line(rules[-1][1], header[2])  # type: ignore[index]
        elif section is None:
            summary.append(line)
        elif section == "rule":
            _add_rule_line(rules[-1][1], line)
        elif section == "args" and line.strip():
            entry = _add_arg_line(args, line, *entry)
    parts = [_collapse(" ".join(summary))]
    parts += [f"{title}: {' '.join(map(_sentence, items))}" for title, items in rules if items]
    description = " ".join(part for part in parts if part)
    return description, {name: _collapse(text) for name, text in args.items()}


def _section_kind(line: str, started: bool) -> str | None:
    """Whether ``line`` starts a section, and which kind; after the first section, any
    unindented ``Title:`` line with nothing after the colon starts one (an unknown one is
    dropped rather than read as part of the entry above)."""
    header = _HEADER.match(line)
    if header is None:
        return None
    key = header[1].strip().lower()
    if key in _ARG_SECTIONS:
        return "args"
    if key in _RULE_SECTIONS or any(word in key for word in _RULE_WORDS):
        return "rule"
    if key in _SECTIONS or (started and not header[2].strip()):
        return "other"
    return None


def _add_arg_line(
    args: dict[str, str], line: str, current: str | None, entry_indent: int | None
) -> tuple[str | None, int | None]:
    indent = len(line) - len(line.lstrip())
    entry_indent = indent if entry_indent is None else entry_indent
    match = _ARG_LINE.match(line.strip())
    if match and indent <= entry_indent:
        current, args[match[1]] = match[1], match[2]
    elif current is not None:
        args[current] += " " + line.strip()
    return current, entry_indent


def _add_rule_line(items: list[str], line: str) -> None:
    """A bulleted line (``-``, ``*``, ``1.``) starts a rule; any other line continues one."""
    text = line.strip()
    bullet = _BULLET.match(text)
    if bullet:
        items.append(text[bullet.end() :])
    elif text and items:
        items[-1] += " " + text
    elif text:
        items.append(text)


def _sentence(text: str) -> str:
    text = _collapse(text)
    return text if not text or text[-1] in ".!?;:" else text + "."


def _collapse(text: str) -> str:
    return " ".join(text.split())
