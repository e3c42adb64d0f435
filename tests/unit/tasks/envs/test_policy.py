"""Static policy: one known-bad program per rule, known bypasses, and good code that must pass."""

from __future__ import annotations

import importlib
import json
import textwrap
import types
from collections import deque
from pathlib import Path

import pytest

from envmill.schemas.environment import PolicyViolation
from envmill.tasks.envs import policy
from envmill.tasks.envs.policy import ALLOWED_IMPORTS, check_check_source, check_module, describe
from envmill.tasks.envs.policy import names as policy_names

FIXTURES = Path(__file__).parents[3] / "fixtures"

GOOD_ENV = '''\
"""A tiny library: members borrow and return books."""

from __future__ import annotations

import copy
import re
from datetime import datetime, timedelta
from typing import Any, Literal, Optional, TypedDict

LOAN_DAYS = 14
ISBN = re.compile(r"^[0-9]{13}$")


class Book(TypedDict):
    isbn: str
    title: str
    status: Literal["available", "on_loan"]


class Loan(TypedDict):
    loan_id: str
    isbn: str
    due: str


class Base:
    def __init__(self) -> None:
        self.current_time: str = "2025-01-01T09:00:00"


class Library(Base):
    """Books and loans."""

    def __init__(self) -> None:
        super().__init__()
        self.books: dict[str, Book] = {}
        self.loans: list[Loan] = []
        self.next_loan_number: int = 1

    def __repr__(self) -> str:
        return f"Library({len(self.books)} books)"

    @staticmethod
    def _fail(error: str) -> dict[str, Any]:
        return {"success": False, "error": error}

    @property
    def _now(self) -> datetime:
        return datetime.fromisoformat(self.current_time)

    def list_books(self, status: Optional[str] = None) -> dict[str, Any]:
        """List books, optionally by status.

        Args:
            status: available or on_loan; omit for all.
        """
        found = [copy.deepcopy(b) for b in self.books.values() if status in (None, b["status"])]
        return {"success": True, "data": sorted(found, key=lambda b: b["title"])}

    def borrow_book(self, isbn: str) -> dict[str, Any]:
        """Borrow an available book for 14 days.

        Args:
            isbn (str): The book's 13-digit ISBN.
        """
        book = self.books.get(isbn)
        if not ISBN.match(isbn) or book is None or not isinstance(book, dict):
            return self._fail(f"book {isbn!r} not found")
        if book["status"] != "available":
            return self._fail("book is {} already".format("on loan"))
        due = (self._now + timedelta(days=LOAN_DAYS)).isoformat()
        loan_id = f"L{self.next_loan_number:04d}"
        self.next_loan_number += 1
        book["status"] = "on_loan"
        self.loans.append({"loan_id": loan_id, "isbn": isbn, "due": due})
        counts = {s: sum(1 for b in self.books.values() if b["status"] == s) for s in ("on_loan",)}
        return {"success": True, "message": f"due {due}", "data": {"loan_id": loan_id, **counts}}

    def rename(self, isbn: str, title: str) -> dict[str, Any]:
        """Rename a book (a literal getattr/setattr is fine).

        Args:
            isbn: The book's ISBN.
            title: The new title.
        """
        if hasattr(self, "books") and getattr(self, "books").get(isbn):
            self.books[isbn]["title"] = title
        return {"success": True, "message": "renamed"}
'''

GOOD_CHECK = """\
import re

PATTERN = re.compile(r"^L[0-9]{4}$")


def _loans(state: dict) -> list:
    return [loan for loan in state["loans"] if PATTERN.match(loan["loan_id"])]


def check(initial_state: dict, final_state: dict) -> bool:
    return len(_loans(final_state)) == len(_loans(initial_state)) + 1
"""

