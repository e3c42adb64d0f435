"""What BFCL's checker compares, read off an adapted environment's state.

``_compare_instances`` compares an instance's attributes that do not start with ``_``, by ``==``;
objects inside compare by their class's ``__eq__`` (``Directory`` by name and contents, ``File``
by name and content). ``public_state`` keeps exactly that, in a form where ``==`` between two
results agrees with BFCL's verdict.
"""

from __future__ import annotations

import ast
import functools
from typing import Any

from envmill.tasks.backends.imported.bfcl.codec import codec_index_objects, comparable_value
from envmill.tasks.backends.imported.bfcl.package import CLASS_FILES, read_class_source


def public_state(env_state: dict[str, Any], class_name: str) -> dict[str, Any]:
    """The attributes BFCL compares for one class, from the adapted environment's state."""
    from envmill.tasks.backends.imported.bfcl.adapt import state_attribute

    return public_fields(env_state[state_attribute(class_name)])


def public_fields(instance: dict[str, Any]) -> dict[str, Any]:
    """The public attributes of one encoded instance, comparable by ``==``."""
    objects: dict[int, Any] = {}
    codec_index_objects(instance, objects)
    fields = eq_fields()
    return {
        name: comparable_value(value, fields, objects)
        for name, value in instance.items()
        if not name.startswith("_")
    }


@functools.cache
def eq_fields() -> dict[str, tuple[str, ...]]:
    """For each helper class of BFCL's modules, the attributes its ``__eq__`` compares."""
    found: dict[str, tuple[str, ...]] = {}
    for module, _doc in CLASS_FILES.values():
        for node in ast.parse(read_class_source(module)).body:
            if isinstance(node, ast.ClassDef) and node.name not in CLASS_FILES:
                found[node.name] = _compared(node)
    return found


def _compared(cls: ast.ClassDef) -> tuple[str, ...]:
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__eq__":
            names = [
                n.attr
                for n in ast.walk(item)
                if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == "self"
            ]
            return tuple(dict.fromkeys(names))
    return ()
