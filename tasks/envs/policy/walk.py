"""One walk per tree, its nodes sorted by type: the policy's rules each look at a few kinds of
node, a dozen passes in all, and listing and testing every node was most of what a pass cost."""

from __future__ import annotations

import ast
import threading
from collections.abc import Sequence
from typing import Any

MAX_TREES = 4  # the trees being checked now: one per thread, none kept for long (see nodes)
_indexed: dict[int, tuple[ast.AST, Nodes]] = {}  # id -> (the node, kept alive; its index)
_lock = threading.Lock()


class Nodes:
    """The nodes ``ast.walk(tree)`` yields, in its order, and the same nodes by type."""

    def __init__(self, tree: ast.AST) -> None:
        self.all: list[ast.AST] = [tree]
        self.by_type: dict[type, list[ast.AST]] = {}
        for node in self.all:  # appended while read: breadth first, as ``ast.walk``
            self.by_type.setdefault(type(node), []).append(node)
            self.all.extend(children(node))

    def of(self, *kinds: type) -> Sequence[Any]:
        """The nodes of these exact types, in walk order (rules that report several kinds
        report them in the order they appear). Typed loosely: a rule reads the fields of the
        kinds it asked for, which isinstance would have narrowed to."""
        present = [kind for kind in kinds if kind in self.by_type]
        if len(present) <= 1:  # one kind, or none: no pass over every node
            return self.by_type[present[0]] if present else ()
        wanted = set(present)
        return [node for node in self.all if type(node) in wanted]

    def collect(self, *kinds: type) -> list[Any]:
        """The nodes of these exact types, type by type: for rules that collect into a set,
        where the order is no matter and a pass over every node would be."""
        return [node for kind in kinds for node in self.by_type.get(kind, ())]


def nodes(tree: ast.AST) -> Nodes:
    """The index of a tree the rules never change, made once for all of them. Only the last
    few trees are kept: a tree is checked right after it is parsed, and every tree kept alive is
    thousands of objects each garbage collection goes over again."""
    with _lock:
        hit = _indexed.get(id(tree))
    if hit is not None and hit[0] is tree:
        return hit[1]
    index = Nodes(tree)
    with _lock:
        if len(_indexed) >= MAX_TREES:
            _indexed.pop(next(iter(_indexed)))
        _indexed[id(tree)] = (tree, index)
    return index


def children(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))`` without a generator's cost per child. One frame, as
    that generator: the visitor recurses through it, and how deeply a source may nest before it
    is refused (at Python's recursion limit) must not move."""
    found: list[ast.AST] = []
    for field in node._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, ast.AST):
                    found.append(item)
        elif isinstance(value, ast.AST):
            found.append(value)
    return found