BAD_PROGRAMS = [
    ("syntax", 2, "x = 1\ndef f(:\n    pass\n"),
    ("size", 1, "x = 1\n" + "#" * policy.MAX_SOURCE_BYTES),
    ("import", 2, '"""doc."""\nimport os\n'),
    ("import", 1, "from subprocess import run\n"),
    ("import", 1, "from . import sibling\n"),
    ("import", 1, "from typing import *\n"),
    ("import", 1, "from typing import sys\n"),
    ("clock", 3, "import datetime\n\nX = datetime.date.today()\n"),
    ("clock", 2, "def f(d):\n    return d.utcfromtimestamp(0)\n"),
    ("dunder", 2, "def f(x):\n    return x.__class__\n"),
    ("dunder", 1, "X = __name__\n"),
    ("dunder", 1, "import re as __builtins__\n"),
    ("dunder", 2, "def f(d):\n    return d['__globals__']\n"),
    ("dunder", 3, "class A:\n    def __init__(self):\n        object.__init__(self)\n"),
    ("builtin", 2, "def f():\n    return open('x')\n"),
    ("builtin", 2, "def f(s):\n    return eval(s)\n"),
    ("builtin", 2, "def f():\n    return vars()\n"),
    ("builtin", 1, "F = exec\n"),
    ("builtin", 1, "def f(input):\n    return 1\n"),
    ("builtin", 1, "from re import compile\n"),
    ("builtin", 1, "X = type('X', (), {})\n"),
    ("dynamic_attr", 2, "def f(x, name):\n    return getattr(x, name)\n"),
    ("dynamic_attr", 2, "def f(x):\n    setattr(x, '__dict__', {})\n"),
    ("dynamic_attr", 1, "G = getattr\n"),
    ("scope", 3, "N = 0\ndef f():\n    global N\n"),
    ("scope", 4, "def f():\n    n = 0\n    def g():\n        nonlocal n\n"),
    ("async", 1, "async def f():\n    pass\n"),
    ("async", 2, "def f(x):\n    return [y async for y in x]\n"),
    ("module_code", 2, "X = []\nfor i in range(3):\n    X.append(i)\n"),
    ("module_code", 1, "while False:\n    pass\n"),
    ("module_code", 2, "import re\nif re:\n    X = 1\n"),
    ("module_code", 1, "print('hello')\n"),
    ("module_code", 1, "try:\n    X = 1\nexcept Exception:\n    X = 2\n"),
    ("introspection", 2, "def f():\n    return (i for i in ()).gi_frame.f_globals\n"),
    ("module_attr", 2, "import typing\nM = typing.sys.modules\n"),
    ("module_attr", 2, "import enum\nB = enum.bltns\n"),
    ("string_eval", 2, "import typing\nH = typing.get_type_hints\n"),
    ("string_eval", 1, "from functools import singledispatch\n"),
    ("format", 1, "S = '{0.__class__.__base__}'.format(1)\n"),
    ("format", 2, "def f(t, x):\n    return t.format(x)\n"),
    ("format", 1, "from string import Formatter\n"),
]


@pytest.mark.parametrize(
    ("rule", "line", "source"),
    BAD_PROGRAMS,
    ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(BAD_PROGRAMS)],
)
def test_bad_program_is_refused_with_rule_and_line(rule: str, line: int, source: str) -> None:
    found = check_module(source)
    assert (rule, line) in [(v.rule, v.line) for v in found], found


REFUSED_MODULES = [
    "os",
    "sys",
    "subprocess",
    "socket",
    "time",
    "random",
    "threading",
    "multiprocessing",
    "asyncio",
    "ctypes",
    "gc",
    "inspect",
    "importlib",
    "pickle",
    "marshal",
    "signal",
    "builtins",
    "io",
    "pathlib",
    "shutil",
    "tempfile",
    "resource",
    "urllib.request",
    "http.client",
    "secrets",
    "uuid",
    "operator",
]


@pytest.mark.parametrize("module", REFUSED_MODULES)
def test_refused_import_names_the_module(module: str) -> None:
    for source in (f"import {module}\n", f"from {module} import x\n"):
        found = check_module(source)
        assert [v.rule for v in found] == ["import"]
        assert f"'{module}'" in found[0].message


