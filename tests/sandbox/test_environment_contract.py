"""The state contract of DESIGN §3.1 on modules written the way a capable model writes them
(issue 11): six careful ones are admitted, with the rules their docstrings state in the tool
descriptions; six with the usual slips are refused, each with line-numbered reasons a model can
act on in a repair turn (statically where the source shows it, by probe calls otherwise)."""

from __future__ import annotations

import json
import textwrap

import pytest

from envmill.tasks.envs import EnvironmentRejected, admit_environment
from envmill.tasks.envs.contract import check_state_contract
from envmill.tasks.envs.probes import ROUNDS
from tests.conftest import FIXTURES

MODEL_WRITTEN = FIXTURES / "envs" / "model_written"

# module -> {tool: text its description must carry (the docstring's rule section)}
CAREFUL = {
    "hotel_reservations": {
        "create_reservation": "Constraints: The stay starts today or later and lasts 1 to 14 "
        "nights. The room must be available (not under maintenance) and free for every night. "
        "VIP guests get 10% off the total.",
        "advance_clock": "Rules: Between 1 and 30 days at a time.",
    },
    "bank_ledger": {
        "open_account": "Rules: The owner's name must not be empty. The first deposit cannot "
        "be negative.",
        "transfer": "Constraints: Both accounts exist, differ and are not frozen.",
    },
    "library_circulation": {
        "checkout": "Constraints: The member is active and holds fewer than 3 open loans.",
        "return_copy": "Constraints: Only an active or overdue loan can be returned.",
    },
    "helpdesk_tickets": {
        "open_ticket": "Preconditions: The title has 3 to 120 characters.",
        "assign_ticket": "Closed tickets cannot be assigned.",
    },
    "warehouse_inventory": {
        "receive_stock": "Requirements: The quantity is between 1 and 1000.",
    },
    "lab_orders": {
        "order_test": "Order a lab test for a patient. Constraints: The test code looks like "
        "GLU01 and is a test the lab runs.",
    },
}

# module -> (stage, [(rule, code on the line it must name, words its message must hold)])
CLASS_STATE, CREATED = "class_state", "attribute_outside_init"
SLIPS = {
    "shopping_cart_class_state": (
        "contract",
        [
            (CLASS_STATE, "cart = self.carts.setdefault(customer_id", "self.carts in __init__"),
            (CLASS_STATE, 'self.catalog[line["sku"]]["stock"] -=', "self.catalog in __init__"),
            (CLASS_STATE, "ShoppingCartSystem.orders_placed += 1", "attributes are constants"),
            (CLASS_STATE, "self.order_history.append(", "self.order_history in __init__"),
        ],
    ),
    "ticketing_lazy_attributes": (
        "contract",
        [
            (CREATED, "self.audit_log = []", "create every attribute a tool writes in __init__"),
            (CREATED, "self.refund_count = 0", "self.refund_count = <empty value>"),
            (CREATED, "self.last_sold_ticket = ticket_id", 'self.last_sold_ticket: str = ""'),
        ],
    ),
    "expense_tracker_non_json": (
        "contract",
        [
            ("state_json", "self.categories = set()", "a list instead of a set"),
            ("state_json", '"amount": value,', "or integer cents instead of Decimal"),
            ("state_json", '"submitted_at": datetime.fromisoformat', "ISO 8601 string"),
            ("state_json", 'expense["approval"] = Approval(', "dataclasses.asdict"),
        ],
    ),
    "pharmacy_helper_values": (
        "probe",
        [
            ("state_json", '"copay": self._copay(', "instead of Decimal"),
            ("state_json", 'self.stats["average_copay"] = self._average(', "a finite number"),
        ],
    ),
    "restaurant_policy_slips": (
        "policy",
        [
            ("import", "import uuid", "counter in the state"),
            ("import", "reservation_id = str(uuid.uuid4())", "self.next_order_number"),
            ("import", "import random", "deterministically"),
            ("import", "table = random.choice(free)", "deterministically"),
            ("clock", "datetime.now()", "current_time"),
        ],
    ),
    "gym_hidden_counter": (
        "probe",
        [("hidden_state", "self.members[member_id] = {", "keep all state as JSON values")],
    ),
}


def source_of(name: str) -> str:
    return (MODEL_WRITTEN / f"{name}.py").read_text()


def line_of(source: str, code: str) -> int:
    found = [i for i, line in enumerate(source.splitlines(), 1) if code in line]
    assert len(found) == 1, (code, found)
    return found[0]


def refusal(source: str, sandbox) -> EnvironmentRejected:
    with pytest.raises(EnvironmentRejected) as caught:
        admit_environment(source, sandbox)
    return caught.value


