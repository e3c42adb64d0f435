"""What the factory learns from an environment module's source (DESIGN §3.1), by `ast` only.

Generated code is untrusted and never runs in the factory process, so the id, the environment class,
the tool schemas and the state schema are all read off the syntax tree (the tool kinds too, in
``tool_kinds``). The runtime
(the sandbox) stays the truth about behaviour; this module only describes the source.
"""

from __future__ import annotations

import ast
import copy
import functools
from typing import Any

from envmill.schemas.environment import FunctionSpec, ToolSchema
from envmill.schemas.ids import sha256_hex
from envmill.tasks.envs.annotations import (
    ENUM_BASES,
    TypeResolver,
    infer_node_schema,
    infer_value_schema,
    literal_value,
    nullable,
    parse_docstring,
    type_name,
)

Function = ast.FunctionDef | ast.AsyncFunctionDef

_NON_ENV_BASES = ENUM_BASES | {"TypedDict", "NamedTuple", "Protocol", "Exception", "BaseException"}
_PROPERTY_DECORATORS = frozenset({"property", "cached_property", "setter", "getter", "deleter"})


class EnvModuleError(ValueError):
    """The source is not a usable environment module; the message is one line naming why."""


def parse_module(source: str) -> ast.Module:
    """Parses ``source``, turning a syntax error into a one-line :class:`EnvModuleError`.

    The tree is shared by every caller reading the same source (admission reads one module
    about ten ways), so it must be read, never changed."""
    try:
        return _parse_cached(source)
    except SyntaxError as exc:
        raise EnvModuleError(f"line {exc.lineno or 0}: syntax error: {exc.msg}") from None
    except ValueError as exc:  # e.g. null bytes in the source
        raise EnvModuleError(f"line 0: syntax error: {exc}") from None


@functools.lru_cache(maxsize=32)  # the modules of the topics one process has in flight
def _parse_cached(source: str) -> ast.Module:
    return ast.parse(source)


def compute_env_id(source: str) -> str:
    """16 hex of the sha256 of the unparsed tree, so reformatting or comments keep the id."""
    return sha256_hex(ast.unparse(parse_module(source)))[:16]


def find_environment_class(tree: ast.Module) -> ast.ClassDef:
    """The one top-level class with ``__init__`` or public methods that is not a type definition.

    A private class (``_Name``) is a helper, never the environment, as a private method is never
    a tool: its code meets the same policy, and the environment's state is still only what the
    environment class's instance holds (helpers made per call keep nothing between calls).

    Raises:
        EnvModuleError: when there is no such class or more than one.
    """
    excluded: set[str] = set()
    candidates: list[ast.ClassDef] = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        if _is_type_definition(node, excluded):
            excluded.add(node.name)
        elif node.name.startswith("_"):
            continue
        elif any(fn.name == "__init__" or not fn.name.startswith("_") for fn in methods_of(node)):
            candidates.append(node)
    if not candidates:
        raise EnvModuleError(_no_class_message(tree))
    # A base class defined in the module is part of the environment, not a second one.
    bases = {type_name(b) for c in candidates for b in c.bases}
    leaves = [c for c in candidates if c.name not in bases]
    if len(leaves) != 1:
        found = leaves or candidates
        names = ", ".join(c.name for c in found)
        raise EnvModuleError(
            f"line {found[-1].lineno}: {len(leaves)} environment classes ({names}): expected one; "
            "keep the tools in one class (helpers may be TypedDicts, dataclasses or functions)"
        )
    return leaves[0]


