"""Which precondition refused a call: a tool's error traced back to the rule (and its words).

A refused call returns only the check's message ("The stock of part PRT-0007 (3) must be more
than the limit 3"); a person explains the policy behind it ("the last 3 units of a part stay in
reserve"). Each precondition's message is read from the very lines the code generator writes for
it (``precondition_lines``), its ``{...}`` holes made wildcards, so the message and its pattern
cannot drift apart.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from envmill.tasks.backends.procedural.codegen.rules import precondition_lines, rule_text
from envmill.tasks.backends.procedural.codegen.scope import OpScope
from envmill.tasks.backends.procedural.plan import EnvPlan
from envmill.tasks.core.recent import Recent


@dataclass(frozen=True)
class RefusingRule:
    """A precondition of a tool: the kind of check, the pattern of its error, the rule text."""

    kind: str
    pattern: re.Pattern[str]
    rule: str | None


def refusing_rules(plan: EnvPlan) -> dict[str, list[RefusingRule]]:
    """Per tool name, its preconditions in the order the code checks them; made once per plan
    (each refusal scenario asks again, and reading the rules compiles a pattern per message)."""
    kept = _RULES.get(id(plan), lambda: (plan, _refusing_rules(plan)))
    return kept[1]  # the entry holds its plan alive, so no other plan can have that id


_RULES: Recent[tuple[EnvPlan, dict[str, list[RefusingRule]]]] = Recent(64)


def _refusing_rules(plan: EnvPlan) -> dict[str, list[RefusingRule]]:
    found: dict[str, list[RefusingRule]] = {}
    for tool in plan.tools:
        scope = OpScope(plan, tool)
        for pre in tool.op.preconditions:
            for pattern in _message_patterns(precondition_lines(scope, pre)):
                rule = RefusingRule(pre.kind, pattern, rule_text(scope, pre))
                found.setdefault(tool.name, []).append(rule)
    return found


def refused_by(rules: list[RefusingRule], error: str) -> RefusingRule | None:
    """The first precondition whose message is ``error`` (None for an effect's own check, such
    as a status move the machine does not allow)."""
    return next((rule for rule in rules if rule.pattern.fullmatch(error.strip())), None)


def _message_patterns(lines: list[str]) -> list[re.Pattern[str]]:
    """The error of each ``return {"success": False, "error": …}`` line, as a pattern."""
    patterns = []
    for line in lines:
        stripped = line.strip()
        if not stripped.startswith("return {"):
            continue
        node = ast.parse(stripped.removeprefix("return "), mode="eval").body
        if not isinstance(node, ast.Dict):
            continue
        message = next(
            (v for k, v in zip(node.keys, node.values, strict=True) if _is(k, "error")), None
        )
        if message is not None:
            patterns.append(re.compile(_pattern_of(message), re.DOTALL))
    return patterns


def _is(key: Any, name: str) -> bool:
    return isinstance(key, ast.Constant) and key.value == name


def _pattern_of(node: ast.expr) -> str:
    """A literal as itself, an f-string's holes as any text."""
    if isinstance(node, ast.Constant):
        return re.escape(str(node.value))
    if isinstance(node, ast.JoinedStr):
        return "".join(
            re.escape(str(part.value)) if isinstance(part, ast.Constant) else "(.*?)"
            for part in node.values
        )
    return "(.*?)"