def test_there_are_six_careful_and_six_slipped_modules():
    assert len(CAREFUL) == len(SLIPS) == 6
    assert {p.stem for p in MODEL_WRITTEN.glob("*.py")} == {*CAREFUL, *SLIPS}


@pytest.mark.parametrize("name", CAREFUL)
def test_careful_module_is_admitted_with_its_rules_in_the_descriptions(name, sandbox):
    env = admit_environment(source_of(name), sandbox)
    descriptions = {t.function.name: t.function.description for t in env.tools}
    for tool, text in CAREFUL[name].items():
        assert text in descriptions[tool], descriptions[tool]
    for description in descriptions.values():  # Args/Returns stay out of the description
        assert "Args:" not in description and "Returns:" not in description
    assert env.warnings == [] and "warnings" not in env.checked
    assert env.checked["state_contract"] == "passed"
    probes = env.checked["probes"]
    changes = sum(kind == "state_change" for kind in env.tool_kinds.values())
    assert probes["complete"] and probes["round_trips"] > 0
    assert probes["calls"] <= 2 * (ROUNDS * changes + len(env.tool_kinds) - changes)
    assert json.loads(json.dumps(env.default_state)) == env.default_state


@pytest.mark.parametrize("name", SLIPS)
def test_slip_is_refused_with_line_numbered_actionable_reasons(name, sandbox):
    source = source_of(name)
    stage, expected = SLIPS[name]
    rejected = refusal(source, sandbox)
    assert rejected.stage == stage, rejected
    found = [(v.rule, v.line, v.message) for v in rejected.violations]
    for rule, code, words in expected:
        line = line_of(source, code)
        matching = [m for r, n, m in found if (r, n) == (rule, line)]
        assert matching, (rule, line, code, found)
        assert any(words in m for m in matching), (words, matching)
    for violation in rejected.violations:
        text = str(violation)
        assert "\n" not in text and text.startswith(f"line {violation.line}: ")
    assert rejected.reason.startswith(str(rejected.violations[0]))


def test_probe_only_slips_pass_the_static_check():
    """The Decimal and NaN come out of helpers and the counter is reached through one: nothing
    at the line that stores them shows it, so only the probe calls can refuse these."""
    for name in ("pharmacy_helper_values", "gym_hidden_counter"):
        assert check_state_contract(source_of(name)).violations == []


def test_dataclasses_with_postponed_annotations_load(sandbox):
    source = textwrap.dedent('''\
        from __future__ import annotations

        from dataclasses import asdict, dataclass, field
        from typing import ClassVar


        @dataclass
        class Line:
            sku: str
            qty: int = 1
            tags: list[str] = field(default_factory=list)
            KIND: ClassVar[str] = "line"


        class Shop:
            def __init__(self) -> None:
                self.lines: list[dict] = [asdict(Line("a"))]

            def add(self, sku: str) -> dict:
                """Add a line.

                Args:
                    sku: The product.
                """
                self.lines.append(asdict(Line(sku)))
                return {"success": True, "message": "added"}
        ''')
    env = admit_environment(source, sandbox)
    assert env.default_state == {"lines": [{"sku": "a", "qty": 1, "tags": []}]}


@pytest.mark.parametrize(
    ("source", "line", "words"),
    [
        (
            "class E:\n    def __init__(self):\n        self.x = 0\n        self.y = self._f()\n\n"
            "    def _f(self):\n        return 1 / 0\n",
            7,
            "ZeroDivisionError",
        ),
        ("import math\n\nLIMIT = math.sqrt(-1)\n\nclass E:\n    def __init__(self):\n"
         "        self.x = 0\n", 3, "ValueError"),
    ],
)  # fmt: skip
def test_a_load_error_names_its_line(source, line, words, sandbox):
    rejected = refusal(source, sandbox)
    assert rejected.stage == "load"
    (violation,) = rejected.violations
    assert violation.line == line and words in violation.message
    assert f"line {line}: " in rejected.reason


def test_init_with_required_arguments_is_refused_at_its_line(sandbox):
    source = "class E:\n    def __init__(self, name):\n        self.name = name\n"
    rejected = refusal(source, sandbox)
    assert [(v.rule, v.line) for v in rejected.violations] == [("init_args", 2)]
    assert "(name)" in rejected.violations[0].message


def env_module(methods: str, init: str = "self.items = {}", head: str = "") -> str:
    body = textwrap.indent(textwrap.dedent(methods), "    ")
    init_body = textwrap.indent(textwrap.dedent(init), "        ")
    return f"{head}\n\nclass Env:\n    def __init__(self):\n{init_body}\n\n{body}"


