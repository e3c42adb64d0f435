"""Query tools: get by id, find by label, list / count / sum with a parent and filters.

Queries never mutate: they return copies (``dict(record)``) so a caller cannot edit the state
through a result.
"""

from __future__ import annotations

from envmill.tasks.backends.procedural.codegen.scope import OpScope
from envmill.tasks.backends.procedural.spec.domain import EntitySpec, OperationSpec


def summary_of_query(entity: EntitySpec, op: OperationSpec, parent_title: str | None) -> str:
    """The one-line description of a query tool (the spec's ``doc`` wins)."""
    if op.doc:
        return op.doc
    plural = entity.plural.replace("_", " ")
    scope = f" of a {parent_title}" if parent_title else ""
    filters = [item.field for item in op.filters]
    tail = f", optionally filtered by {' and '.join(filters)}" if filters else ""
    if op.kind == "get":
        return f"Get the details of a {entity.title} by its ID."
    if op.kind == "find":
        return f"Find {plural} whose {entity.label} contains the given text (case-insensitive)."
    if op.kind == "list":
        return f"List the {plural}{scope}{tail}."
    if op.kind == "count":
        group = f", grouped by {op.group_by}" if op.group_by else ""
        return f"Count the {plural}{scope}{tail}{group}."
    return f"Total the {op.field} of the {plural}{scope}{tail}."


def filter_tests(scope: OpScope) -> list[str]:
    op, entity = scope.op, scope.entity
    tests = [f'item["{op.parent}"] == {op.parent}'] if op.parent else []
    for item in op.filters:
        field = entity.fields[item.field]
        if item.op == "==":
            tests.append(f'({item.field} is None or item["{item.field}"] == {item.field})')
            continue
        arg = ("max_" if item.op == "<=" else "min_") + item.field
        compare = f'item["{item.field}"] {item.op} {arg}'
        if field.nullable:
            compare = f'(item["{item.field}"] is not None and {compare})'
        tests.append(f"({arg} is None or {compare})")
    return tests


def selection_lines(scope: OpScope, copy: bool) -> list[str]:
    """``items = [...]``: the records of the entity that pass the parent and filter tests."""
    element = "dict(item)" if copy else "item"
    source = f"for item in self.{scope.entity.plural}.values()"
    tests = filter_tests(scope)
    if not tests:
        everything = f"list(self.{scope.entity.plural}.values())"
        return [f"items = [dict(item) {source}]" if copy else f"items = {everything}"]
    one_line = f"items = [{element} {source}{' if ' if tests else ''}{' and '.join(tests)}]"
    if len(one_line) <= 88:
        return [one_line]
    lines = ["items = [", f"    {element}", f"    {source}"]
    for index, test in enumerate(tests):
        lines.append(f"    {'if' if index == 0 else 'and'} {test}")
    return [*lines, "]"]


def query_lines(scope: OpScope) -> list[str]:
    """The body of a query after argument checks and lookups."""
    op, entity = scope.op, scope.entity
    if op.kind == "get":
        record = scope.ensure_handle((entity.id_field,))
        return [f'return {{"success": True, "data": dict({record})}}']
    if op.kind == "find":
        return [
            f"needle = {entity.label}.strip().lower()",
            f"items = [dict(item) for item in self.{entity.plural}.values()"
            f' if needle in str(item["{entity.label}"]).lower()]',
            'return {"success": True, "data": items}',
        ]
    if op.kind == "list":
        return [*selection_lines(scope, copy=True), 'return {"success": True, "data": items}']
    if op.kind == "count":
        return [*selection_lines(scope, copy=False), *count_lines(op)]
    return [
        *selection_lines(scope, copy=False),
        f'total = sum(item["{op.field}"] for item in items)',
        f'data = {{"{sum_key(op.field or "")}": round(total, 2), "count": len(items)}}',
        'return {"success": True, "data": data}',
    ]


def count_lines(op: OperationSpec) -> list[str]:
    if op.group_by is None:
        return ['return {"success": True, "data": {"count": len(items)}}']
    return [
        "counts: dict[str, int] = {}",
        "for item in items:",
        f'    key = str(item["{op.group_by}"])',
        "    counts[key] = counts.get(key, 0) + 1",
        f'data = {{"count": len(items), "by_{op.group_by}": counts}}',
        'return {"success": True, "data": data}',
    ]


def sum_key(field: str) -> str:
    return field if field.startswith("total") else f"total_{field}"