def _no_class_message(tree: ast.Module) -> str:
    """Why no class qualifies; a dataclass with tools is named, with what to write instead."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
            not fn.name.startswith("_") for fn in methods_of(node)
        ):
            return (
                f"line {node.lineno}: {node.name} is a type definition (a dataclass, TypedDict, "
                "Enum or exception), so it cannot be the environment; write a plain class whose "
                "__init__(self) creates every state attribute"
            )
    return "no environment class: expected one top-level class with methods"


def _is_type_definition(cls: ast.ClassDef, excluded: set[str]) -> bool:
    """TypedDicts, Enums, NamedTuples, dataclasses, exceptions (and their subclasses here)."""
    bases = [type_name(b) or "" for b in cls.bases]
    if any(
        b in _NON_ENV_BASES or b in excluded or b.endswith(("Error", "Exception", "Warning"))
        for b in bases
    ):
        return True
    decorators = [type_name(d.func if isinstance(d, ast.Call) else d) for d in cls.decorator_list]
    return "dataclass" in decorators


@functools.lru_cache(maxsize=4096)
def walk_nodes(fn: Function) -> tuple[ast.AST, ...]:
    """Every node of a function, ``ast.walk`` order, walked once: the readings of a module walk
    each method many times (kinds, contract, stored values, probe lines). Keyed by identity;
    like the trees, read them, never change them."""
    return tuple(ast.walk(fn))


def methods_of(cls: ast.ClassDef) -> list[Function]:
    return [node for node in cls.body if isinstance(node, Function)]


def decorator_names(fn: Function) -> set[str]:
    nodes = [d.func if isinstance(d, ast.Call) else d for d in fn.decorator_list]
    return {ast.unparse(node).rsplit(".", 1)[-1] for node in nodes}


def instance_names(fn: Function) -> frozenset[str]:
    """The name of the instance (or class) argument a method body reaches state through."""
    if "staticmethod" in decorator_names(fn):
        return frozenset()
    first = [*fn.args.posonlyargs, *fn.args.args][:1]
    return frozenset(a.arg for a in first)


def list_tool_methods(cls: ast.ClassDef) -> list[Function]:
    """The tools: public methods in source order, properties excluded (a redefinition wins)."""
    tools = {
        fn.name: fn
        for fn in methods_of(cls)
        if not fn.name.startswith("_") and not decorator_names(fn) & _PROPERTY_DECORATORS
    }
    return list(tools.values())


@functools.lru_cache(maxsize=8)
def load_environment(source: str) -> tuple[ast.Module, ast.ClassDef]:
    """The parsed module and its environment class, with what it inherits from module classes
    (shared like ``parse_module``'s tree: read it, never change it)."""
    tree = parse_module(source)
    return tree, _flatten(tree, find_environment_class(tree))


def class_chain(tree: ast.Module) -> list[ast.ClassDef]:
    """The environment class as written, then the classes of this module it inherits from."""
    cls = find_environment_class(tree)
    return [cls, *_module_bases(tree, cls)]


def _module_bases(tree: ast.Module, cls: ast.ClassDef) -> list[ast.ClassDef]:
    """The classes of this module that ``cls`` inherits from, nearest first (single chain)."""
    by_name = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    chain, current, seen = [], cls, {cls.name}
    while True:
        parent = next((by_name[n] for b in current.bases if (n := type_name(b)) in by_name), None)
        if parent is None or parent.name in seen:
            return chain
        chain.append(parent)
        seen.add(parent.name)
        current = parent


def _flatten(tree: ast.Module, cls: ast.ClassDef) -> ast.ClassDef:
    """``cls`` with the methods and ``__init__`` assignments it inherits from module classes.

    Analysis only: a later definition of a method wins, and every ``__init__`` body is kept
    (base first) so the state attributes a base creates are seen.
    """
    chain = [*reversed(_module_bases(tree, cls)), cls]
    if len(chain) == 1:
        return cls
    methods: dict[str, Function] = {}
    init_body: list[ast.stmt] = []
    annotations = [n for klass in chain for n in klass.body if isinstance(n, ast.AnnAssign)]
    for klass in chain:
        for fn in methods_of(klass):
            methods[fn.name] = fn
            if fn.name == "__init__":
                init_body.extend(fn.body)
    if "__init__" in methods:
        init = copy.copy(methods["__init__"])  # the node, with every init's body in MRO order
        init.body = init_body
        methods["__init__"] = init
    flat = ast.ClassDef(
        name=cls.name, bases=cls.bases, keywords=cls.keywords,
        body=[*annotations, *methods.values()], decorator_list=cls.decorator_list,
        type_params=[],
    )  # fmt: skip
    return ast.fix_missing_locations(ast.copy_location(flat, cls))


# --- tool schemas -------------------------------------------------------------------------------


def derive_tool_schemas(source: str) -> list[ToolSchema]:
    """Chat Completions tool schemas of the environment's public methods, in source order."""
    tree, cls = load_environment(source)
    resolver = TypeResolver(tree, keep_null=False)
    return [_tool_schema(fn, resolver) for fn in list_tool_methods(cls)]


def _tool_schema(fn: Function, resolver: TypeResolver) -> ToolSchema:
    description, arg_docs = parse_docstring(ast.get_docstring(fn))
    properties: dict[str, Any] = {}
    required: list[str] = []
    for arg, default in _signature(fn):
        properties[arg.arg] = _parameter_schema(arg, default, arg_docs.get(arg.arg), resolver)
        if default is None and not resolver.admits_none(arg.annotation):
            required.append(arg.arg)
    parameters = {"type": "object", "properties": properties, "required": required}
    return ToolSchema(
        function=FunctionSpec(name=fn.name, description=description, parameters=parameters)
    )


def _parameter_schema(
    arg: ast.arg, default: ast.expr | None, doc: str | None, resolver: TypeResolver
) -> dict[str, Any]:
    """One parameter's schema. One that takes None (its default, or ``X | None``) declares null
    among its types, so an agent may send the null the default states; the ``"default": null``
    stays, since it says what leaving the argument out means, as any other default does."""
    prop = resolver.schema(arg.annotation)
    if arg.annotation is None:  # an unannotated parameter is typed by its default, if any
        prop = infer_node_schema(default)
    ok, value = literal_value(default)
    if (ok and value is None) or resolver.admits_none(arg.annotation):
        prop = nullable(prop)
    if doc is not None:
        prop["description"] = doc
    if ok:
        prop["default"] = value
    return prop


def _signature(fn: Function) -> list[tuple[ast.arg, ast.expr | None]]:
    """(argument, default) pairs without the bound first argument; ``*args/**kwargs`` left out."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults, strict=True))
    if "staticmethod" not in decorator_names(fn):
        pairs = pairs[1:]
    return pairs + list(zip(args.kwonlyargs, args.kw_defaults, strict=True))


# --- state schema -------------------------------------------------------------------------------


def derive_state_schema(source: str, default_state: dict[str, Any] | None = None) -> dict[str, Any]:
    """JSON Schema of ``vars(instance)``: every attribute required, no others allowed.

    Args:
        source: the environment module.
        default_state: ``vars()`` of a fresh instance as the sandbox reported it; when given, its
            keys are the attributes (the runtime is the truth) and its values fill in types the
            source does not state.
    """
    tree, cls = load_environment(source)
    resolver = TypeResolver(tree, keep_null=True)
    known = _state_attributes(cls)
    names = list(default_state) if default_state is not None else list(known)
    properties = {}
    for name in names:
        annotation, value = known.get(name, (None, None))
        schema = resolver.schema(annotation) or infer_node_schema(value)
        if not schema and default_state is not None:
            schema = infer_value_schema(default_state[name])
        properties[name] = schema
    return {
        "type": "object",
        "properties": properties,
        "required": names,
        "additionalProperties": False,
    }


def _state_attributes(cls: ast.ClassDef) -> dict[str, tuple[ast.expr | None, ast.expr | None]]:
    """attribute → (annotation, first assigned value), from class annotations and ``__init__``."""
    found: dict[str, tuple[ast.expr | None, ast.expr | None]] = {}

    def record(name: str, annotation: ast.expr | None, value: ast.expr | None) -> None:
        old_annotation, old_value = found.get(name, (None, None))
        found[name] = (old_annotation or annotation, old_value or value)

    for stmt in cls.body:
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and not _is_class_var(stmt.annotation)
        ):
            record(stmt.target.id, stmt.annotation, stmt.value)
    init = next((fn for fn in methods_of(cls) if fn.name == "__init__"), None)
    if init is None:
        return found
    instance = next(iter(instance_names(init)), "self")
    statements = [n for n in ast.walk(init) if isinstance(n, ast.Assign | ast.AnnAssign)]
    for stmt in sorted(statements, key=lambda n: (n.lineno, n.col_offset)):
        annotation = stmt.annotation if isinstance(stmt, ast.AnnAssign) else None
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            for name, value in _attribute_pairs(target, stmt.value, instance):
                record(name, annotation, value)
    return found


def _attribute_pairs(
    target: ast.AST, value: ast.expr | None, instance: str
) -> list[tuple[str, ast.expr | None]]:
    """``self.a = v`` → [("a", v)]; ``self.a, self.b = 1, 2`` pairs element by element."""
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == instance
    ):
        return [(target.attr, value)]
    if isinstance(target, ast.Tuple | ast.List):
        values = (
            value.elts
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts)
            else [None] * len(target.elts)
        )
        return [
            pair
            for t, v in zip(target.elts, values, strict=True)
            for pair in _attribute_pairs(t, v, instance)
        ]
    return []


def _is_class_var(annotation: ast.expr) -> bool:
    node = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return type_name(node) == "ClassVar"
