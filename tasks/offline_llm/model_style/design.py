"""One environment design of the model-style writer, and the pieces each stage hands out.

A design is what a model has in mind for a topic before it answers the first prompt: the plan,
the module it will write (the state code, then its methods, written a few per answer), how it
fills a state for a day of business, how it tests its tools and which tasks a user of that
system would ask for. The operation list is read off the methods' own signatures and Google
docstrings, as the model's methods follow the operations it listed.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from envmill.tasks.offline_llm.model_style.scene import Scene, View

StateBuilder = Callable[[int, int, str], dict[str, Any]]  # (topic seed, scenario, kind)
ProbeBook = Callable[[dict[str, Any]], dict[str, list[dict[str, Any]]]]  # state -> units
Template = Callable[[View], Scene | None]
_IMPORT = re.compile(r"^(?:from\s+\S+\s+import\s|import\s)")


@dataclass(frozen=True)
class Design:
    """A hand-written environment design (see the module docstring)."""

    key: str
    words: frozenset[str]  # topic words that call for this design
    plan: dict[str, Any]
    state_code: str
    method_texts: tuple[str, ...]
    entities: dict[str, tuple[str, ...]]  # entity -> its tools
    queries: frozenset[str]
    build_state: StateBuilder
    probes: ProbeBook
    tasks: dict[str, tuple[Template, ...]] = field(default_factory=dict)
    negatives: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)

    @cached_property
    def methods(self) -> dict[str, str]:
        """Each tool's text, with the import lines it uses first (as a model puts them)."""
        found: dict[str, str] = {}
        for text in self.method_texts:
            imports = [line for line in text.splitlines() if _IMPORT.match(line)]
            for node in ast.parse(text).body:
                if isinstance(node, ast.FunctionDef):
                    body = ast.get_source_segment(text, node) or ""
                    used = [line for line in imports if _binds_used(line, body)]
                    found[node.name] = "\n".join([*used, "", body] if used else [body]) + "\n"
        return found

    @cached_property
    def operations(self) -> list[dict[str, Any]]:
        """The operation list, in the order the model lists them (entity by entity)."""
        entity_of = {tool: entity for entity, tools in self.entities.items() for tool in tools}
        return [
            operation_of(self.methods[name], entity_of[name], name in self.queries)
            for name in entity_of
        ]


def _binds_used(import_line: str, body: str) -> bool:
    names = re.sub(r"^from\s+\S+\s+import\s+|^import\s+", "", import_line).split(",")
    return any(re.search(rf"\b{re.escape(n.split(' as ')[-1].strip())}\b", body) for n in names)


def operation_of(code: str, entity: str, query: bool) -> dict[str, Any]:
    """The operation a method implements, from its signature and docstring."""
    fn = next(n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef))
    doc = ast.get_docstring(fn) or ""
    described = _section(doc, "Args")
    positional = fn.args.args[1:]
    optional = {a.arg for a in positional[len(positional) - len(fn.args.defaults) :]}
    parameters = [
        {
            "name": arg.arg,
            "type": ast.unparse(arg.annotation).replace(" | None", "") if arg.annotation else "str",
            "description": described.get(arg.arg, arg.arg.replace("_", " ")),
            **({"required": False} if arg.arg in optional else {}),
        }
        for arg in positional
    ]
    return {
        "name": fn.name,
        "kind": "query" if query else "state_change",
        "entity": entity,
        "summary": doc.splitlines()[0] if doc else fn.name.replace("_", " "),
        "parameters": parameters,
        "constraints": list(_section(doc, "Constraints").values()),
    }


def _section(doc: str, title: str) -> dict[str, str]:
    """A docstring section's entries: ``name (type): text`` by name, bullets by position."""
    if f"{title}:" not in doc:
        return {}
    block = textwrap.dedent(doc.split(f"{title}:", 1)[1].split("\n\n", 1)[0]).strip()
    entries: list[str] = []
    for line in block.splitlines():
        if line.startswith((" ", "\t")) and entries:
            entries[-1] += " " + line.strip()
        else:
            entries.append(line.strip())
    found = {}
    for index, entry in enumerate(entries):
        named = re.match(r"^(\w+)\s*(?:\([^)]*\))?:\s*(.*)$", entry)
        if named and not entry.startswith("-"):
            found[named.group(1)] = named.group(2)
        else:
            found[str(index)] = entry.removeprefix("-").strip()
    return found