def contract_rules(source: str) -> list[tuple[str, int]]:
    return [(v.rule, v.line) for v in check_state_contract(source).violations]


STATIC_VARIANTS = [
    # (rule, a class-level line, the body of a tool t(self, k), the code of the refused line)
    # class-level mutable defaults, changed through self, the class and cls
    ("class_state", "log = []", "self.log.append(k)", "self.log.append(k)"),
    ("class_state", "index = {}", "self.index[k] = 1", "self.index[k] = 1"),
    ("class_state", "index = {}", "del Env.index[k]", "del Env.index[k]"),
    ("class_state", "totals = {'n': 0}", "self.totals['n'] += 1", "self.totals['n'] += 1"),
    ("class_state", "rows = []", "for row in self.rows:\n    row[k] = 1", "row[k] = 1"),
    ("class_state", "count = 0", "Env.count += 1", "Env.count += 1"),
    ("class_state", "seen = set()", "self.seen.update([k])", "self.seen.update([k])"),
    # attributes a tool creates or removes
    ("attribute_outside_init", "", "setattr(self, 'cache', {})", "setattr(self, 'cache', {})"),
    ("attribute_outside_init", "count = 0", "self.count += 1", "self.count += 1"),
    ("attribute_outside_init", "", "self.a, self.b = 1, 2", "self.a, self.b = 1, 2"),
    ("attribute_deleted", "", "del self.items", "del self.items"),
    # values a saved state cannot hold
    ("state_json", "", "self.items[k] = (1, 2)", "self.items[k] = (1, 2)"),
    ("state_json", "", "self.items[k] = {'tags': {k}}", "self.items[k] = {'tags': {k}}"),
    ("state_json", "", "self.items.update({k: float('nan')})", "self.items.update"),
    ("state_json", "", "self.items[k] = {1: k}", "self.items[k] = {1: k}"),
    ("state_json", "", "self.items[k] = collections.Counter()", "collections.Counter()"),
    ("state_json", "", "x = self.items.get(k)\nx['p'] = decimal.Decimal(1)", "decimal.Decimal(1)"),
    ("state_json", "", "self.items[k] = [i for i in {k}] or {k}", "or {k}"),
]


@pytest.mark.parametrize(("rule", "cls_line", "body", "code"), STATIC_VARIANTS)
def test_static_variants_are_refused_at_their_line(rule, cls_line, body, code):
    method = f"def t(self, k: str) -> dict:\n{textwrap.indent(body, '    ')}\n    return {{}}\n"
    source = env_module(method, head="import collections\nimport decimal")
    if cls_line:
        source = source.replace("class Env:\n", f"class Env:\n    {cls_line}\n")
    assert (rule, line_of(source, code)) in contract_rules(source), contract_rules(source)


BLOOD_BANK = '''\
"""Blood units by type."""

from typing import Any


class BloodBank:
    """Units of blood, each of a known type."""

    {constant}
    SHELF_DAYS = (("whole_blood", 42), ("plasma", 365))

    def __init__(self) -> None:
        self.units: dict[str, dict[str, Any]] = {{}}
        self.next_unit_number: int = 1

    def add_unit(self, blood_type: str, product: str = "whole_blood") -> dict[str, Any]:
        """Add a unit of blood.

        Args:
            blood_type: one of the blood types the bank keeps.
            product: whole_blood or plasma.
        """
        if blood_type not in self.BLOOD_TYPES:
            return {{"success": False, "error": f"unknown blood type {{blood_type}}"}}
        unit_id = f"U-{{self.next_unit_number}}"
        self.next_unit_number += 1
        shelf = dict(self.SHELF_DAYS).get(product, 42)
        self.units[unit_id] = {{"unit_id": unit_id, "blood_type": blood_type, "days": shelf}}
        return {{"success": True, "message": "added", "data": {{"unit_id": unit_id}}}}

    def list_units(self) -> dict[str, Any]:
        """List the units."""
        return {{"success": True, "data": list(self.units.values())}}
'''


@pytest.mark.parametrize(
    "constant",
    [
        'BLOOD_TYPES = ("A+", "A-", "O+", "O-")',
        'BLOOD_TYPES = frozenset({"A+", "A-", "O+", "O-"})',
        'BLOOD_TYPES: frozenset[str] = frozenset(("A+", "A-", "O+", "O-"))',
    ],
)
def test_tuple_and_frozenset_class_constants_are_admitted_and_probed_to_success(constant, sandbox):
    """A list of blood types kept once as a tuple or frozenset (nested tuples too) passes every
    check, and the probes take their values from it, so the tool that checks a type against it
    succeeds (a state-changing call whose state round-trips) instead of only ever refusing."""
    env = admit_environment(BLOOD_BANK.format(constant=constant), sandbox)
    assert env.checked["state_contract"] == "passed"
    assert env.checked["probes"]["round_trips"] > 0, env.checked["probes"]


