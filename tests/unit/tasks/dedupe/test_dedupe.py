"""Near-duplicate detection: thresholds, environments, task masking and states (plain functions)."""

from __future__ import annotations

import ast
import math

import pytest

from envmill.schemas.dedupe import DedupeSettings, EnvironmentItem, StateItem, TaskItem
from envmill.schemas.settings import load_settings
from envmill.tasks.dedupe import find_duplicates, pairs_above
from envmill.tasks.dedupe.detect import Shingled
from envmill.tasks.dedupe.features import code_shingles, mask_task, state_items
from envmill.tasks.dedupe.minhash import hash_shingles, jaccard

RENAMES = [
    ("appointment", "booking"),
    ("Appointment", "Booking"),
    ("patient", "client"),
    ("Patient", "Client"),
    ("doctor", "vet"),
    ("Doctor", "Vet"),
    ("invoice", "bill"),
    ("Invoice", "Bill"),
    ("Clinic", "Surgery"),
]


def renamed(source: str) -> str:
    """Every entity, tool, field and message word renamed: structure untouched."""
    for old, new in RENAMES:
        source = source.replace(old, new)
    return source


def without_tools(source: str, names: set[str]) -> str:
    """The same module with some operations removed: another structure."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            node.body = [
                n for n in node.body if not (isinstance(n, ast.FunctionDef) and n.name in names)
            ]
    return ast.unparse(tree)


def shingled(item_id: str, values, new: bool = True) -> Shingled:
    return Shingled(item_id * 16, item_id, new, frozenset(values))


def noise(count: int) -> list[Shingled]:
    """Unrelated items, so that LSH has something to band."""
    return [shingled(f"{i:x}", range(1000 * (i + 1), 1000 * (i + 1) + 50)) for i in range(count)]


def test_a_pair_just_above_the_threshold_is_recorded_and_just_below_is_not():
    a, b = shingled("a", range(100)), shingled("b", range(10, 110))  # 90 / 110
    similarity = jaccard(a.hashes, b.hashes)
    items = [a, b, *noise(30)]
    (record,) = pairs_above(items, similarity - 1e-9, "task")
    assert (record.item_id, record.duplicate_of) == (b.item_id, a.item_id)
    assert record.similarity == pytest.approx(similarity, abs=1e-6)
    assert record.kind == "task" and record.measure == "task"
    assert pairs_above(items, similarity + 1e-9, "task") == []


@pytest.mark.parametrize("threshold", [0.02, 0.08, 0.5, 0.7, 0.8, 0.9, 0.95])
def test_banding_misses_no_pair_at_the_threshold(threshold):
    """200 pairs of sets whose Jaccard similarity is just at the threshold: LSH finds all."""
    size, items, pairs = 200, [], set()
    shared = math.ceil(threshold * size * 2 / (1 + threshold))
    for i in range(200):
        base = 10_000 * i
        a = shingled(f"a{i:03}", range(base, base + size))
        b = shingled(f"b{i:03}", range(base + size - shared, base + 2 * size - shared))
        assert threshold <= jaccard(a.hashes, b.hashes) < threshold + 0.01
        items += [a, b]
        pairs.add((b.item_id, a.item_id))
    found = {(r.item_id, r.duplicate_of) for r in pairs_above(items, threshold, "state")}
    assert found == pairs


def test_only_pairs_with_a_new_item_are_looked_for():
    old_a, old_b = shingled("a", range(50), new=False), shingled("b", range(50), new=False)
    assert pairs_above([old_a, old_b], 0.8, "state") == []
    new_c = shingled("c", range(50))
    records = pairs_above([old_a, old_b, new_c], 0.8, "state")
    assert {(r.item_id, r.duplicate_of) for r in records} == {
        (new_c.item_id, old_a.item_id)
    }  # c is the later member of a's class; a stands for b


def test_changing_the_setting_changes_the_outcome(monkeypatch):
    tasks = [
        TaskItem(item_id="1" * 16, order="1", task="please cancel the order and refund the card"),
        TaskItem(item_id="2" * 16, order="2", task="please cancel the order and refund the wallet"),
    ]
    monkeypatch.setenv("ENVMILL_DEDUPE__TASK", "0.5")
    loose = load_settings().dedupe
    monkeypatch.setenv("ENVMILL_DEDUPE__TASK", "0.9")
    strict = load_settings().dedupe
    assert [r.measure for r in find_duplicates(loose, tasks=tasks)] == ["task"]
    assert find_duplicates(strict, tasks=tasks) == []


def env_item(item_id: str, source: str, order: str) -> EnvironmentItem:
    return EnvironmentItem(item_id=item_id * 16, order=order, source=source, tools=[])


def test_a_rename_only_variant_is_flagged_and_a_structural_one_is_not(clinic_source):
    variant = renamed(clinic_source)
    assert variant != clinic_source and "patient" not in variant
    smaller = without_tools(
        clinic_source,
        {"reschedule_appointment", "check_in_patient", "complete_appointment", "pay_invoice"},
    )
    envs = [
        env_item("a", clinic_source, "1"),
        env_item("b", variant, "2"),
        env_item("c", smaller, "3"),
    ]
    records = find_duplicates(DedupeSettings(), environments=envs)
    code = [(r.item_id[0], r.duplicate_of[0], r.similarity) for r in records if r.measure == "code"]
    assert code == [("b", "a", 1.0)]
    original = hash_shingles(code_shingles(clinic_source))
    assert jaccard(original, hash_shingles(code_shingles(smaller))) < DedupeSettings().code


def test_docstrings_layout_and_literals_do_not_count_but_operations_do():
    one = 'def f(x):\n    """Doc."""\n    return x + 1\n'
    two = "def g(y):\n    '''Other doc.'''\n\n    return (y + 7)\n"
    three = "def f(x):\n    return x - 1\n"
    assert code_shingles(one) == code_shingles(two)
    assert code_shingles(one) != code_shingles(three)
    assert code_shingles("def broken(:\n") == set()


def test_tool_signatures_compare_names_and_types():
    tool = {
        "function": {
            "name": "get_order",
            "parameters": {
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        }
    }
    other = {"function": tool["function"] | {"name": "get_booking"}}
    envs = [
        EnvironmentItem(item_id="a" * 16, order="1", source="", tools=[tool]),
        EnvironmentItem(item_id="b" * 16, order="2", source="", tools=[tool]),
        EnvironmentItem(item_id="c" * 16, order="3", source="", tools=[other]),
    ]
    records = find_duplicates(DedupeSettings(), environments=envs)
    assert [(r.item_id[0], r.duplicate_of[0], r.measure) for r in records] == [
        ("b", "a", "signature")
    ]


def test_task_masking_hides_ids_numbers_dates_names_and_facts():
    masked = mask_task(
        "Hi! Please move Future of AI Talk (EV-0003) to 9 Feb 2025 at 17:00 and refund $12.50 "
        "to ann@example.com; my code is tulip.",
        facts={"code": "tulip"},
    )
    assert masked == (
        "hi please move <NAME> of <NAME> <NAME> <ID> to <DATE> at <DATE> and refund <ID> to "
        "<EMAIL> my code is <VALUE>"
    )
    a = "Please book 3 seats on flight SK513 for passenger Angela Taylor on 2025-03-02."
    b = "Please book 1 seats on flight QF12 for passenger Tom Baker on 2025-04-11."
    c = "Please cancel the booking BKG-0001 of passenger Angela Taylor and refund it."
    tasks = [
        TaskItem(item_id=i * 16, order=i, task=t) for i, t in zip("abc", (a, b, c), strict=True)
    ]
    records = find_duplicates(DedupeSettings(), tasks=tasks)
    assert [(r.item_id[0], r.duplicate_of[0], r.similarity) for r in records] == [("b", "a", 1.0)]


def state(prefix: str, status: str, balance: float) -> dict:
    return {
        "current_time": "2025-02-08T09:15:00",
        "customers": {
            f"{prefix}-{i:05}": {
                "customer_id": f"{prefix}-{i:05}",
                "status": status if i == 1 else "active",
                "tier": ["gold", "silver", "bronze"][i % 3],
                "balance": balance * i,
            }
            for i in range(1, 7)
        },
    }


def test_states_that_differ_only_in_ids_are_flagged_and_others_not():
    items = [
        StateItem(item_id="a" * 16, order="1", state=state("CS", "active", 10.0)),
        StateItem(item_id="b" * 16, order="2", state=state("CU", "active", 10.0)),  # ids only
        StateItem(item_id="c" * 16, order="3", state=state("CS", "closed", 99.5)),  # values
    ]
    records = find_duplicates(DedupeSettings(), states=items)
    assert [(r.item_id[0], r.duplicate_of[0], r.similarity) for r in records] == [("b", "a", 1.0)]
    leaves = state_items(state("CS", "active", 10.0))
    assert ".customers.*.customer_id=<ID>#1" in leaves and ".customers.*.tier=gold#2" in leaves
    a, c = (hash_shingles(state_items(i.state)) for i in (items[0], items[2]))
    assert 0 < jaccard(a, c) < DedupeSettings().state
