"""What the fake model knows about a topic: the procedural module it would write for it.

A topic maps to a catalog domain (the domain whose title opens it, as the ``topics`` responder
writes them; else the domain sharing the most words with it, ties broken by a hash) and a seed
(a hash of the topic), so 100+ topics get 100+ distinct modules. The module is then cut into
what each SkelBuilder stage asks for: the plan from the spec, the state code (everything but the
tools), the operation list and one method per tool, with docstrings rewritten the way a model
writes them (``Args:``, ``Returns:``, ``Constraints:``).
"""

from __future__ import annotations

import ast
import hashlib
import re
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment, ToolManifest
from envmill.tasks.backends.procedural.spec.domain import DomainSpec
from envmill.tasks.envs.annotations import parse_docstring
from envmill.tasks.envs.reading import find_environment_class, list_tool_methods

_WORD = re.compile(r"[a-z]+")
_STOP = frozenset("a an and the of for to in on at by with from its their s".split())
RETURNS = {
    "query": [
        '    dict: On success {"success": True, "data": <what was found>};',
        '        otherwise {"success": False, "error": <why not>}.',
    ],
    "state_change": [
        '    dict: On success {"success": True, "message": <what changed>, "data": <the record>};',
        '        otherwise {"success": False, "error": <why not>}, and nothing changes.',
    ],
}


@dataclass(frozen=True)
class TopicModule:
    """One topic's module and its pieces, as the fake model hands them out."""

    topic: str
    compiled: CompiledEnvironment
    state_code: str
    methods: dict[str, str]
    operations: list[dict[str, Any]]
    plan: dict[str, Any]

    def tool(self, name: str) -> ToolManifest | None:
        return next((t for t in self.compiled.tools if t.tool == name), None)


_VARIANT = re.compile(r"\((\w+) variant (\d+)\)$")


def digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@lru_cache(maxsize=1)
def _vocabulary() -> dict[str, tuple[str, frozenset[str]]]:
    """Domain name -> (lowercased title, words describing it)."""
    found = {}
    for name in list_domains():
        spec = load_domain(name)
        words = {*_WORD.findall(f"{name} {spec.title} {spec.topic}".lower())}
        for entity_name, entity in spec.entities.items():
            words |= {*_WORD.findall(f"{entity_name} {entity.plural} {entity.title}".lower())}
            words |= {w for op in entity.operations for w in _WORD.findall(op.name)}
        found[name] = (spec.title.lower(), frozenset(words - _STOP))
    return found


def domain_for(topic: str) -> str:
    """The catalog domain a topic is about (see the module docstring)."""
    text = topic.strip().lower()
    vocabulary = _vocabulary()
    for name, (title, _) in vocabulary.items():
        if text.startswith(title + ":") or text == title:
            return name
    words = set(_WORD.findall(text)) - _STOP
    spread = {w: sum(w in vocab for _, vocab in vocabulary.values()) for w in words}
    scores = {
        name: round(sum(1 / spread[w] for w in words & vocab), 6)
        for name, (_, vocab) in vocabulary.items()
    }
    best = max(scores.values())
    pool = sorted(name for name, score in scores.items() if score == best)
    return pool[digest(text) % len(pool)]


def warm_sources() -> None:
    _vocabulary()


@lru_cache(maxsize=512)
def topic_module(topic: str) -> TopicModule:
    """The module the fake model writes for ``topic`` (the same topic, the same module); a
    catalog environment's topic names its domain and variant (``… (library variant 7)``), so
    scenarios for the procedural backend's environments are written for the same module."""
    named = _VARIANT.search(topic)
    named = named if named and named.group(1) in list_domains() else None
    spec = load_domain(named.group(1) if named else domain_for(topic))
    seed = int(named.group(2)) if named else digest(topic.strip().lower()) % 1_000_000
    compiled = compile_environment(spec, seed)
    tree = ast.parse(compiled.source)
    cls = find_environment_class(tree)
    lines = compiled.source.splitlines()
    tools = list_tool_methods(cls)
    manifests = {tool.tool: tool for tool in compiled.tools}
    methods, operations = {}, []
    for fn in tools:
        summary, rules, args = _docstring_parts(fn)
        manifest = manifests.get(fn.name)
        kind = manifest.kind if manifest else "query"
        methods[fn.name] = _method_text(fn, lines, summary, rules, kind)
        operation = _operation(fn, summary, rules, args, kind)
        operations.append({**operation, "entity": manifest.entity if manifest else ""})
    state_code = _state_code(tree, lines, tools, spec)
    return TopicModule(topic, compiled, state_code, methods, operations, plan_of(compiled))


def _docstring_parts(fn: ast.FunctionDef) -> tuple[str, list[str], dict[str, str]]:
    """(summary, rule sentences, Args descriptions) of a procedural tool's docstring."""
    doc = ast.get_docstring(fn) or ""
    head = doc.split("Args:")[0].strip()
    paragraphs = [" ".join(p.split()) for p in head.split("\n\n") if p.strip()]
    summary = paragraphs[0] if paragraphs else fn.name.replace("_", " ").capitalize() + "."
    text = " ".join(paragraphs[1:])
    rules = [s.strip() for s in re.split(r"(?<=\.)\s+(?=[A-Z])", text) if s.strip()]
    return summary, rules, parse_docstring(doc)[1]


