"""The units of work: plain functions and classes, no Prefect (DESIGN §2)."""

import ast
import sys
import threading

if sys.version_info < (3, 13):
    # CPython before 3.13 converts syntax trees to Python objects with interpreter-wide recursion
    # bookkeeping, so two threads parsing at once can fail with "AST constructor recursion depth
    # mismatch" (gh-106905). envmill parses on threads (an LLM backend's items and methods), so
    # in its processes ``ast.parse`` runs one call at a time.
    _parse, _parse_lock = ast.parse, threading.Lock()

    def _serialized_parse(*args, **kwargs):  # noqa: ANN002, ANN003
        with _parse_lock:
            return _parse(*args, **kwargs)

    ast.parse = _serialized_parse
