"""What is compared of each item: a set of shingles per measure, blind to what only renames.

- **code**: the environment's AST, docstrings dropped, every identifier alpha-renamed by first
  occurrence (``v0``, ``v1`` …; builtins keep their names) and literals masked by type. Masking
  rather than keeping names is the point: a variant that only renames entities, fields and
  messages reads as the same program, while one with other entities, operations or rules has
  another tree. Alpha-renaming (not one mask for all names) keeps which names are the same one.
  The AST rather than a token stream: layout, parentheses, quotes and comments are gone, so a
  reformatted module reads 1.0 (a token lexer, tried, was ~3× faster but read a module minus one
  operation, reformatted, as 0.88 instead of 0.95).
- **signature**: tool names, parameter names and types, required parameters: what an agent sees.
- **task**: the words of the task with ids, numbers, dates, e-mails, quoted text, capitalized
  names and the user's fact values masked.
- **state**: the initial state's ``path=value`` leaves, id-like keys and values masked.

Source is parsed, never run (it is untrusted): a module that does not parse has no code shingles.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
from collections import Counter
from functools import lru_cache

CODE_SHINGLE = 8  # normalized AST tokens per shingle
TASK_SHINGLE = 3  # words per shingle
_BUILTINS = frozenset(dir(builtins)) | {"self", "cls"}
_NAME_FIELDS = frozenset({"id", "name", "arg", "attr", "asname", "module"})
_WORD = re.compile(r"<[A-Z]+>|\w+")
_MONTH = (
    r"(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_TASK_MASKS = (  # order matters: the broad patterns run last
    (re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.]+\b"), "<EMAIL>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b"), "<DATE>"),
    (re.compile(r"\b\d{1,2}:\d{2}(?:\s?[ap]\.?m\.?)?\b", re.IGNORECASE), "<DATE>"),
    (
        re.compile(
            rf"\b(?:\d{{1,2}} {_MONTH}|{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?)(?:,? \d{{4}})?\b"
        ),
        "<DATE>",
    ),
    (re.compile(r"[\"“‘'][^\"”’']{1,80}[\"”’']"), "<QUOTED>"),
    (re.compile(r"\b[\w-]*\d[\w.-]*\b"), "<ID>"),  # ids, amounts, counts: any token with a digit
    (re.compile(r"(?<=[^.!?\s] )[A-Z][\w'-]*"), "<NAME>"),  # capitalized, not opening a sentence
)
_ID_LIKE = re.compile(r"^(?=.*\d)[\w.:@+-]+$|^[0-9a-f]{8,}$")


def code_shingles(source: str) -> set[str]:
    """Shingles of the normalized token stream of ``source`` (empty if it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    return _shingles(_normalized_tokens(tree), CODE_SHINGLE) if tree.body else set()


def _normalized_tokens(tree: ast.AST) -> list[str]:
    """Pre-order: node types, alpha-renamed identifiers, literals by type; no docstrings.
    An explicit stack (not recursion): a module of 10,000 nodes is read in milliseconds."""
    names: dict[str, str] = {}
    tokens: list[str] = []
    stack: list[object] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, _Name):
            tokens.append(node if node in _BUILTINS else names.setdefault(node, f"v{len(names)}"))
        elif isinstance(node, str):
            tokens.append(node)
        elif isinstance(node, ast.AST):
            tokens.append(type(node).__name__)
            stack.extend(reversed(_children(node)))
    return tokens


class _Name(str):
    """An identifier still to be renamed (in the order the walk meets it)."""


def _children(node: ast.AST) -> list[object]:
    children: list[object] = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            if not isinstance(value, ast.expr_context):  # Load/Store: implied by the position
                children.append(value)
        elif isinstance(value, list):
            children.extend(v for v in value if isinstance(v, ast.AST) and not _is_docstring(v))
        elif isinstance(value, str) and field in _NAME_FIELDS:
            children.append(_Name(value))
        elif field == "value" and isinstance(node, ast.Constant):
            children.append(_literal_mask(value))
    return children


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _literal_mask(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    return f"<{type(value).__name__}>"


def signature_items(tools: list[dict]) -> set[str]:
    """One item per tool and per (tool, parameter, type), and per required parameter."""
    items = set()
    for tool in tools:
        function = tool.get("function", tool)
        name = str(function.get("name", ""))
        params = function.get("parameters") or {}
        items.add(f"tool:{name}")
        for param, schema in (params.get("properties") or {}).items():
            kind = schema.get("type", "any") if isinstance(schema, dict) else "any"
            items.add(f"param:{name}.{param}:{json.dumps(kind)}")
        items.update(f"required:{name}.{p}" for p in params.get("required") or [])
    return items


def mask_task(task: str, facts: dict | None = None) -> str:
    """The task with the user's fact values, then ids, numbers, dates, e-mails, quoted text and
    capitalized names masked, lower-cased (the masks stay upper-case)."""
    text = task
    for value in sorted(_fact_values(facts or {}), key=len, reverse=True):
        text = re.sub(re.escape(value), "<VALUE>", text, flags=re.IGNORECASE)
    for pattern, mask in _TASK_MASKS:
        text = pattern.sub(mask, text)
    return " ".join(w if w.startswith("<") else w.lower() for w in _WORD.findall(text))


def _fact_values(facts: dict) -> set[str]:
    values = set()
    for value in facts.values():
        if isinstance(value, dict):
            values |= _fact_values(value)
        elif isinstance(value, str | int | float) and len(str(value)) >= 2:
            values.add(str(value))
    return values


def task_shingles(task: str, facts: dict | None = None) -> set[str]:
    return _shingles(mask_task(task, facts).split(), TASK_SHINGLE)


def state_items(state: object) -> set[str]:
    """``path=value`` leaves of a JSON state; id-like keys become ``*``, list indices ``[]``,
    id-like strings ``<ID>``; repeated leaves are counted (``#2``) so Jaccard sees multisets."""
    counts: Counter[str] = Counter()
    stack: list[tuple[object, str]] = [(state, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            stack.extend((child, f"{path}.{_step(key)}") for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, path + "[]") for child in value)
        elif isinstance(value, str):
            counts[f"{path}=<ID>" if _looks_like_id(value) else f"{path}={value}"] += 1
        else:
            counts[f"{path}={value}"] += 1
    return {f"{leaf}#{n}" for leaf, total in counts.items() for n in range(1, total + 1)}


@lru_cache(maxsize=1 << 16)
def _step(key: str) -> str:
    return "*" if _looks_like_id(key) else key


@lru_cache(maxsize=1 << 16)
def _looks_like_id(text: str) -> bool:
    """A word with a digit (``CS-00001``, ``2025-02-08T09:15``) or a long hex string."""
    return " " not in text and _ID_LIKE.match(text) is not None


def _shingles(tokens: list[str], size: int) -> set[str]:
    if len(tokens) <= size:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}
