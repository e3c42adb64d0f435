"""Effects: one small function per kind writes the mutation (and, where one is implied, its check).

Effects run only after every check passed, so a failing call leaves the state untouched. Checks an
effect implies — a legal status transition, a number staying within its declared min/max — are
emitted with the preconditions by :func:`effect_check_lines`.
"""

from __future__ import annotations

import string
from typing import Any

from envmill.tasks.backends.procedural.codegen.rules import fail_if
from envmill.tasks.backends.procedural.codegen.scope import OpScope, to_single_quotes
from envmill.tasks.backends.procedural.codegen.text import human_list, lit
from envmill.tasks.backends.procedural.spec.domain import EntitySpec
from envmill.tasks.backends.procedural.spec.paths import find_arg, resolve_path
from envmill.tasks.core.field_words import is_money_field


def time_code(scope: OpScope, field_type: str, days: Any = None, hours: Any = None) -> str:
    """Code for current_time (+ offsets) rendered as the field's date or datetime text."""
    base = scope.now()
    offsets = [f"{unit}={scope.operand(v)}" for unit, v in (("days", days), ("hours", hours)) if v]
    if offsets:
        base = f"({base} + timedelta({', '.join(offsets)}))"
    if field_type == "date":
        return f"{base}.date().isoformat()"
    return f'{base}.isoformat(timespec="seconds")'


def set_field(scope: OpScope, path: str, code: str) -> list[str]:
    """Assign ``code`` to the field at ``path``; fields of the new record go into its literal."""
    if path.startswith("new."):
        scope.new_values[path.split(".", 1)[1]] = code
        return []
    return [f"{scope.path(path)} = {code}"]


def eff_set(scope: OpScope, effect: Any) -> list[str]:
    return set_field(scope, effect.path, lit(effect.value))


def eff_assign(scope: OpScope, effect: Any) -> list[str]:
    code = scope.operand(effect.value)
    if effect.times is not None:
        code = f"{code} * {scope.operand(effect.times)}"
    if effect.scale is not None:
        factors = ", ".join(f"{lit(k)}: {lit(v)}" for k, v in effect.scale.factors.items())
        code = f"{code} * {{{factors}}}[{scope.operand(effect.scale.by)}]"
    scaled = effect.times is not None or effect.scale is not None
    money = is_money_field(effect.path.split(".")[-1])  # an amount an agent worked out: cents
    if (scaled or money) and resolve_path(scope.spec, scope.op, effect.path).spec.type == "float":
        code = f"round({code}, 2)"
    arg = find_arg(scope.op, str(effect.value))
    lines = set_field(scope, effect.path, code)
    if arg is not None and arg.optional and lines:
        return [f"if {arg.name} is not None:", *[f"    {line}" for line in lines]]
    return lines


def eff_stamp(scope: OpScope, effect: Any) -> list[str]:
    field_type = resolve_path(scope.spec, scope.op, effect.path).spec.type
    return set_field(scope, effect.path, time_code(scope, field_type, effect.days, effect.hours))


def eff_transition(scope: OpScope, effect: Any) -> list[str]:
    return [f"{scope.path(effect.path)} = {lit(effect.to)}"]


def eff_adjust(scope: OpScope, effect: Any) -> list[str]:
    target, by = scope.path(effect.path), scope.operand(effect.by)
    sign = "+" if effect.kind == "increment" else "-"
    if resolve_path(scope.spec, scope.op, effect.path).spec.type == "float":
        return [f"{target} = round({target} {sign} {by}, 2)"]
    return [f"{target} {sign}= {by}"]


def new_id_lines(entity: EntitySpec, var: str) -> list[str]:
    """Take the next id from the entity's counter."""
    parts = []
    for text, field, spec, _ in string.Formatter().parse(entity.id_format):
        parts.append(text.replace("{", "{{").replace("}", "}}"))
        if field is not None:
            parts.append(f"{{self.{entity.counter}{':' + spec if spec else ''}}}")
    return [f'{var} = f"{"".join(parts)}"', f"self.{entity.counter} += 1"]


