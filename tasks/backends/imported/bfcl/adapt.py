"""BFCL multi-turn classes as one envmill environment module (DESIGN §3.1).

The module holds BFCL's own classes, rewritten by ``transform.py`` and renamed private, the
codec and the generator inlined, and one public class whose state is one JSON object per BFCL
class (``state_attribute``: the BFCL instance's attributes, private ones included, encoded by
``codec.py``). Each tool decodes the instance, calls BFCL's method, encodes the instance back and
returns ``{"success": True, "data": ...}``, or ``{"success": False, "error": ...}`` when BFCL
returns an ``error`` or raises (then with BFCL's own ``Error during execution: ...`` text).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envmill.tasks.backends.imported.bfcl.package import (
    STATELESS_CLASSES,
    class_module,
    read_class_source,
    read_func_docs,
)
from envmill.tasks.backends.imported.bfcl.signatures import tool_method
from envmill.tasks.backends.imported.bfcl.transform import (
    AdaptError,
    TransformedModule,
    transform_module,
)

HERE = Path(__file__).parent
CLOCK = (2024, 9, 1, 10, 30)  # what every clock read gives, here and in the executor's child
RUNTIME = r'''
BFCL_CLOCK = datetime.datetime(2024, 9, 1, 10, 30)
UTC_EPOCH = datetime.datetime(1970, 1, 1)


def utc_from_timestamp(seconds: float) -> datetime.datetime:
    return UTC_EPOCH + datetime.timedelta(seconds=seconds)


def utc_timestamp(moment: datetime.datetime) -> float:
    return (moment - UTC_EPOCH).total_seconds()


def format_fields(template: str, values: dict) -> str:
    """``template.format(**values)`` for plain ``{name}`` fields, with no attribute access."""
    def field(match: re.Match) -> str:
        if match[0] in ("{{", "}}"):
            return match[0][0]
        if match[1] not in values:
            raise KeyError(match[1])
        return f"{values[match[1]]}"
    return re.sub(r"\{\{|\}\}|\{(\w+)\}", field, template)


def open_instance(name: str, data: dict) -> object:
    return decode_value({"$object": name, "id": -1, "fields": data}, BFCL_KINDS)


def tool_result(result: object) -> dict:
    if isinstance(result, dict) and "error" in result:
        return {"success": False, "error": str(result["error"])}
    return {"success": True, "data": encode_value(result, BFCL_KINDS, [])}
'''


@dataclass
class AdaptedEnvironment:
    """An environment module made of BFCL classes, and what the factory stores with it."""

    class_names: list[str]
    class_name: str
    source: str
    tool_schemas: list[dict[str, Any]]
    topic: str
    introduction: str
    business_rules: list[str]
    state_attributes: dict[str, str]  # BFCL class -> environment attribute
    refused: dict[str, str] = field(default_factory=dict)  # tool -> reason


def state_attribute(class_name: str) -> str:
    """The environment attribute that holds one BFCL instance (its module's name)."""
    return class_module(class_name)


def build_environment(class_names: list[str]) -> AdaptedEnvironment:
    """One environment module for a set of BFCL classes (in the order given).

    Raises:
        AdaptError: a method name clash, an unknown class, code that cannot be adapted.
    """
    from envmill.tasks.backends.imported.bfcl.schemas import convert_func_doc

    modules = [transform_module(class_module(name)) for name in class_names]
    docs = {name: read_func_docs(name) for name in class_names}
    _check_unique(docs)
    refused = {tool: reason for m in modules for tool, reason in m.refused.items()}
    env_name = "Bfcl" + "".join(class_names)
    parts = [_module_docstring(class_names), _imports(modules), _runtime(modules)]
    parts += [ast.unparse(stmt) for m in modules for stmt in m.body]
    parts.append(_kinds(modules))
    parts.append(_environment_class(env_name, class_names, modules, docs, refused))
    source = "\n\n\n".join(parts) + "\n"
    ast.parse(source)
    descriptions = {name: _api_description(name) for name in class_names}
    order = _parameter_order(modules, class_names)
    schemas = [
        _ordered(convert_func_doc(doc), order[doc["name"]])
        for name in class_names
        for doc in docs[name]
        if doc["name"] not in refused
    ]
    return AdaptedEnvironment(
        class_names=list(class_names),
        class_name=env_name,
        source=source,
        tool_schemas=schemas,
        topic=" + ".join(class_names),
        introduction=" ".join(descriptions.values()),
        business_rules=[
            "Each tool acts on the current state of its system; a failed call says why.",
            "Functions of one system never change another system's state.",
        ],
        state_attributes={name: state_attribute(name) for name in class_names},
        refused=refused,
    )


def _api_methods(modules: list[TransformedModule], class_name: str) -> dict[str, ast.FunctionDef]:
    """The methods of one BFCL class (not of its helper classes), by name."""
    return {
        item.name: item
        for module in modules
        for stmt in module.body
        if isinstance(stmt, ast.ClassDef) and stmt.name == f"_{class_name}"
        for item in stmt.body
        if isinstance(item, ast.FunctionDef)
    }


def _parameter_order(
    modules: list[TransformedModule], class_names: list[str]
) -> dict[str, list[str]]:
    """Each tool's parameters in signature order (BFCL passes positional arguments so)."""
    return {
        name: [a.arg for a in method.args.args[1:]]
        for class_name in class_names
        for name, method in _api_methods(modules, class_name).items()
    }


def _ordered(schema: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The schema with its properties in signature order."""
    properties = schema["function"]["parameters"]["properties"]
    rank = {name: i for i, name in enumerate(names)}
    ordered = sorted(properties.items(), key=lambda item: rank.get(item[0], len(rank)))
    schema["function"]["parameters"]["properties"] = dict(ordered)
    return schema


def _check_unique(docs: dict[str, list[dict[str, Any]]]) -> None:
    owner: dict[str, str] = {}
    for name, functions in docs.items():
        for doc in functions:
            if doc["name"] in owner:
                raise AdaptError(
                    f"tool {doc['name']!r} is in both {owner[doc['name']]} and {name}: BFCL "
                    "needs method names unique across the involved classes"
                )
            owner[doc["name"]] = name


def _module_docstring(class_names: list[str]) -> str:
    return (
        f'"""BFCL multi-turn: {", ".join(class_names)} (bfcl-eval 2026.3.23), adapted.\n\n'
        "BFCL's classes are kept below as private helpers; the last class is the environment.\n"
        '"""'
    )


def _imports(modules: list[TransformedModule]) -> str:
    lines = {
        "import copy",
        "import datetime",
        "import decimal",
        "import math",
        "from typing import Any",
        "import re",
    }
    lines |= {line for m in modules for line in m.imports}
    return "\n".join(sorted(lines))


def _runtime(modules: list[TransformedModule]) -> str:
    parts = [_library_body("codec.py"), RUNTIME.strip()]
    if any(m.uses_random for m in modules):
        parts.insert(0, _library_body("mtrandom.py"))
    wanted = sorted({name for m in modules for name in m.long_context})
    if wanted:
        parts.append(_long_context(wanted))
    return "\n\n\n".join(parts)


def _library_body(filename: str) -> str:
    """A module of this package without its docstring and imports (the adapted module has them)."""
    tree = ast.parse((HERE / filename).read_text(encoding="utf-8"))
    body = [s for s in tree.body[1:] if not isinstance(s, ast.Import | ast.ImportFrom)]
    return "\n\n\n".join(ast.unparse(s) for s in body)


def _long_context(names: list[str]) -> str:
    tree = ast.parse(read_class_source("long_context"))
    found = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name) and target.id in names:
                    found[target.id] = f"_long_context_{target.id} = {ast.unparse(stmt.value)}"
    missing = sorted(set(names) - set(found))
    if missing:
        raise AdaptError(f"long_context.py has no constant {missing[0]}")
    return "\n".join(found[name] for name in names)


