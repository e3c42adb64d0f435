"""Assemble the environment module: imports, one TypedDict per entity, the class and its tools."""

from __future__ import annotations

import textwrap

from envmill.tasks.backends.procedural.codegen.effects import (
    effect_check_lines,
    effect_lines,
    new_id_lines,
    record_literal,
)
from envmill.tasks.backends.procedural.codegen.queries import query_lines, summary_of_query
from envmill.tasks.backends.procedural.codegen.roles import (
    acting_init_lines,
    role_check_lines,
    role_rule,
    session_tool_lines,
)
from envmill.tasks.backends.procedural.codegen.rules import precondition_lines, rule_text
from envmill.tasks.backends.procedural.codegen.scope import (
    OpScope,
    arg_check_lines,
    to_single_quotes,
)
from envmill.tasks.backends.procedural.codegen.text import (
    camel,
    docstring,
    error_return,
    fstring,
    human_list,
    indent,
    lit,
    py_type,
    sentence,
)
from envmill.tasks.backends.procedural.codegen.tool_manifest import business_rules
from envmill.tasks.backends.procedural.plan import EnvPlan, ToolPlan
from envmill.tasks.backends.procedural.spec.domain import ArgSpec, EntitySpec

DEFAULT_TIME = "2025-01-01T09:00:00"
PARSE_TIME = [
    "def _parse_time(self, value: object) -> datetime | None:",
    '    """Parse an ISO date or datetime; None when the value is not one."""',
    "    if not isinstance(value, str):",
    "        return None",
    "    try:",
    "        return datetime.fromisoformat(value)",
    "    except ValueError:",
    "        return None",
]


def render_module(plan: EnvPlan) -> str:
    """The whole module text for a plan."""
    spec = plan.spec
    lines = [
        f'"""{spec.title}: a tool-interactive environment (envmill procedural backend)."""',
        "",
        "from datetime import datetime, timedelta",
        "from typing import TypedDict",
    ]
    for name in plan.entities:
        lines += ["", "", *typed_dict_lines(plan.entity(name))]
    lines += ["", "", *class_lines(plan)]
    return "\n".join(lines) + "\n"


def typed_dict_lines(entity: EntitySpec) -> list[str]:
    lines = [
        f"class {camel(entity.name)}(TypedDict):",
        f'    """One {entity.title} record, stored under its {entity.id_field}."""',
        "",
        f"    {entity.id_field}: str",
    ]
    return lines + [f"    {name}: {py_type(field)}" for name, field in entity.fields.items()]


def class_lines(plan: EnvPlan) -> list[str]:
    spec = plan.spec
    rules = [f"- {rule}" for rule in business_rules(plan)]
    doc = [f'"""{spec.title}.', "", *wrap_text(spec.introduction), ""]
    doc += ["Business rules:", *rules, "", "The current time is the state attribute current_time."]
    lines = [f"class {plan.class_name}:", *indent([*doc, '"""'], 1), ""]
    constants = [f"{name.upper()} = {value}" for name, value in plan.limits.items()]
    if constants:
        lines += [*indent(constants, 1), ""]
    lines += indent(init_lines(plan), 1)
    lines += ["", *indent(PARSE_TIME, 1)]
    if plan.session_tool:
        lines += ["", *indent(session_tool_lines(plan), 1)]
    for tool in plan.tools:
        lines += ["", *indent(method_lines(plan, tool), 1)]
    return lines


def wrap_text(text: str) -> list[str]:
    return textwrap.wrap(" ".join(text.split()), 92)


def init_lines(plan: EnvPlan) -> list[str]:
    body = ['"""Create an empty state; the runtime loads a state by assigning each attribute."""']
    for name in plan.entities:
        entity = plan.entity(name)
        body.append(f"self.{entity.plural}: dict[str, {camel(name)}] = {{}}")
    for name in plan.entities:
        body.append(f"self.{plan.entity(name).counter}: int = 1")
    body.append(f'self.current_time: str = "{DEFAULT_TIME}"')
    body += acting_init_lines(plan)
    return ["def __init__(self) -> None:", *indent(body, 1)]


def signature(tool: ToolPlan) -> list[str]:
    params = ["self"]
    for arg in tool.op.args:
        hint = py_type(arg, arg.optional)
        params.append(f"{arg.name}: {hint}" + (" = None" if arg.optional else ""))
    one_line = f"def {tool.name}({', '.join(params)}) -> dict:"
    if len(one_line) <= 92:
        return [one_line]
    return [f"def {tool.name}(", *[f"    {p}," for p in params], ") -> dict:"]


