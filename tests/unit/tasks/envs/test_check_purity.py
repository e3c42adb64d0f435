"""Check purity: a check that could keep something between calls is refused with its rule and
line, so many evaluations may share one process; the ordinary checks next to each hostile one
pass, and environment modules are judged as before."""

from __future__ import annotations

import textwrap

import pytest

from envmill.tasks.certify.guard import guard_check
from envmill.tasks.envs.policy import check_check_source, check_module
from envmill.tasks.envs.policy.state_names import (
    MUTABLE_MODULE_NAMES,
    PROCESS_FUNCTIONS,
    is_mutable_instance,
)

CHECK = "def check(initial_state, final_state):\n"


def _source(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# (rule, line, source): one or more hostile sources per rule.
HOSTILE = [
    ("global_state", 3, "N = 0\n" + CHECK + "    global N\n    N += 1\n    return N == 1\n"),
    (
        "global_state",
        4,
        _source("""
            def counter():
                n = 0
                def bump():
                    nonlocal n
                    n += 1
                    return n
                return bump
            """)
        + CHECK
        + "    return counter()() == 1\n",
    ),
    # the module counter, the closure and the counter that waits (tests/sandbox/test_certify_gates)
    (
        "global_state",
        4,
        "calls = [0]\n\n" + CHECK + "    calls[0] += 1\n    return calls[0] == 1\n",
    ),
    (
        "global_state",
        11,
        _source("""
            def counter():
                seen = []

                def bump():
                    seen.append(1)
                    return len(seen)

                return bump


            bump = counter()
            """)
        + CHECK
        + "    return bump() == 1\n",
    ),
    ("global_state", 4, "calls = {'n': 0}\n\n" + CHECK + "    calls['n'] += 1\n    return True\n"),
    (
        "global_state",
        2,
        "import itertools\nTICKS = itertools.count()\n" + CHECK + "    return True\n",
    ),
    ("global_state", 1, "SEEN = [k for k in 'ab']\n" + CHECK + "    return True\n"),
    (
        "global_state",
        3,
        "import itertools\nclass Clock:\n    ticks = itertools.count()\n\n"
        + CHECK
        + "    return next(Clock.ticks) == 0\n",
    ),
    (
        "global_state",
        3,
        "CACHE = {}\n" + CHECK + "    CACHE[len(final_state)] = True\n    return True\n",
    ),
    ("global_state", 3, "SEEN = set()\n" + CHECK + "    SEEN.add(1)\n    return len(SEEN) == 1\n"),
    ("global_state", 2, "CACHE = {}\nCACHE['a'] = 1\n" + CHECK + "    return True\n"),
    (
        "global_state",
        3,
        "CACHE = {'k': []}\n" + CHECK + "    CACHE.get('k').append(1)\n    return True\n",
    ),
    (
        "mutable_default",
        1,
        "def remember(x, seen=[]):\n    seen.append(x)\n    return len(seen)\n\n"
        + CHECK
        + "    return remember(1) == 1\n",
    ),
    (
        "mutable_default",
        1,
        "def tally(x, *, by=dict()):\n    return by\n" + CHECK + "    return True\n",
    ),
    ("mutable_default", 2, CHECK + "    f = lambda x, acc={}: acc\n    return f(1) == {}\n"),
    (
        "caching",
        3,
        "import functools\n\n@functools.lru_cache(maxsize=None)\ndef total(n):\n    return n\n\n"
        + CHECK
        + "    return total(1) == 1\n",
    ),
    ("caching", 1, "from functools import cache\n" + CHECK + "    return True\n"),
    ("caching", 1, "from functools import cached_property\n" + CHECK + "    return True\n"),
    ("caching", 3, "import functools\n" + CHECK + "    f = functools.cache\n    return True\n"),
    ("check_purity", 4, "import json\n\n" + CHECK + "    json.calls = 1\n    return True\n"),
    ("check_purity", 2, CHECK + "    check.calls = 1\n    return True\n"),
    (
        "module_write",
        3,
        "import collections.abc\n" + CHECK + "    collections.abc.Mapping.register(dict)\n"
        "    return True\n",
    ),
    (
        "module_write",
        3,
        "import collections.abc\n" + CHECK + "    add = collections.abc.Set.register\n"
        "    return True\n",
    ),
    (
        "module_write",
        3,
        "import json\n" + CHECK + "    json.loads('{}')['a'] = 1\n    return True\n",
    ),
    (
        "module_write",
        4,
        "import dataclasses\nimport json\n"
        + CHECK
        + "    dataclasses.dataclass(json.JSONEncoder)\n"
        "    return True\n",
    ),
    (
        "module_write",
        4,
        "import functools\n\n" + CHECK + "    w = functools.wraps\n    return True\n",
    ),
    (
        "process_state",
        3,
        "import json\n" + CHECK + "    json.decoder.BACKSLASH.clear()\n    return True\n",
    ),
    (
        "process_state",
        1,
        "from json.encoder import ESCAPE_DCT\n" + CHECK + "    return 'a' in ESCAPE_DCT\n",
    ),
    (
        "process_state",
        3,
        "import decimal\n" + CHECK + "    decimal.setcontext(decimal.Context(prec=3))\n"
        "    return True\n",
    ),
    # the decimal context and the json escape table (tests/sandbox/test_certify_gates)
    (
        "process_state",
        4,
        "import decimal\n\n" + CHECK + "    context = decimal.getcontext()\n"
        "    first = not context.flags[decimal.Inexact]\n"
        "    decimal.Decimal(1) / decimal.Decimal(3)\n    return first\n",
    ),
    (
        "process_state",
        4,
        "import json\n\n" + CHECK + "    table = json.encoder.ESCAPE_DCT\n"
        "    first = 'zz' not in table\n    table['zz'] = 'x'\n    return first\n",
    ),
    (
        "process_state",
        3,
        "import json\n" + CHECK + "    return 'a' in getattr(json.encoder, 'ESCAPE_DCT')\n",
    ),
    (
        "process_state",
        3,
        "import copy\n" + CHECK + "    copy.dispatch_table[int] = None\n    return True\n",
    ),
    (
        "process_state",
        3,
        "import decimal\n" + CHECK + "    return decimal.DefaultContext.prec > 0\n",
    ),
    ("process_state", 1, "from re import purge\n" + CHECK + "    return True\n"),
    ("process_state", 1, "from typing import overload\n" + CHECK + "    return True\n"),
    # a breaker's: typing hands back what an earlier evaluation made for equal arguments
    (
        "process_state",
        3,
        "import typing\n" + CHECK + "    return 'True' in repr(typing.Annotated[int, (True,)])\n",
    ),
    # a breaker's: a class's __eq__ runs inside typing's caches, its __subclasshook__ in every
    # later isinstance, its __del__ during another check
    (
        "check_purity",
        1,
        "class Key(list):\n    def __hash__(self):\n        return 1\n"
        + CHECK
        + "    return True\n",
    ),
]


@pytest.mark.parametrize(("rule", "line", "source"), HOSTILE)
def test_a_check_that_could_keep_something_is_refused(rule: str, line: int, source: str) -> None:
    found = [(v.rule, v.line) for v in check_check_source(source)]
    assert (rule, line) in found, found


@pytest.mark.parametrize(("rule", "line", "source"), HOSTILE)
def test_each_refusal_is_one_line_that_says_what_to_do(rule: str, line: int, source: str) -> None:
    violation = next(v for v in check_check_source(source) if (v.rule, v.line) == (rule, line))
    assert "\n" not in violation.message
    advice = ("instead", "only", "inside", "first", "alone", "each time", "explicitly")
    assert any(word in violation.message for word in advice), violation.message


NEAR_MISSES = {
    "a module-level tuple": "NAMES = ('Ann', 'Bo')\n" + CHECK + "    return 'Ann' in NAMES\n",
    "a module-level frozenset": "OPEN = frozenset({'open', 'held'})\nDONE = frozenset(['done'])\n"
    + CHECK
    + "    return final_state['status'] in OPEN | DONE\n",
    "constants made of constants": "DAY = 24 * 60\nLABEL = f'day {DAY}'\nLOW = -DAY\n"
    + "PICK = lambda r: r['n']\n"
    + CHECK
    + "    return True\n",
    "module-level literal data read only": "ALLOWED = [['orders', 'O1', 'status']]\n"
    + "CREATED = {('orders',): 1}\n"
    + CHECK
    + "    return any(p[:1] == ['orders'] for p in ALLOWED) and CREATED.get(('orders',)) == 1\n",
    "a local list mutated": CHECK
    + "    found = []\n    for key in final_state:\n        found.append(key)\n"
    + "    found.sort()\n    return bool(found)\n",
    "a local that shares a module-level name": "CACHE = ()\n"
    + CHECK
    + "    CACHE = {}\n    CACHE['a'] = 1\n    return bool(CACHE)\n",
    "a json.loads result mutated": "import json\n"
    + CHECK
    + "    data = json.loads(json.dumps(final_state))\n    data['x'] = 1\n"
    + "    data.update(y=2)\n    return bool(data)\n",
    "a Counter of the state": "import collections\n"
    + CHECK
    + "    seen = collections.Counter(final_state)\n    seen['x'] += 1\n    return True\n",
    "a default of None": "def tally(x, seen=None, *, by=()):\n"
    + "    seen = [] if seen is None else seen\n    seen.append(x)\n    return seen\n\n"
    + CHECK
    + "    return tally(1) == [1]\n",
    "re.compile at module level": "import re\nCODE = re.compile(r'^ORD-\\d{4}$', re.IGNORECASE)\n"
    + CHECK
    + "    return bool(CODE.match('ORD-0001'))\n",
    "decimal.Decimal and datetime values": "import decimal\n"
    + "from datetime import date, datetime, timedelta\n"
    + "CENT = decimal.Decimal('0.01')\nSTART = date(2025, 1, 1)\n"
    + "NOON = datetime.fromisoformat('2025-01-01T12:00:00')\nWEEK = timedelta(days=7)\n"
    + CHECK
    + "    paid = decimal.Decimal('1.005').quantize(CENT, rounding=decimal.ROUND_HALF_UP)\n"
    + "    return paid == decimal.Decimal('1.01') and START + WEEK > START\n",
    "a nested helper with its own set": CHECK
    + "    def distinct(items):\n        seen = set()\n        for item in items:\n"
    + "            seen.add(item)\n        return len(seen)\n"
    + "    return distinct(final_state) >= 0\n",
    "a wrapper the check defines": "import functools\n\n"
    + "def traced(f):\n    @functools.wraps(f)\n    def inner(*a):\n        return f(*a)\n"
    + "    return inner\n\n"
    + CHECK
    + "    return traced(len)([1]) == 1\n",
    "data a builtin makes at import (rebuilt by every evaluation)": "HOURS = tuple(range(8, 17))\n"
    + "ALLOWED = set(['open', 'closed'])\nZEROS = [0] * 3\nBOTH = {'a'} | {'b'}\n"
    + "LABEL = ', '.join(['a', 'b'])\nKEYS = dict.fromkeys(['a'], 0)\nBIG = float('inf')\n"
    + CHECK
    + "    return 9 in HOURS and 'open' in ALLOWED and len(ZEROS) == 3\n",
    "typing hints and annotations": "from __future__ import annotations\nimport typing\n"
    + "from typing import Any, Optional\n\n"
    + "def check(initial_state: dict[str, Any], final_state: Optional[dict]) -> bool:\n"
    + "    names: typing.List[str] = []\n    names.append('x')\n    return bool(names)\n",
    "parameters named final and initial": "def check(initial, final):\n"
    + "    return final.get('n') == initial.get('n')\n",
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_an_ordinary_check_passes(name: str) -> None:
    assert check_check_source(NEAR_MISSES[name]) == []


def test_the_guard_every_scenario_carries_passes() -> None:
    initial = {"orders": {"O1": {"status": "open", "tags": ["a"]}}, "next_order_number": 2}
    final = {
        "orders": {
            "O1": {"status": "closed", "tags": ["a", "b"]},
            "O2": {"status": "open", "tags": []},
        },
        "next_order_number": 3,
    }
    code = guard_check(initial, final).code
    assert "ALLOWED = [" in code and "CREATED = {" in code, "the guard keeps literal data"
    assert check_check_source(code) == []


def test_the_mutable_module_names_are_the_shared_objects_not_the_tools() -> None:
    assert {"ESCAPE_DCT", "BACKSLASH", "DefaultContext", "dispatch_table"} <= MUTABLE_MODULE_NAMES
    ordinary = {
        "loads",
        "dumps",
        "Decimal",
        "ROUND_HALF_UP",
        "datetime",
        "date",
        "timedelta",
        "Counter",
        "defaultdict",
        "deepcopy",
        "compile",
        "IGNORECASE",
        "Any",
        "List",
        "Optional",
        "annotations",
        "dataclass",
        "field",
        "MISSING",
        "chain",
        "ascii_letters",
        "inf",
    }
    assert not MUTABLE_MODULE_NAMES & ordinary
    assert not set(PROCESS_FUNCTIONS) & ordinary


def test_a_mutable_instance_is_a_container_or_holds_one() -> None:
    import decimal
    import re

    assert is_mutable_instance({}) and is_mutable_instance(decimal.Context())
    assert not any(
        is_mutable_instance(value)
        for value in (re.compile("x"), re.IGNORECASE, decimal.Decimal(1), (1, [2]), len, dict)
    )


def test_environment_modules_are_judged_as_before() -> None:
    source = _source("""
        import itertools

        TABLE = {"a": []}
        TICKS = itertools.count()


        class Shop:
            def __init__(self, seen=None):
                self.rows = {}

            def add(self, key: str) -> dict:
                TABLE["a"].append(key)
                return {"success": True, "data": key}
        """)
    assert check_module(source) == []
    scope = check_module("N = 0\n\n\ndef bump():\n    global N\n    N = 1\n")
    assert [v.rule for v in scope] == ["scope"]


def test_a_check_names_its_global_once_as_purity() -> None:
    found = check_check_source("N = 0\n" + CHECK + "    global N\n    return True\n")
    assert [(v.rule, v.line) for v in found] == [("global_state", 3)]