def _class_fields(cls: ast.ClassDef) -> list[str]:
    """Every ``self.<name>`` a method assigns or annotates, in order of first appearance."""
    names: list[str] = []
    for node in ast.walk(cls):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                    and isinstance(sub.ctx, ast.Store)
                    and sub.attr not in names
                ):
                    names.append(sub.attr)
    return names


def _required_init_args(cls: ast.ClassDef) -> int:
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            positional = len(item.args.args) - 1
            return positional - len(item.args.defaults)
    return 0


def _kinds(modules: list[TransformedModule]) -> str:
    """For each class: fields/blank/fill functions with literal attribute names, and the table."""
    parts, rows = [], []
    for module in modules:
        for stmt in module.body:
            if not isinstance(stmt, ast.ClassDef):
                continue
            bfcl_name = stmt.name[1:]
            fields = _class_fields(stmt)
            parts.append(_kind_functions(bfcl_name, stmt.name, fields, _required_init_args(stmt)))
            rows.append(
                f'("{bfcl_name}", {stmt.name}, fields_{bfcl_name}, blank_{bfcl_name}, '
                f"fill_{bfcl_name}),"
            )
    if any(m.uses_random for m in modules):
        parts.append(RANDOM_KIND.strip())
        rows.append('("Random", _SeededRandom, fields_Random, blank_Random, fill_Random),')
    table = "BFCL_KINDS = (\n    " + "\n    ".join(rows) + "\n)"
    return "\n\n\n".join([*parts, table])


