"""BFCL's state criterion as an envmill check: a pure function of the final state, like any
other check, that compares one class's public attributes as BFCL's ``_compare_instances`` does.

BFCL compares an instance's attributes not starting with ``_`` by ``==``, and objects inside by
their class's ``__eq__``. The adapted state holds those objects encoded (``codec.py``), so the
check carries the codec's own comparison (``comparable_value`` and what it calls, taken from
``codec.py``'s syntax tree without annotations, so the two can never drift apart) and the
expected value in that comparable form. The check imports nothing.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

from envmill.schemas.scenario import CheckSpec

CODEC = Path(__file__).parent / "bfcl" / "codec.py"
COMPARISON = ("codec_tag", "codec_sorted", "codec_key", "codec_index_objects", "comparable_value")


def state_check(
    class_name: str, attribute: str, expected: dict[str, Any], eq_fields: dict[str, Any]
) -> CheckSpec:
    """The check that ``attribute`` (one BFCL instance, encoded) ends with the public
    attributes ``expected`` (``state.public_state`` of the ground truth's final state)."""
    body = (
        "def check(initial_state, final_state):\n"
        f"    instance = final_state.get({attribute!r})\n"
        "    if not isinstance(instance, dict):\n"
        "        return False\n"
        f"    eq_fields = {eq_fields!r}\n"
        "    objects = {}\n"
        "    codec_index_objects(instance, objects)\n"
        "    public = {\n"
        "        name: comparable_value(value, eq_fields, objects)\n"
        "        for name, value in instance.items()\n"
        '        if not name.startswith("_")\n'
        "    }\n"
        f"    return public == {expected!r}\n"
    )
    return CheckSpec(
        description=f"{class_name} ends as BFCL's ground truth leaves it (BFCL's state check)",
        code=f"{comparison_source()}\n\n{body}",
    )


@functools.cache
def comparison_source() -> str:
    """``CODEC_TAGS`` and the comparison functions of ``codec.py``, without annotations."""
    tree = ast.parse(CODEC.read_text(encoding="utf-8"))
    kept: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "CODEC_TAGS":
            kept.append(node)
        elif isinstance(node, ast.FunctionDef) and node.name in COMPARISON:
            kept.append(_unannotated(node))
    if len(kept) != len(COMPARISON) + 1:
        raise RuntimeError(f"codec.py no longer defines all of {', '.join(COMPARISON)}")
    return "\n\n".join(ast.unparse(node) for node in kept)


def _unannotated(function: ast.FunctionDef) -> ast.FunctionDef:
    function.returns = None
    arguments = function.args
    for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        argument.annotation = None
    for variadic in (arguments.vararg, arguments.kwarg):
        if variadic is not None:
            variadic.annotation = None
    if ast.get_docstring(function) is not None:
        function.body = function.body[1:] or [ast.Pass()]
    return function
