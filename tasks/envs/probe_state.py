"""A richer state to probe from, and the literal values a module compares its fields with.

A default state is usually empty, so most tools only say "not found". Probes start instead from
the default state with a few records put into each empty collection whose records the state
schema describes (a ``dict[str, Member]`` of a TypedDict): ids that refer to each other, the
values the source compares a field with (``status == "active"``, ``tier not in TIERS``), dates
after ``current_time``. Whether such a state is sensible for the domain does not matter: the
probes look only at whether the states tools leave keep the contract.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from envmill.schemas.environment import ToolSchema
from envmill.tasks.envs.annotations import infer_value_schema, literal_value
from envmill.tasks.envs.probe_args import StateFacts, field_value
from envmill.tasks.envs.reading import instance_names, methods_of
from envmill.tasks.envs.state_values import stores

RECORDS = 2
_MAX_HINT_CHARS = 40
_EXAMPLE = re.compile(r"e\.g\.,?\s+'?\"?([A-Za-z]+[-_]?\d+)")


def literal_hints(tree: ast.Module) -> dict[str, list[str]]:
    """Per field or parameter name (lower case), the string constants the source compares it
    with or stores under it, in source order."""
    constants = _string_constants(tree)
    hints: dict[str, list[str]] = {}

    def add(key: str | None, values: list[str]) -> None:
        if key:
            pool = hints.setdefault(key.lower(), [])
            pool += [v for v in values if v not in pool and len(v) <= _MAX_HINT_CHARS]

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for comparator in node.comparators:
                add(_key_name(node.left), _strings(comparator, constants))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if _is_text(key) and _is_text(value):
                    add(key.value, [value.value])  # type: ignore[union-attr]
    return {key: values for key, values in hints.items() if values}


def fabricate_state(
    default: dict[str, Any],
    state_schema: dict[str, Any],
    tools: list[ToolSchema],
    hints: dict[str, list[str]],
    shapes: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """The default state with ``RECORDS`` records in each empty collection whose records the
    state schema describes (or, for an untyped one, ``shapes``: what its tools store); None when
    there is none to fill."""
    facts = StateFacts(default, hints, tag="r")
    examples = _id_examples(tools)
    properties = state_schema.get("properties") or {}
    plans = []  # (attribute, record schema, id field, keys)
    for attr, schema in properties.items():
        if default.get(attr) not in ({}, []):
            continue
        record = _record_schema(schema) or (shapes or {}).get(attr)
        if record is None:
            continue
        id_field = _id_field(attr, record)
        example = examples.get(id_field or f"{_singular(attr)}_id")
        keys = [_key(attr, example, i) for i in range(RECORDS)]
        plans.append((attr, record, id_field, keys))
        facts.collections[attr] = keys
        if id_field:
            facts.fields[id_field] = keys
    if not plans:
        return None
    state = dict(default)
    for attr, record, id_field, keys in plans:
        records = [_record(record, id_field, key, facts, i) for i, key in enumerate(keys)]
        state[attr] = dict(zip(keys, records, strict=True)) if default[attr] == {} else records
    return state


def record_shapes(cls: ast.ClassDef, tools: list[ToolSchema]) -> dict[str, dict[str, Any]]:
    """For collections the annotations leave untyped (``dict[str, dict]``): the record schema of
    the dict literals methods store in them (``self.accounts[aid] = {"owner": owner, ...}``),
    each field typed by its literal or by the tool parameter it copies."""
    parameters = {t.function.name: t.function.parameters.get("properties") or {} for t in tools}
    shapes: dict[str, dict[str, Any]] = {}
    for fn in methods_of(cls):
        if fn.name == "__init__":
            continue
        params = parameters.get(fn.name, {})
        for path, value in stores(fn, instance_names(fn)):
            attr = path[0]
            fields = _literal_fields(value, params) if path[1:] in ((), ("*",)) else {}
            if fields and attr not in shapes:
                shapes[attr] = {"type": "object", "properties": fields}
    return shapes


def _literal_fields(value: ast.expr, params: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(value, ast.Dict) or len(value.keys) < 2:
        return {}
    if not all(_is_text(k) for k in value.keys):
        return {}
    fields = {}
    for key, item in zip(value.keys, value.values, strict=True):
        if isinstance(item, ast.Name) and isinstance(params.get(item.id), dict):
            fields[key.value] = params[item.id]  # type: ignore[union-attr]
        else:
            ok, literal = literal_value(item)
            fields[key.value] = infer_value_schema(literal) if ok else {}  # type: ignore
    return fields


def _record(
    schema: dict[str, Any], id_field: str | None, key: str, facts: StateFacts, index: int
) -> dict[str, Any]:
    record = {
        name: field_value(name, prop if isinstance(prop, dict) else {}, facts, index)
        for name, prop in schema["properties"].items()
    }
    if id_field:
        record[id_field] = key
    return record


def _record_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The schema of a collection's records, when it names their fields."""
    if schema.get("type") == "object":
        record = schema.get("additionalProperties")
    elif schema.get("type") == "array":
        record = schema.get("items")
    else:
        return None
    if isinstance(record, dict) and isinstance(record.get("properties"), dict):
        return record if record["properties"] else None
    return None


