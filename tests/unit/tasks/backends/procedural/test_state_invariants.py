"""Domain invariants: the spec refuses malformed ones, the checker finds every kind of violation,
and the state filler never produces one (the compiled tools keep them along sampled chains:
tests/sandbox/test_invariants_along_chains.py)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain, parse_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.spec.domain import SpecError
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.backends.procedural.state.invariants import check_invariants

DOMAINS = list_domains()
COMPILE_SEEDS = (0, 1, 2, 3)  # the compiler drops optional entities and tools by seed
FILL_SEEDS = range(5)

MINI = {
    "name": "mini",
    "title": "Mini library",
    "topic": "A tiny library used to test invariants.",
    "introduction": "Shelves hold books; members borrow them.",
    "class_names": ["MiniLibrary"],
    "entities": {
        "shelf": {
            "id_format": "SH-{n}",
            "plural": "shelves",
            "fields": {"books": "int"},
            "status": {
                "states": ["open", "closed"],
                "initial": "open",
                "transitions": [{"from": ["open"], "to": "closed"}],
            },
            "invariants": [
                {"kind": "count", "field": "books", "entity": "book", "via": "shelf_id"},
                {"kind": "count", "when": {"status": ["closed"]}, "entity": "book",
                 "via": "shelf_id", "exactly": 0, "rule": "A closed shelf is empty."},
            ],
            "operations": [{"name": "get_shelf", "kind": "get"}],
        },
        "book": {
            "id_format": "BK-{n}",
            "fields": {
                "shelf_id": "ref(shelf)",
                "copies_total": {"type": "int", "min": 0},
                "copies_available": {"type": "int", "min": 0},
            },
            "invariants": [
                {"kind": "count", "field": "copies_available", "total": "copies_total",
                 "entity": "loan", "via": "book_id", "where": {"status": ["active"]}},
                {"kind": "count", "entity": "loan", "via": "book_id",
                 "where": {"status": ["active"]}, "at_most": 2},
            ],
            "operations": [{"name": "get_book", "kind": "get"}],
        },
        "loan": {
            "id_format": "LN-{n}",
            "fields": {
                "book_id": "ref(book)",
                "direction": "enum(out, back)",
                "borrowed_on": "date",
                "returned_on": "date?",
                "fine": {"type": "float", "min": 0},
            },
            "status": {
                "states": ["active", "returned"],
                "initial": "active",
                "transitions": [{"from": ["active"], "to": "returned"}],
            },
            "invariants": [
                {"kind": "filled", "field": "returned_on", "when": {"status": ["returned"]}},
                {"kind": "implies", "when": {"status": ["active"]},
                 "then": {"returned_on": [None], "direction": ["out"]}},
                {"kind": "implies", "when": {"book_id.shelf_id.status": ["closed"]},
                 "then": {"status": ["returned"]}},
                {"kind": "compare", "left": "borrowed_on", "op": "<=", "right": "now"},
                {"kind": "compare", "left": "returned_on", "op": ">=", "right": "borrowed_on"},
                {"kind": "compare", "when": {"status": ["active"]}, "left": "fine", "op": "==",
                 "right": 0},
            ],
            "operations": [
                {"name": "get_loan", "kind": "get"},
                {"name": "return_book", "kind": "update",
                 "effects": [{"kind": "transition", "to": "returned"},
                             {"kind": "stamp", "path": "target.returned_on"}],
                 "phrases": ["Returning {loan_id}.", "Please check in {loan_id}."]},
            ],
        },
    },
}  # fmt: skip

GOOD_STATE = {
    "shelves": {
        "SH-1": {"shelf_id": "SH-1", "books": 2, "status": "open"},
        "SH-2": {"shelf_id": "SH-2", "books": 0, "status": "closed"},
    },
    "books": {
        "BK-1": {"book_id": "BK-1", "shelf_id": "SH-1", "copies_total": 3, "copies_available": 2},
        "BK-2": {"book_id": "BK-2", "shelf_id": "SH-1", "copies_total": 1, "copies_available": 1},
    },
    "loans": {
        "LN-1": {"loan_id": "LN-1", "book_id": "BK-1", "direction": "out", "status": "active",
                 "borrowed_on": "2025-03-01", "returned_on": None, "fine": 0.0},
        "LN-2": {"loan_id": "LN-2", "book_id": "BK-2", "direction": "back", "status": "returned",
                 "borrowed_on": "2025-02-01", "returned_on": "2025-02-20", "fine": 1.5},
    },
    "current_time": "2025-03-10T09:00:00",
}  # fmt: skip


def _set(path: str, value) -> Callable[[dict], None]:
    """A mutation setting ``attr.record.field`` of the state."""
    attr, record, field = path.split(".")
    return lambda state: state[attr][record].__setitem__(field, value)


def _add_active_loans(state: dict) -> None:
    """Two more active loans of BK-1 (three in all, with copies to match)."""
    for n in (3, 4):
        state["loans"][f"LN-{n}"] = {**state["loans"]["LN-1"], "loan_id": f"LN-{n}"}
    state["books"]["BK-1"]["copies_total"] = 5


BROKEN = {
    "count field": (_set("shelves.SH-1.books", 3), "shelf SH-1: books is 3, but 2 books refer"),
    "count total": (
        _set("books.BK-1.copies_available", 3),
        "copies_total (3) minus 1 loans with status active is 2",
    ),
    "count exactly": (
        _set("books.BK-2.shelf_id", "SH-2"),
        "shelf SH-2: 1 books refer to it; expected exactly 0 (A closed shelf is empty.)",
    ),
    "count at_most": (
        _add_active_loans,
        "3 loans with status active refer to it; expected at most 2",
    ),
    "compare now": (
        _set("loans.LN-1.borrowed_on", "2025-03-11"),
        "borrowed_on ('2025-03-11') must be at or before now ('2025-03-10T09:00:00')",
    ),
    "compare fields": (
        _set("loans.LN-2.returned_on", "2025-01-31"),
        "returned_on ('2025-01-31') must be at or after borrowed_on ('2025-02-01')",
    ),
    "compare number": (
        _set("loans.LN-1.fine", 2.0),
        "fine (2.0) must be equal to 0 when status is 'active'",
    ),
    "implies own field": (
        _set("loans.LN-1.direction", "back"),
        "direction is 'back', expected 'out' as status is 'active'",
    ),
    "implies null": (_set("loans.LN-1.returned_on", "2025-03-05"), "returned_on is '2025-03-05'"),
    "implies path": (
        _set("shelves.SH-1.status", "closed"),
        "loan LN-1: status is 'active', expected 'returned' as book_id.shelf_id.status is 'closed'",
    ),
    "filled": (
        _set("loans.LN-2.returned_on", None),
        "loan LN-2: returned_on is empty although status is 'returned'",
    ),
    "ref": (_set("loans.LN-2.book_id", "BK-9"), "loan LN-2: book_id names 'BK-9', which is not"),
}


@pytest.fixture(scope="module")
def mini_spec():
    return parse_domain(copy.deepcopy(MINI))


def test_consistent_state_has_no_violations(mini_spec):
    assert check_invariants(mini_spec, copy.deepcopy(GOOD_STATE)) == []


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_checker_finds_each_kind_of_violation(mini_spec, case):
    mutate, expected = BROKEN[case]
    state = copy.deepcopy(GOOD_STATE)
    mutate(state)
    problems = check_invariants(mini_spec, state)
    assert any(expected in problem for problem in problems), problems


def test_entities_missing_from_the_state_are_skipped(mini_spec):
    state = copy.deepcopy(GOOD_STATE)
    del state["loans"]  # as if the compiler had dropped an optional entity
    assert check_invariants(mini_spec, state) == []


def _mini_with(entity: str, invariant: dict) -> dict:
    spec = copy.deepcopy(MINI)
    spec["entities"][entity]["invariants"].append(invariant)
    return spec


MALFORMED = [
    (
        "loan",
        {"kind": "compare", "left": "borrowed_on", "op": "<", "right": 5},
        "spec 'mini', entity 'loan', invariant 7 (compare): compares a time with a number",
    ),
    (
        "loan",
        {"kind": "compare", "left": "direction", "op": "<", "right": "now"},
        "'direction' is neither a number nor a time (it is enum)",
    ),
    (
        "loan",
        {"kind": "implies", "when": {"status": ["lost"]}, "then": {"returned_on": [None]}},
        "invariant 7 (implies): when path 'status' names 'lost', which is not one of active, "
        "returned",
    ),
    (
        "loan",
        {"kind": "implies", "when": {"book_id.colour": ["red"]}, "then": {"status": ["active"]}},
        "when path 'book_id.colour': missing field 'colour'",
    ),
    (
        "loan",
        {"kind": "implies", "when": {"status": ["active"]}, "then": {"borrowed_on": [None]}},
        "then path 'borrowed_on' allows null, but the field is not nullable",
    ),
    ("loan", {"kind": "filled", "field": "borrowed_on"}, "field 'borrowed_on' is not nullable"),
    (
        "loan",
        {"kind": "count", "entity": "book", "via": "shelf_id", "exactly": 1},
        "field 'shelf_id' of 'book' is not a ref to 'loan'",
    ),
    (
        "book",
        {"kind": "count", "entity": "loan", "via": "book_id", "field": "copies_total",
         "at_most": 1},
        "invariant 3 (count): needs exactly one of field, exactly, at_least and at_most",
    ),
    (
        "book",
        {"kind": "count", "entity": "loan", "via": "book_id", "total": "copies_total",
         "exactly": 1},
        "total and sum_of are only used with field",
    ),
    (
        "book",
        {"kind": "count", "entity": "loan", "via": "book_id", "field": "copies_total",
         "sum_of": "borrowed_on"},
        "sum_of 'borrowed_on' is not a number field of 'loan'",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("entity", "invariant", "message"), MALFORMED)
def test_spec_refuses_malformed_invariant(entity, invariant, message):
    with pytest.raises(SpecError, match="^spec 'mini', entity") as err:
        parse_domain(_mini_with(entity, invariant))
    assert message in str(err.value)


def test_spec_refuses_unknown_invariant_kind():
    with pytest.raises(SpecError) as err:
        parse_domain(_mini_with("loan", {"kind": "sum", "field": "fine"}))
    assert str(err.value).startswith("spec 'mini', entity 'loan': entities.loan.invariants.6")


def test_every_domain_declares_invariants():
    for domain in DOMAINS:
        spec = load_domain(domain)
        assert any(entity.invariants for entity in spec.entities.values()), domain


@pytest.mark.parametrize("domain", DOMAINS)
def test_filled_states_satisfy_every_invariant(domain):
    spec = load_domain(domain)
    for compile_seed in COMPILE_SEEDS:
        compiled = compile_environment(spec, compile_seed)
        for fill_seed in FILL_SEEDS:
            state = build_initial_state(compiled, fill_seed)
            assert check_invariants(spec, state) == [], (compile_seed, fill_seed)
        assert build_initial_state(compiled, 0) == build_initial_state(compiled, 0)


def _break_book(state: dict) -> bool:
    book = next(iter(state["books"].values()))
    book["copies_available"] += 1
    return True


def _break_trip(state: dict) -> bool:
    ongoing = [t for t in state["trips"].values() if t["status"] == "ongoing"]
    for trip in ongoing[:1]:
        trip["started_at"] = state["current_time"][:10] + "T23:45:00"
    return bool(ongoing)


def _break_movement(state: dict) -> bool:
    movement = next(iter(state["stock_movements"].values()))
    movement["reason"], movement["direction"] = "receipt", "out"
    return True


def _break_course(state: dict) -> bool:
    courses = [c for c in state["courses"].values() if c["status"] != "cancelled"]
    for course in courses[:1]:
        course["enrolled"] += 1
    return bool(courses)


def _break_pay_run(state: dict) -> bool:
    """A run with no payslips beside a gross of $13,869.96 (rated 2.5 of 5 in review)."""
    empty = [r for r in state["pay_runs"].values() if r["payslips"] == 0]
    for run in empty[:1]:
        run["total_gross"] = 13869.96
    return bool(empty)


REVIEWED = {
    "payroll": (_break_pay_run, "total_gross"),
    "library": (_break_book, "copies_available"),
    "fleet": (_break_trip, "started_at"),
    "warehouse": (_break_movement, "direction"),
    "courses": (_break_course, "enrolled"),
}


@pytest.mark.parametrize("domain", sorted(REVIEWED))
def test_catalog_invariants_catch_the_reviewed_defects(domain):
    """Each defect found in review, put back by hand into a filled state, is reported."""
    spec, (breaks, field) = load_domain(domain), REVIEWED[domain]
    compiled = compile_environment(spec, 0)
    states = (build_initial_state(compiled, seed) for seed in range(20))
    state = next(state for state in states if breaks(state))
    problems = check_invariants(spec, state)
    assert len(problems) == 1 and field in problems[0], problems


# times that may lie years back: when someone was born, joined, was hired, a thing was built
LONG_AGO = ("birth", "hired", "opened", "joined", "since", "built", "year", "founded", "installed")


@pytest.mark.parametrize("domain", DOMAINS)
def test_filled_times_stay_near_the_clock_unless_they_may_lie_years_back(domain):
    """A checked-in appointment bounded by the patient's birth and now once started in 1994:
    a repair redraws a time near now, not anywhere between its two bounds."""
    from datetime import datetime, timedelta

    compiled = compile_environment(load_domain(domain), 0)
    for fill_seed in range(4):
        state = build_initial_state(compiled, fill_seed)
        now = datetime.fromisoformat(state["current_time"])
        for records in state.values():
            for record in records.values() if isinstance(records, dict) else []:
                for field, value in record.items() if isinstance(record, dict) else []:
                    if any(word in field for word in LONG_AGO) or not isinstance(value, str):
                        continue
                    if len(value) >= 10 and value[4] == "-" and value[:4].isdigit():
                        moment = datetime.fromisoformat(value[:10])
                        assert moment > now - timedelta(days=3 * 365), (field, value, record)
