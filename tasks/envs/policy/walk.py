"""``ast.walk`` once per tree: the policy's rules each go over every node of a source, a dozen
passes in all, and listing the nodes is most of what a pass costs."""

from __future__ import annotations

import ast
import threading

MAX_TREES = 64
_walked: dict[int, tuple[ast.AST, list[ast.AST]]] = {}  # id -> (the node, kept alive; its nodes)
_lock = threading.Lock()


def walk(node: ast.AST) -> list[ast.AST]:
    """The nodes ``ast.walk(node)`` yields, in its order (a tree the rules never change)."""
    with _lock:
        hit = _walked.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    nodes = list(ast.walk(node))
    with _lock:
        if len(_walked) >= MAX_TREES:
            _walked.pop(next(iter(_walked)))
        _walked[id(node)] = (node, nodes)
    return nodes