@pytest.mark.parametrize(
    ("rule", "cls_line", "body"),
    [
        ("attribute_outside_init", "TYPES = ('a',)", "self.TYPES += (k,)"),
        ("attribute_outside_init", "FINAL = frozenset({'a'})", "self.FINAL |= {k}"),
        ("class_state", "FINAL = frozenset({'a'})", "Env.FINAL = frozenset({k})"),
        ("class_state", "PAIRS = (('a', 1),)", "type(self).PAIRS += ((k, 2),)"),
    ],
)
def test_a_tuple_or_frozenset_constant_a_tool_rebinds_is_refused(rule, cls_line, body):
    """Immutable values still make constants only while no tool assigns a new one."""
    method = f"def t(self, k: str) -> dict:\n    {body}\n    return {{}}\n"
    source = env_module(method).replace("class Env:\n", f"class Env:\n    {cls_line}\n")
    assert (rule, line_of(source, body)) in contract_rules(source)


def test_a_classmethod_changing_a_class_attribute_is_refused():
    source = env_module("@classmethod\ndef t(cls, k: str) -> dict:\n    cls.seen.add(k)\n")
    source = source.replace("class Env:\n", "class Env:\n    seen = set()\n")
    assert ("class_state", line_of(source, "cls.seen.add(k)")) in contract_rules(source)


def test_ordinary_code_is_not_refused():
    source = env_module(
        """
        LIMITS = {"a": 1}

        def t(self, k: str, tags: list[str]) -> dict:
            order = self.items.setdefault(k, {"tags": []})
            order["tags"] = sorted(set(order["tags"]) | set(tags))
            order["total"] = float(round(decimal.Decimal("1.005"), 2))
            order["limit"] = self.LIMITS["a"]
            pairs = [(a, b) for a, b in zip(tags, tags)]
            order["n"] = len(pairs)
            self.reset()
            return {"success": True, "data": sum(x for x in [1, 2])}

        def reset(self) -> dict:
            self.history = []
            return {"success": True, "message": "reset"}
        """,
        init="self.items = {}\nself.reset()",
        head="import decimal",
    )
    assert check_state_contract(source).violations == []


def test_annotated_but_unassigned_attribute_is_a_warning_until_used(sandbox):
    unused = env_module(
        "def t(self) -> dict:\n    return {'success': True, 'data': len(self.items)}\n",
        init="self.items = {}\nself.note: str",
    )
    env = admit_environment(unused, sandbox)
    assert "note" not in env.state_schema["properties"]
    (warning,) = env.warnings
    assert warning.line == line_of(unused, "self.note: str")
    assert "annotated in __init__ but never assigned" in warning.message
    assert env.checked["warnings"] == [str(warning)]
    used = unused.replace("len(self.items)", "self.note")
    rejected = refusal(used, sandbox)
    assert [(v.rule, v.line) for v in rejected.violations] == [
        ("unassigned_attribute", line_of(used, "'data': self.note"))
    ]
    assert 'self.note: str = ""' in rejected.violations[0].message


def test_a_module_variable_a_tool_changes_is_refused():
    source = env_module(
        "def t(self, k: str) -> dict:\n    SEEN.append(k)\n    return {}\n", head="SEEN = []"
    )
    assert ("module_state", line_of(source, "SEEN.append(k)")) in contract_rules(source)


@pytest.mark.parametrize(
    "init",
    ["self.items = self.DEFAULTS", "self.items = Env.DEFAULTS", "self.items = type(self).DEFAULTS"],
)
def test_a_class_value_handed_to_the_instance_is_refused(init):
    source = env_module(
        "def t(self, k: str) -> dict:\n    self.items[k] = 1\n    return {}\n", init=init
    ).replace("class Env:\n", "class Env:\n    DEFAULTS: dict = {}\n")
    assert ("class_state", line_of(source, init)) in contract_rules(source)
    copied = source.replace(init, "self.items = dict(self.DEFAULTS)")
    assert contract_rules(copied) == []