def _id_field(attr: str, record: dict[str, Any]) -> str | None:
    names = list(record["properties"])
    singular = _singular(attr)
    for candidate in (f"{singular}_id", "id", f"{singular}id"):
        if candidate in names:
            return candidate
    return next((n for n in names if n.endswith("_id")), None)


def _singular(attr: str) -> str:
    return attr[:-3] + "y" if attr.endswith("ies") else attr.rstrip("s")


def _key(attr: str, example: str | None, index: int) -> str:
    """A key like the ids the tools document (``MB-0001`` → ``MB-9001``), else ``MEM-P1``."""
    if example:
        digits = re.search(r"\d+$", example)
        if digits:
            width = len(digits[0])
            number = str(9 * 10 ** (width - 1) + index + 1) if width > 1 else str(index + 1)
            return example[: digits.start()] + number
    return f"{attr[:3].upper()}-P{index + 1}"


def _id_examples(tools: list[ToolSchema]) -> dict[str, str]:
    """``member_id`` → ``MB-0001`` from parameter descriptions such as "(e.g. MB-0001)"."""
    found: dict[str, str] = {}
    for tool in tools:
        for name, prop in (tool.function.parameters.get("properties") or {}).items():
            text = prop.get("description", "") if isinstance(prop, dict) else ""
            match = _EXAMPLE.search(text)
            if match and name.endswith("id"):
                found.setdefault(name, match[1])
    return found


def _key_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and _is_text(node.slice):
        return node.slice.value  # type: ignore[attr-defined]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and _is_text(node.args[0])
    ):
        return node.args[0].value  # type: ignore[attr-defined]
    return None


def _strings(node: ast.AST, constants: dict[str, list[str]]) -> list[str]:
    if _is_text(node):
        return [node.value]  # type: ignore[attr-defined]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [text for e in node.elts for text in _strings(e, {})]
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys if k is not None and _is_text(k)]  # type: ignore
    if _is_frozen_literal(node):
        return _strings(node.args[0], constants)  # type: ignore[attr-defined]
    name = _key_name(node) if isinstance(node, ast.Name | ast.Attribute) else None
    return constants.get(name or "", [])


def _is_frozen_literal(node: ast.AST) -> bool:
    """``frozenset({"closed", "cancelled"})``: a constant as the environment rules allow it,
    whose values the probes need as much as a tuple's (a tool that checks a blood type against
    ``BLOOD_TYPES`` succeeds only on one of them)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "tuple")
        and len(node.args) == 1
        and not node.keywords
    )


def _string_constants(tree: ast.Module) -> dict[str, list[str]]:
    """Module and class constants that hold strings: ``TIERS = ("standard", "student")``,
    ``FINAL = frozenset({"closed", "cancelled"})``, or the strings of a nested tuple."""
    constants: dict[str, list[str]] = {}
    bodies = [tree.body] + [n.body for n in tree.body if isinstance(n, ast.ClassDef)]
    for stmt in (s for body in bodies for s in body):
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
        value = getattr(stmt, "value", None)
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and isinstance(target, ast.Name) and value:
            found = _strings(value, {})
            if found:
                constants[target.id] = found
    return constants


def _is_text(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)