def arg_doc(plan: EnvPlan, tool: ToolPlan, arg: ArgSpec) -> tuple[str, str]:
    """The ``name (type): text`` line of one argument."""
    op, entity = tool.op, plan.entity(tool.op.entity)
    kind = py_type(arg) + (", optional" if arg.optional else "")
    if arg.type == "ref":
        target = plan.entity(arg.entity or "")
        example = f"(e.g. {target.id_format.format(n=1)})"
        text = f"{arg.doc} {example}." if arg.doc else f"ID of the {target.title} {example}."
        if arg.optional:
            text = f"Only {entity.plural} of this {target.title}; {text}"
    elif op.kind == "find":
        text = f"Text to look for in the {entity.title}'s {entity.label}."
    elif arg.doc:
        text = sentence(arg.doc)
    else:
        text = f"The {entity.title}'s {arg.name.replace('_', ' ')}."
    if op.is_query and arg.optional and arg.type != "ref":
        bound = {"max_": "at most", "min_": "at least"}.get(arg.name[:4])
        field = arg.name[4:] if bound else arg.name
        text = f"Only {entity.plural} with {field} {bound or 'equal to'} this value."
    if arg.type == "enum":
        text += f" One of: {human_list(arg.values)}."
    if arg.type in ("date", "datetime"):
        text += " ISO format (YYYY-MM-DD)." if arg.type == "date" else " ISO format."
    return f"{arg.name} ({kind})", text


def method_lines(plan: EnvPlan, tool: ToolPlan) -> list[str]:
    scope = OpScope(plan, tool)
    op = tool.op
    checks: list[str] = []
    for arg in op.args:
        checks += arg_check_lines(scope, arg)
    checks += nothing_to_update(scope)
    rules: list[str] = []
    if op.is_query:
        parent = op.parent and plan.entity(scope.entity.fields[op.parent].entity or "").title
        summary, blocks = summary_of_query(scope.entity, op, parent), [query_lines(scope)]
    else:
        summary = op.doc or f"{op.name.replace('_', ' ').capitalize()}."
        texts = [rule_text(scope, pre) for pre in op.preconditions]
        rules = list(dict.fromkeys(text for text in texts if text))
        blocks = change_blocks(scope)
    blocks.insert(0, scope.lookup_lines())
    own_rule = role_rule(plan, tool)
    rules = [own_rule, *rules] if own_rule else rules
    checks = role_check_lines(plan, tool) + checks
    body = docstring(summary, rules, [arg_doc(plan, tool, arg) for arg in op.args], 1)
    for index, block in enumerate(block for block in [checks, *blocks] if block):
        body += ["", *block] if index else block
    return [*signature(tool), *indent(body, 1)]


def nothing_to_update(scope: OpScope) -> list[str]:
    """An update whose arguments are all optional must get at least one of them."""
    extra = [arg for arg in scope.op.args if arg.name != scope.entity.id_field]
    if scope.op.kind != "update" or not extra or not all(arg.optional for arg in extra):
        return []
    names = [arg.name for arg in extra]
    test = " and ".join(f"{name} is None" for name in names)
    message = lit(f"Nothing to update: give at least one of {human_list(names)}")
    return [f"if {test}:", f"    {error_return(message)}"]


def change_blocks(scope: OpScope) -> list[list[str]]:
    """Preconditions, implied checks, then the mutation and the success result."""
    op = scope.op
    checks: list[str] = []
    for effect in op.effects:  # state-machine checks first: "is this step legal at all?"
        checks += effect_check_lines(scope, effect) if effect.kind == "transition" else []
    for pre in op.preconditions:
        checks += precondition_lines(scope, pre)
    for effect in op.effects:
        checks += effect_check_lines(scope, effect) if effect.kind != "transition" else []
    changes: list[str] = []
    for effect in op.effects:
        changes += effect_lines(scope, effect)
    create = create_lines(scope) if op.kind == "create" else []
    result = "record" if op.kind == "create" else scope.ensure_handle((scope.entity.id_field,))
    message = fstring(op.message or default_message(scope), lambda f: render_field(scope, f))
    done = [f'return {{"success": True, "message": {message}, "data": dict({result})}}']
    return [checks, create + changes, done]


def create_lines(scope: OpScope) -> list[str]:
    entity = scope.entity
    body = record_literal(scope, entity, "new_id", scope.new_values, from_args=True)
    return [
        *new_id_lines(entity, "new_id"),
        f"record: {camel(entity.name)} = {{",
        *indent(body, 1),
        "}",
        f"self.{entity.plural}[new_id] = record",
    ]


def default_message(scope: OpScope) -> str:
    title = scope.entity.title.capitalize()
    if scope.op.kind == "create":
        return f"{title} {{new_id}} created."
    return f"{title} {{{scope.entity.id_field}}} updated ({scope.op.name.replace('_', ' ')})."


def render_field(scope: OpScope, field: str) -> str:
    """A message placeholder as an expression: argument, ``arg.label``, ``new_id`` or a limit."""
    base, _, suffix = field.partition(".")
    if base in scope.plan.limits and not suffix:
        return f"self.{base.upper()}"
    if suffix == "label":
        entity = scope.handle_entity((base,))
        return to_single_quotes(f'{scope.ensure_handle((base,))}["{entity.label}"]')
    return base