def record_literal(
    scope: OpScope, entity: EntitySpec, id_var: str, values: dict[str, str], from_args: bool
) -> list[str]:
    """The dict literal of a new record: given values, same-named arguments (for a create), the
    initial status, field defaults, None."""
    status = entity.status.field if entity.status else None
    lines = [f'"{entity.id_field}": {id_var},']
    for name, field in entity.fields.items():
        if name in values:
            code = values[name]
        elif from_args and find_arg(scope.op, name) is not None:
            code = name
        elif name == status:
            code = lit(entity.machine.initial)
        else:
            code = lit(field.default)
        lines.append(f'"{name}": {code},')
    return lines


def eff_record(scope: OpScope, effect: Any) -> list[str]:
    entity = scope.plan.entity(effect.entity)
    var = f"new_{entity.name}_id"
    values = {name: lit(value) for name, value in effect.set.items()}
    values |= {name: scope.operand(value) for name, value in effect.assign.items()}
    values |= {name: time_code(scope, entity.fields[name].type) for name in effect.stamp}
    body = record_literal(scope, entity, var, values, from_args=False)
    return [
        *new_id_lines(entity, var),
        f"self.{entity.plural}[{var}] = {{",
        *[f"    {line}" for line in body],
        "}",
    ]


def eff_update_related(scope: OpScope, effect: Any) -> list[str]:
    entity = scope.plan.entity(effect.entity)
    tests = [f'item["{effect.via}"] == {scope.entity.id_field}']
    tests += [f'item["{name}"] in {lit(tuple(values))}' for name, values in effect.where.items()]
    body = [f'        item["{name}"] = {lit(value)}' for name, value in effect.set.items()]
    return [
        f"for item in self.{entity.plural}.values():",
        f"    if {' and '.join(tests)}:",
        *body,
    ]


EFFECT_CODE = {
    "set": eff_set,
    "assign": eff_assign,
    "stamp": eff_stamp,
    "transition": eff_transition,
    "increment": eff_adjust,
    "decrement": eff_adjust,
    "record": eff_record,
    "update_related": eff_update_related,
}


def effect_lines(scope: OpScope, effect: Any) -> list[str]:
    return EFFECT_CODE[effect.kind](scope, effect)


def effect_check_lines(scope: OpScope, effect: Any) -> list[str]:
    """Checks an effect implies: a legal transition, or a number kept within its bounds."""
    if effect.kind == "transition":
        return transition_check(scope, effect)
    if effect.kind in ("increment", "decrement"):
        return bound_check(scope, effect)
    return []


def transition_check(scope: OpScope, effect: Any) -> list[str]:
    """The current status must have a transition to ``to`` (unless a ``field_in`` on the same
    field already admits only such states)."""
    resolved = resolve_path(scope.spec, scope.op, effect.path)
    machine = scope.plan.entity(resolved.entity).machine
    sources = [
        s
        for s in machine.states
        if any(s in step.from_ and step.to == effect.to for step in machine.transitions)
    ]
    if any(
        pre.kind == "field_in" and pre.path == effect.path and set(pre.values) <= set(sources)
        for pre in scope.op.preconditions
    ):
        return []
    expr = scope.path(effect.path)
    who = scope.describe(scope.path_owner(effect.path))
    text = (
        f"{who} is '{{{to_single_quotes(expr)}}}' and cannot become '{effect.to}' "
        f"(only from {human_list(sources)})"
    )
    return fail_if(f"{expr} not in {lit(tuple(sources))}", text)


def bound_check(scope: OpScope, effect: Any) -> list[str]:
    """Keep a number within its declared bound unless an explicit compare already does."""
    resolved = resolve_path(scope.spec, scope.op, effect.path)
    bound = resolved.spec.min if effect.kind == "decrement" else resolved.spec.max
    guarded = any(
        pre.kind == "compare" and effect.path in (pre.left, pre.right)
        for pre in scope.op.preconditions
    )
    if bound is None or guarded:
        return []
    target, by = scope.path(effect.path), scope.operand(effect.by)
    sign, test = ("-", "<") if effect.kind == "decrement" else ("+", ">")
    bound_code = lit(int(bound) if float(bound).is_integer() else bound)
    word = "below" if effect.kind == "decrement" else "above"
    who = scope.describe(scope.path_owner(effect.path))
    text = (
        f"the {resolved.field.replace('_', ' ')} of {who} ({{{to_single_quotes(target)}}}) "
        f"cannot go {word} {bound_code}"
    )
    return fail_if(f"{target} {sign} {by} {test} {bound_code}", text)
