"""The state contract of DESIGN §3.1, checked on the source: what a probe call would only show
sometimes (or never, for state that no ``vars(instance)`` holds) is refused here with its line.

- ``__init__`` takes no required arguments;
- every attribute a method sets is created in ``__init__`` (or in a helper ``__init__`` calls on
  ``self``), and no method deletes one;
- class attributes are constants: no method changes one, through the class, ``cls``,
  ``type(self)`` or ``self`` (a class-level list that ``self.items.append`` grows);
- module variables are constants too;
- an attribute ``__init__`` only annotates (``self.x: int``) is not state: a method that uses it
  is refused, and an unused one is a warning;
- the values written into the state are JSON values (``state_values``).

Every message names the line and says what to write instead, for a model's repair turn.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TypeGuard

from envmill.schemas.environment import PolicyViolation
from envmill.tasks.envs.policy.names import violation
from envmill.tasks.envs.reading import (
    Function,
    class_chain,
    instance_names,
    load_environment,
    methods_of,
    walk_nodes,
)
from envmill.tasks.envs.state_values import check_stored_values
from envmill.tasks.envs.state_writes import Root, WriteScope, find_writes, flat_targets

_MUTABLE_CALLS = frozenset(
    {"list", "dict", "set", "defaultdict", "OrderedDict", "Counter", "deque", "bytearray"}
)


@dataclass
class ContractFindings:
    """What the static contract check found: refusals, and warnings that do not refuse."""

    violations: list[PolicyViolation] = field(default_factory=list)
    warnings: list[PolicyViolation] = field(default_factory=list)


@dataclass
class _ClassFacts:
    """What the rules need to know about the environment class."""

    name: str
    class_names: frozenset[str]
    methods: list[Function]
    created: set[str]  # attributes __init__ (or a helper it calls on self) assigns
    initializers: set[str]  # __init__ and the helpers it calls on self
    annotated: dict[str, tuple[int, str]]  # attribute -> (line, the assignment to write)
    class_attrs: set[str]  # names the class (or a module base) defines
    members: set[str]  # methods and properties: assigning one is not creating state
    module_mutables: set[str]


def check_state_contract(source: str) -> ContractFindings:
    """Every contract violation of an environment module, by line (the module passed the policy
    and has an environment class)."""
    tree, cls = load_environment(source)
    facts = _read_facts(tree, cls)
    found = [
        *_init_signature(cls),
        *_shared_class_values(tree, facts),
        *check_stored_values(tree, cls),
    ]
    written: set[str] = set()
    told: set[tuple[str, str]] = set()  # (method, message): one line is enough to fix it
    functions = [n for n in tree.body if isinstance(n, Function)]
    for fn in [*facts.methods, *functions]:
        scope = WriteScope(fn, facts.class_names, facts.module_mutables, fn in facts.methods)
        writes = find_writes(fn, scope)
        for node, root, how in sorted(writes, key=lambda write: write[0].lineno):
            problem = _write_problem(fn, facts, root, how)
            if problem and (problem[0] == "class_state" or (fn.name, problem[1]) not in told):
                told.add((fn.name, problem[1]))
                found.append(violation(problem[0], node.lineno, problem[1]))
            if root[0] == "instance":
                written.add(root[1])
    read = set()
    for fn in facts.methods:
        for node in _annotated_reads(fn, facts):
            read.add(node.attr)
            if node.attr not in written:  # a write is refused already, with the same fix
                found.append(_unassigned_read(fn, node, *facts.annotated[node.attr]))
    warnings = [
        violation(
            "unassigned_attribute",
            line,
            f"self.{name} is annotated in __init__ but never assigned, so it is not state (an "
            f"annotation creates no attribute); assign it a default ({example}) or remove it",
        )
        for name, (line, example) in facts.annotated.items()
        if name not in written | read
    ]
    return ContractFindings(_sorted(found), _sorted(warnings))


def _shared_class_values(tree: ast.Module, facts: _ClassFacts) -> list[PolicyViolation]:
    """``self.items = self.DEFAULT_ITEMS`` in ``__init__``: the instance's state is then the
    class's own dict, and every tool that changes it changes the class."""
    mutable = {
        name
        for klass in class_chain(tree)
        for stmt in klass.body
        for name, value in _assigned_names(stmt)
        if _is_mutable(value)
    }
    found = []
    for fn in facts.methods:
        if fn.name not in facts.initializers:
            continue
        scope = WriteScope(fn, facts.class_names, facts.module_mutables)
        for node in walk_nodes(fn):
            if not isinstance(node, ast.Assign | ast.AnnAssign):
                continue
            value = node.value
            root = scope.root(value) if isinstance(value, ast.Attribute) else None
            if root is None or root[1] not in mutable:
                continue
            if root[0] == "class" or root[1] not in facts.created:  # self.X: the class's X
                found.append(
                    violation(
                        "class_state",
                        node.lineno,
                        f"'{fn.name}' hands the class attribute {root[1]} itself to the "
                        f"instance, so every change a tool makes changes {facts.name}."
                        f"{root[1]} too (class attributes are constants); give the "
                        f"instance its own copy: copy.deepcopy(self.{root[1]})",
                    )
                )
    return found