def test_a_cache_that_tools_fill_is_caught_by_a_replay_in_a_fresh_host(sandbox):
    """The state is complete: a query answered from an ``lru_cache``'d list that a tool grows
    differs once the state is loaded into a fresh host."""
    source = env_module(
        """
        def add(self, name: str) -> dict:
            \"\"\"Add an item.

            Args:
                name: The item's name.
            \"\"\"
            _bucket().append(name)
            self.items[name] = {"name": name}
            return {"success": True, "message": "added"}

        def recent(self) -> dict:
            \"\"\"The names added lately.\"\"\"
            return {"success": True, "data": list(_bucket())}
        """,
        head="import functools\n\n\n@functools.cache\ndef _bucket():\n    return []",
    )
    rejected = refusal(source, sandbox)
    assert rejected.stage == "probe"
    (violation,) = rejected.violations
    assert violation.rule == "hidden_state" and "calling recent()" in violation.message


PROBE_VARIANTS = [
    # (what the module stores through a helper, the rule, the words of the message)
    ("return {'at': (1, 2), 'when': k}", None, None),  # a tuple behaves the same after a reload
    ("return frozenset([k])", "state_json", "a list instead of a frozenset"),
    ("return float('inf')", "state_json", "None or a finite number"),
    ("return {1: k}", "state_json", "string keys"),
]


@pytest.mark.parametrize(("helper", "rule", "words"), PROBE_VARIANTS)
def test_values_from_helpers_are_caught_by_the_probes(helper, rule, words, sandbox):
    source = env_module(
        f"""
        def _make(self, k):
            {helper}

        def put(self, k: str) -> dict:
            \"\"\"Store an item.

            Args:
                k: The key.
            \"\"\"
            self.items[k] = self._make(k)
            return {{"success": True, "message": "stored"}}
        """
    )
    if rule is None:
        admit_environment(source, sandbox)
        return
    rejected = refusal(source, sandbox)
    assert rejected.stage == "probe"
    (violation,) = rejected.violations
    assert (violation.rule, violation.line) == (rule, line_of(source, "self.items[k] = self"))
    assert words in violation.message and "calling put(k=" in violation.message


def test_an_attribute_created_out_of_sight_is_caught_by_the_probes(sandbox):
    source = env_module(
        """
        def _state(self):
            return self

        def put(self, k: str) -> dict:
            \"\"\"Store an item.

            Args:
                k: The key.
            \"\"\"
            self._state().last = k
            return {"success": True, "message": "stored"}
        """
    )
    rejected = refusal(source, sandbox)
    assert rejected.stage == "probe"
    assert [v.rule for v in rejected.violations] == ["attribute_outside_init"]
    assert "created the attribute last" in rejected.violations[0].message


def test_a_tool_that_does_not_return_a_dict_is_refused(sandbox):
    source = env_module(
        """
        def count(self) -> dict:
            \"\"\"How many items.\"\"\"
            return len(self.items)
        """
    )
    rejected = refusal(source, sandbox)
    assert rejected.stage == "probe"
    (violation,) = rejected.violations
    assert violation.rule == "tool_result" and "returned int, not a dict" in violation.message


def test_probes_reach_tools_that_need_a_record_through_made_up_records(sandbox):
    """No tool creates an account, and the default state has none: only a made-up record (from
    the TypedDict of the collection, its id shaped like the documented example) gets the probe
    past "not found" to the line that stores a Decimal."""
    source = textwrap.dedent('''\
        from decimal import Decimal
        from typing import TypedDict


        class Account(TypedDict):
            account_id: str
            status: str
            balance: float
            interest: float


        class Bank:
            def __init__(self) -> None:
                self.accounts: dict[str, Account] = {}

            def _rate(self, balance: float):
                return Decimal(str(balance)) * Decimal("0.05")

            def accrue(self, account_id: str) -> dict:
                """Accrue interest on an open account.

                Args:
                    account_id: The account (e.g. ACC-0001).
                """
                account = self.accounts.get(account_id)
                if account is None or account["status"] != "open":
                    return {"success": False, "error": "no open account"}
                account["interest"] = self._rate(account["balance"])
                return {"success": True, "message": "accrued"}
        ''')
    rejected = refusal(source, sandbox)
    (violation,) = rejected.violations
    assert (violation.rule, violation.line) == (
        "state_json",
        line_of(source, 'account["interest"] = self._rate('),
    )
    assert "accrue(account_id='ACC-9001')" in violation.message


def test_a_tool_that_never_finishes_is_refused(sandbox):
    source = env_module(
        """
        def spin(self) -> dict:
            \"\"\"Count forever.\"\"\"
            while True:
                self.items["n"] = 1
        """
    )
    rejected = refusal(source, sandbox)
    assert [(v.rule, v.line) for v in rejected.violations] == [
        ("tool_stopped", line_of(source, "def spin"))
    ]
    assert "calling spin() was stopped (" in rejected.violations[0].message