def _method_text(
    fn: ast.FunctionDef, lines: list[str], summary: str, rules: list[str], kind: str
) -> str:
    """The method as a model writes it: dedented, its docstring in Google style."""
    doc_node = fn.body[0]
    start, end = fn.lineno - 1, fn.end_lineno or fn.lineno
    before = lines[start : doc_node.lineno - 1]
    after = lines[(doc_node.end_lineno or doc_node.lineno) : end]
    args_block = _args_block(ast.get_docstring(fn) or "")
    doc = [f'"""{summary}', ""]
    if args_block:
        doc += ["Args:", *args_block, ""]
    doc += ["Returns:", *RETURNS[kind], ""]
    if rules:
        doc += ["Constraints:", *[f"    - {rule}" for rule in rules], ""]
    doc[-1] = '"""'
    indent = " " * (doc_node.col_offset)
    body = [f"{indent}{line}" if line else "" for line in doc]
    return textwrap.dedent("\n".join([*before, *body, *after]))


def _args_block(doc: str) -> list[str]:
    """The ``Args:`` entries of a docstring, indented by four (continuations by eight)."""
    if "Args:" not in doc:
        return []
    block = textwrap.dedent(doc.split("Args:", 1)[1]).strip("\n").splitlines()
    return [f"    {line}" if line.strip() else "" for line in block]


def _operation(
    fn: ast.FunctionDef, summary: str, rules: list[str], args: dict[str, str], kind: str
) -> dict[str, Any]:
    parameters = []
    positional = fn.args.args[1:]
    defaults = [None] * (len(positional) - len(fn.args.defaults)) + list(fn.args.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        annotation = ast.unparse(arg.annotation) if arg.annotation else "str"
        parameters.append(
            {
                "name": arg.arg,
                "type": annotation.replace(" | None", ""),
                "description": args.get(arg.arg, arg.arg.replace("_", " ")),
                "required": default is None,
            }
        )
    return {
        "name": fn.name,
        "kind": kind,
        "summary": summary,
        "parameters": parameters,
        "constraints": rules,
    }


def _state_code(
    tree: ast.Module, lines: list[str], tools: list[ast.FunctionDef], spec: DomainSpec
) -> str:
    """The module without its tools, opening with a docstring a model would write."""
    dropped = set()
    for fn in tools:
        dropped |= set(range(fn.lineno - 1, fn.end_lineno or fn.lineno))
    kept = [line for index, line in enumerate(lines) if index not in dropped]
    first = tree.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        kept[0] = f'"""{spec.title}: {spec.topic}"""'
    text = "\n".join(kept).rstrip() + "\n"
    return re.sub(r"\n(\s*\n){2,}(?=    )", "\n\n", text)


def plan_of(compiled: CompiledEnvironment) -> dict[str, Any]:
    """The state plan, as the planner stage answers it, from the compiled environment's spec."""
    spec = compiled.spec
    entities = []
    for name in compiled.entity_attrs:
        entity = spec.entities[name]
        title = entity.title or name.replace("_", " ")
        attributes = [_attribute(f"{name}_id", "str", f"unique id, e.g. {_example_id(entity)}")]
        for field_name, field in entity.fields.items():
            attributes.append(_attribute(field_name, *_field_type(title, field_name, field)))
        if entity.status is not None and entity.status.field not in entity.fields:
            values = " | ".join(entity.status.states)
            text = f"where the {title} stands; starts as {entity.status.initial}"
            attributes.append(_attribute(entity.status.field, f"enum: {values}", text))
        article = "An" if title[0] in "aeiou" else "A"
        description = f"{article} {title} the system keeps, stored under its id."
        entities.append({"name": name, "description": description, "attributes": attributes})
    return {
        "environment": spec.title,
        "category": spec.name.replace("_", " "),
        "class_name": compiled.class_name,
        "introduction": f"{spec.topic} {spec.introduction}",
        "entities": entities,
        "business_rules": compiled.business_rules,
    }


def _attribute(name: str, kind: str, description: str) -> dict[str, str]:
    return {"name": name, "type": kind, "description": description}


def _example_id(entity: Any) -> str:
    return re.sub(r"\{n:0?(\d*)d\}", lambda m: "1".zfill(int(m[1] or 1)), entity.id_format)


def _field_type(title: str, name: str, field: Any) -> tuple[str, str]:
    """The plan's type and description of one field."""
    optional = " (empty until set)" if field.nullable else ""
    text = field.doc or f"the {title}'s {name.replace('_', ' ')}"
    if field.type == "enum":
        return f"enum: {' | '.join(field.values)}", text + optional
    if field.type == "ref":
        return "str", f"id of the {field.entity.replace('_', ' ')} it refers to{optional}"
    if field.min is not None and field.max is not None:
        text += f", from {field.min:g} to {field.max:g}"
    elif field.min is not None:
        text += f", at least {field.min:g}"
    elif field.max is not None:
        text += f", at most {field.max:g}"
    kind = {"date": "date (YYYY-MM-DD)", "datetime": "datetime (ISO 8601)"}.get(field.type)
    return kind or field.type, text + optional