def _sorted(found: list[PolicyViolation]) -> list[PolicyViolation]:
    return sorted(dict.fromkeys(found), key=lambda v: v.line)


# --- facts --------------------------------------------------------------------------------------


def _read_facts(tree: ast.Module, cls: ast.ClassDef) -> _ClassFacts:
    methods = methods_of(cls)
    by_name = {fn.name: fn for fn in methods}
    initializers = _initializers(by_name)
    created: set[str] = set()
    annotated: dict[str, tuple[int, str]] = {}
    for name in initializers:
        fn = by_name[name]
        for target, value, line, annotation in _attribute_writes(fn, instance_names(fn)):
            if value:
                created.add(target)
            else:
                annotated.setdefault(target, (line, _example(target, annotation)))
    class_attrs = {
        name
        for klass in class_chain(tree)
        for stmt in klass.body
        for name, _ in _assigned_names(stmt)
    }
    members = {fn.name for fn in methods}
    return _ClassFacts(
        name=cls.name,
        class_names=frozenset(c.name for c in class_chain(tree)),
        methods=methods,
        created=created,
        initializers=initializers,
        annotated={k: v for k, v in annotated.items() if k not in created},
        class_attrs=class_attrs,
        members=members,
        module_mutables={
            name
            for stmt in tree.body
            for name, value in _assigned_names(stmt)
            if _is_mutable(value)
        },
    )


def _initializers(by_name: dict[str, Function]) -> set[str]:
    """``__init__`` and, transitively, the methods it calls on ``self``."""
    if "__init__" not in by_name:
        return set()
    found, todo = {"__init__"}, ["__init__"]
    while todo:
        fn = by_name[todo.pop()]
        owners = instance_names(fn)
        for node in walk_nodes(fn):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in owners
                and node.func.attr in by_name
                and node.func.attr not in found
            ):
                found.add(node.func.attr)
                todo.append(node.func.attr)
    return found


def _attribute_writes(
    fn: Function, owners: frozenset[str]
) -> list[tuple[str, bool, int, ast.expr | None]]:
    """(attribute, assigned a value?, line, annotation) for each ``self.x = ...`` or
    ``self.x: T`` in ``fn``."""
    found = []
    for node in walk_nodes(fn):
        annotation = None
        if isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            has_value = True
        elif isinstance(node, ast.AnnAssign):
            targets, has_value = [node.target], node.value is not None
            annotation = node.annotation
        elif _is_setattr(node, owners):
            name = node.args[1]
            if isinstance(name, ast.Constant):  # _is_setattr: a string literal
                found.append((name.value, True, node.lineno, None))
            continue
        else:
            continue
        for target in flat_targets(targets):
            if _is_owner_attribute(target, owners):
                found.append((target.attr, has_value, node.lineno, annotation))
    return found


_DEFAULTS = {"int": "0", "float": "0.0", "str": '""', "bool": "False", "list": "[]", "dict": "{}"}