BYPASSES = [
    ("dunder", "X = ().__class__.__base__.__subclasses__()\n"),
    ("dynamic_attr", "def f(x):\n    return getattr(x, '__globals__')\n"),
    ("dynamic_attr", "def f(x, name):\n    return getattr(x, name)\n"),
    ("dynamic_attr", "def f(x, a):\n    return getattr(x, *a)\n"),
    ("builtin", "f = eval\n"),
    ("builtin", "import functools\nP = functools.partial(open, 'x')\n"),
    ("import", "from os import path\n"),
    ("import", "import os.path as p\n"),
    ("dunder", "X = __builtins__['open']\n"),
    ("clock", "import datetime\nX = datetime.datetime.now()\n"),
    ("clock", "from datetime import datetime as d\nX = d.now()\n"),
    ("clock", "import datetime\nX = getattr(datetime.datetime, 'now')()\n"),
    ("builtin", "X = type('X', (), {})\n"),
    ("module_attr", "import collections\nX = collections._sys.modules['os']\n"),
    ("import", "import typing_extensions\n"),
    ("builtin", "X = __import__('os')\n"),
    ("format", "import typing\nS = '{0.sys.modules}'.format(typing)\n"),
    ("format", "S = str.format('{0}', 1)\n"),
    ("introspection", "def f(e):\n    return e.__traceback__.tb_frame\n"),
    # second red team (issue 9): every way of naming an attribute is attribute access
    ("dunder", "def f(x):\n    match x:\n        case object(__self__=b):\n            return b\n"),
    ("private", "def f(x):\n    match x:\n        case object(_cache=b):\n            return b\n"),
    ("format", "def f(x):\n    match x:\n        case str(format=f):\n            return f\n"),
    (
        "dunder",
        "def f(x):\n    match x:\n        case {'a': __builtins__}:\n            return 1\n",
    ),
    ("dunder", "def f(x):\n    match x:\n        case [*__builtins__]:\n            return 1\n"),
    ("private", "from dataclasses import _create_fn\n"),
    ("private", "import dataclasses\nF = dataclasses._create_fn\n"),
    ("private", "import re\nX = getattr(re, '_cache')\n"),
    ("private", "import re\nX = re._compile\n"),
    ("format", "F = getattr(str, 'format')\n"),
    ("format", "T = '{0.x}'\nF = getattr(T, 'format_map')\n"),
    ("builtin", "t = type\nX = t('X', (), {})\n"),
    ("builtin", "X = [type][0]('X', (), {})\n"),
    ("builtin", "X = type(int)('X', (), {})\n"),
    ("builtin", "X = type(name='X', bases=(), dict={})\n"),
    ("string_eval", "import dataclasses\nX = dataclasses.make_dataclass('X', ['a'])\n"),
    # review of the second round: field names become __match_args__; aliases; type(x) values
    (
        "match",
        "import dataclasses\n\n@dataclasses.dataclass\nclass Peek:\n    sys: int = 0\n\n"
        "def f(x):\n    match x:\n        case Peek(s):\n            return s\n",
    ),
    ("private", "import dataclasses\nd = dataclasses\nF = getattr(d, '_create_fn')\n"),
    ("self_binding", "import dataclasses\nself = dataclasses\nF = self._create_fn\n"),
    ("self_binding", "import dataclasses\nF = (lambda self: self._create_fn)(dataclasses)\n"),
    ("self_binding", "import dataclasses as self\n"),
    (
        "unbound_method",
        "import dataclasses\n\nclass A:\n    def m(self):\n        return self._create_fn\n\n"
        "F = A.m(dataclasses)\n",
    ),
    (
        "self_binding",
        "import dataclasses\n\nclass A:\n    @staticmethod\n    def m(self):\n"
        "        return self._create_fn\n",
    ),
    (
        "self_binding",
        "import dataclasses\n\nclass A:\n    def m(self=dataclasses):\n"
        "        return self._create_fn\n",
    ),
    (
        "match",
        "list = dict\n\ndef f(x):\n    match x:\n        case list(s):\n            return s\n",
    ),
    ("introspection", "import typing\nT = typing.get_origin(typing.Type[int])\n"),
    ("private", "import dataclasses\nF = [dataclasses][0]._create_fn\n"),
    ("builtin", "t = type(int)\n"),
    ("builtin", "def f(x):\n    return [type(x)][0]\n"),
    ("metaclass", "import collections.abc\nM = collections.abc.ABCMeta\n"),
    ("metaclass", "from enum import EnumMeta\n"),
]


@pytest.mark.parametrize(("rule", "source"), BYPASSES)
def test_known_bypass_is_caught(rule: str, source: str) -> None:
    assert rule in {v.rule for v in check_module(source)}


def test_realistic_environment_passes() -> None:
    assert check_module(GOOD_ENV) == []


def test_fixture_environment_and_its_checks_pass() -> None:
    assert check_module((FIXTURES / "envs" / "clinic.py").read_text()) == []
    scenarios = json.loads((FIXTURES / "scenarios" / "clinic.json").read_text())
    codes = [
        c["code"]
        for s in [*scenarios["certified"], *scenarios["fail"].values()]
        for c in s["checks"]
    ]
    assert codes and all(check_check_source(code) == [] for code in codes)


def test_good_check_source_passes() -> None:
    assert check_check_source(GOOD_CHECK) == []


@pytest.mark.parametrize(
    ("source", "rule", "line"),
    [
        ("def verify(initial_state, final_state):\n    return True\n", "check_signature", 1),
        ("check = lambda a, b: True\n", "check_signature", 1),
        ("def check(final_state):\n    return True\n", "check_signature", 1),
        ("X = 1\ndef check(a, b, c, d):\n    return True\n", "check_signature", 2),
        ("def check(a, b, *rest):\n    return True\n", "check_signature", 1),
        ("import time\ndef check(a, b):\n    return time.time() > 0\n", "import", 1),
        ("def check(a, b):\n    return a.__class__ is b.__class__\n", "dunder", 2),
        ("print(1)\ndef check(a, b):\n    return True\n", "module_code", 1),
    ],
)
def test_check_source_violation_is_caught(source: str, rule: str, line: int) -> None:
    assert (rule, line) in [(v.rule, v.line) for v in check_check_source(source)]