RANDOM_KIND = """
def fields_Random(obj: object) -> dict:
    return {"seed": obj.seed, "drawn": obj.drawn}


def blank_Random() -> object:
    return _SeededRandom(0)


def fill_Random(obj: object, fields: dict) -> None:
    obj.restore(fields["seed"], fields["drawn"])
"""


def _kind_functions(name: str, cls: str, fields: list[str], required: int) -> str:
    reads = "".join(
        f'    if hasattr(obj, "{f}"):\n        fields["{f}"] = obj.{f}\n' for f in fields
    )
    writes = "".join(f'    if "{f}" in fields:\n        obj.{f} = fields["{f}"]\n' for f in fields)
    blanks = ", ".join(["None"] * required)
    return (
        f"def fields_{name}(obj: object) -> dict:\n"
        f"    fields = {{}}\n{reads}    return fields\n\n\n"
        f"def blank_{name}() -> object:\n    return {cls}({blanks})\n\n\n"
        f"def fill_{name}(obj: object, fields: dict) -> None:\n{writes or '    return None'}\n"
    )


def _environment_class(
    env_name: str,
    class_names: list[str],
    modules: list[TransformedModule],
    docs: dict[str, list[dict[str, Any]]],
    refused: dict[str, str],
) -> str:
    lines = [
        f"class {env_name}:",
        f'    """BFCL {" + ".join(class_names)}: one JSON object per BFCL class."""',
        "",
        "    def __init__(self) -> None:",
    ]
    for name in class_names:
        lines.append(f"        self.{state_attribute(name)}: dict = initial_{name}()")
    for name in class_names:
        methods = _api_methods(modules, name)
        for doc in docs[name]:
            if doc["name"] in refused:
                continue
            if doc["name"] not in methods:
                raise AdaptError(f"{name} has no method {doc['name']!r} that its docs describe")
            lines.append("")
            lines += tool_method(doc, methods[doc["name"]], name, state_attribute(name))
    initials = [_initial_function(name) for name in class_names]
    return "\n\n\n".join([*initials, "\n".join(lines)])


def _initial_function(name: str) -> str:
    load = "" if name in STATELESS_CLASSES else "    api._load_scenario({})\n"
    return (
        f"def initial_{name}() -> dict:\n    api = _{name}()\n{load}"
        f"    return encode_fields(fields_{name}(api), BFCL_KINDS)"
    )


def _api_description(class_name: str) -> str:
    tree = ast.parse(read_class_source(class_module(class_name)))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Attribute)
            and node.targets[0].attr == "_api_description"
            and isinstance(node.value, ast.Constant)
        ):
            return str(node.value.value)
    return f"The {class_name} system."