def _example(name: str, annotation: ast.expr | None) -> str:
    """``self.x: int = 0``: the assignment that makes an annotated attribute state."""
    text = ast.unparse(annotation) if annotation is not None else "T"
    head = text.split("[", 1)[0].rsplit(".", 1)[-1]
    default = "None" if "None" in text or "Optional" in text else _DEFAULTS.get(head.lower())
    return f"self.{name}: {text} = {default or '<default>'}"


def _assigned_names(stmt: ast.stmt) -> list[tuple[str, ast.expr | None]]:
    if isinstance(stmt, ast.Assign):
        return [(t.id, stmt.value) for t in stmt.targets if isinstance(t, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
        return [(stmt.target.id, stmt.value)]
    return []


def _is_mutable(value: ast.expr | None) -> bool:
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _MUTABLE_CALLS
    return False


def _is_owner_attribute(node: ast.AST, owners: frozenset[str]) -> TypeGuard[ast.Attribute]:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in owners
    )


def _is_setattr(
    node: ast.AST, owners: frozenset[str], funcs: tuple[str, ...] = ("setattr",)
) -> TypeGuard[ast.Call]:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in funcs
        and len(node.args) >= 2
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in owners
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


# --- rules --------------------------------------------------------------------------------------


def _init_signature(cls: ast.ClassDef) -> list[PolicyViolation]:
    init = next((fn for fn in methods_of(cls) if fn.name == "__init__"), None)
    if init is None:
        return []
    args = init.args
    positional = [*args.posonlyargs, *args.args][1:]
    required = [a.arg for a in positional[: len(positional) - len(args.defaults)]]
    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    if not required:
        return []
    return [
        violation(
            "init_args",
            init.lineno,
            f"__init__ takes required arguments ({', '.join(required)}), but the runtime "
            "constructs the class with none; create those values in __init__ instead",
        )
    ]


def _annotated_reads(fn: Function, facts: _ClassFacts) -> list[ast.Attribute]:
    """Reads of ``self.x`` where ``__init__`` only annotates ``x`` (so it does not exist)."""
    owners = instance_names(fn)
    return [
        node
        for node in walk_nodes(fn)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
        and _is_owner_attribute(node, owners)
        and node.attr in facts.annotated
        and node.attr not in facts.class_attrs
    ]


def _unassigned_read(fn: Function, node: ast.Attribute, line: int, example: str) -> PolicyViolation:
    return violation(
        "unassigned_attribute",
        node.lineno,
        f"'{fn.name}' reads self.{node.attr}, which __init__ only annotates (line {line}), so it "
        f"does not exist; assign it in __init__ ({example})",
    )


def _write_problem(
    fn: Function, facts: _ClassFacts, root: Root, how: str
) -> tuple[str, str] | None:
    kind, name = root
    where = f"'{fn.name}'"
    if kind == "module":
        return (
            "module_state",
            f"{where} changes the module variable {name}, which no saved state holds; keep it "
            f"in an instance attribute created in __init__ (self.{name.lower()} = ...)",
        )
    if kind == "class" or (
        how == "mutate" and name in facts.class_attrs and name not in facts.created
    ):
        return (
            "class_state",
            f"{where} changes {facts.name}.{name}, a class attribute that every instance shares "
            f"and no saved state holds; create self.{name} in __init__ instead (class "
            "attributes are constants)",
        )
    if how == "delete" and fn.name != "__init__":
        return (
            "attribute_deleted",
            f"{where} deletes self.{name}, a state attribute; set it to an empty value instead "
            "(a state keeps every attribute __init__ creates)",
        )
    if how != "rebind" or fn.name in facts.initializers or name in facts.created:
        return None
    if name in facts.members:
        return None
    if name in facts.annotated:
        line, example = facts.annotated[name]
        detail = (
            f"which __init__ only annotates (line {line}; an annotation creates nothing); "
            f"assign it there ({example})"
        )
    elif name in facts.class_attrs:
        detail = (
            f"which only the class defines (class attributes are constants); create it in "
            f"__init__ (self.{name} = <initial value>) so it is part of the state"
        )
    else:
        detail = (
            f"which __init__ does not create; create every attribute a tool writes in __init__ "
            f"(self.{name} = <empty value>) so it is part of the state"
        )
    return ("attribute_outside_init", f"{where} sets self.{name}, {detail}")