def test_all_violations_are_collected_and_sorted_by_line() -> None:
    source = textwrap.dedent("""\
        import os
        def f(x):
            return eval(x.__dict__)
        import random
        """)
    found = check_module(source)
    assert [(v.line, v.rule) for v in found] == [
        (1, "import"),
        (3, "builtin"),
        (3, "dunder"),
        (4, "import"),
    ]


def test_message_is_one_precise_line() -> None:
    found = check_module("import datetime\nX = datetime.datetime.utcnow()\n")
    assert str(found[0]) == (
        "line 2: 'utcnow' reads the wall clock; use the current_time state attribute [clock]"
    )
    text = str(check_module("import os\n")[0])
    assert text.startswith("line 1: import of 'os' is not allowed (allowed: __future__, ")
    assert "collections, collections.abc, copy" in text
    assert text.endswith(") [import]") and "\n" not in text


def test_describe_counts_the_rest() -> None:
    found = check_module("import os\nimport sys\nimport time\n")
    assert describe(found) == f"{found[0]} (and 2 more)"
    assert describe(found[:1]) == str(found[0])
    assert describe([]) == "no policy violations"
    assert isinstance(found[0], PolicyViolation)


def test_allowed_imports_exclude_randomness_and_import_cleanly() -> None:
    assert not ALLOWED_IMPORTS & {"uuid", "random", "secrets", "time", "os", "sys"}
    for module in ALLOWED_IMPORTS:
        importlib.import_module(module)
        assert check_module(f"import {module}\n") == []


def test_module_attrs_cut_every_path_out_of_the_allow_list() -> None:
    """From allowed modules, module-valued attributes not refused reach only harmless modules."""
    harmless = {"abc", "keyword", "_string", "_sre", "warnings"}
    queue = deque(importlib.import_module(name) for name in ALLOWED_IMPORTS)
    seen = set(ALLOWED_IMPORTS)
    while queue:
        module = queue.popleft()
        for attr in dir(module):
            value = getattr(module, attr)
            if attr in policy_names.MODULE_ATTRS or not isinstance(value, types.ModuleType):
                continue
            if value.__name__ not in seen:
                seen.add(value.__name__)
                queue.append(value)
    internal = {m for m in seen if m.startswith(("re.", "json."))}
    assert seen - set(ALLOWED_IMPORTS) - internal <= harmless


ORDINARY_AFTER_SECOND_ROUND = '''\
from dataclasses import dataclass


@dataclass
class Line:
    sku: str
    qty: int


class Shop:
    """Ordinary code the second round's rules must still accept."""

    def __init__(self) -> None:
        self.lines: dict[str, dict] = {}
        self._apply_count: dict[str, int] = {}

    def describe(self, value: object) -> dict:
        """Describe a value.

        Args:
            value: Anything.
        """
        if type(value) is int or type(value) in (float, bool):
            kind = "number"
        else:
            match value:
                case str(text):
                    kind = f"text {text}"
                case {"sku": sku}:
                    kind = f"line {sku}"
                case Line(sku=sku, qty=qty):
                    kind = f"line {sku} x{qty}"
                case _:
                    kind = "other"
        self._apply(kind)
        return {"success": True, "data": kind}

    def _apply(self, kind: str) -> None:
        self._apply_count[kind] = self._apply_count.get(kind, 0) + 1
'''


def test_ordinary_code_passes_the_second_round_rules() -> None:
    assert check_module(ORDINARY_AFTER_SECOND_ROUND) == []


@pytest.mark.parametrize(
    ("module", "use", "words"),
    [
        ("uuid", "uuid.uuid4().hex", "counter in the state"),
        ("time", "time.time()", "self.current_time"),
        ("random", "random.choice([1, 2])", "deterministically"),
        ("secrets", "secrets.token_hex(4)", "deterministically"),
    ],
)
def test_refused_imports_models_reach_for_say_what_to_use_instead(module, use, words) -> None:
    """The import and every use name their line, and say what to do instead (a repair turn
    feeds these back to the model)."""
    source = f"import {module}\n\nclass E:\n    def f(self):\n        return {use}\n"
    found = check_module(source)
    assert [(v.rule, v.line) for v in found] == [("import", 1), ("import", 5)]
    assert all(words in v.message and "\n" not in str(v) for v in found)
    assert f"'{module}' comes from the refused import of '{module}'" in found[1].message


def test_a_name_imported_from_a_refused_module_is_flagged_where_used() -> None:
    found = check_module("from time import time as now\n\ndef f():\n    return now()\n")
    assert [(v.rule, v.line) for v in found] == [("import", 1), ("import", 4)]
    assert "'now' comes from the refused import of 'time'" in found[1].message
