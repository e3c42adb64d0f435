"""The procedural domain catalog: every spec validates, and broken specs fail with a SpecError that
names spec, entity and operation."""

from __future__ import annotations

import copy

import pytest

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain, parse_domain
from envmill.tasks.backends.procedural.spec.domain import SpecError

MINI = {
    "name": "mini",
    "title": "Mini library",
    "topic": "A tiny library used to test spec validation.",
    "introduction": "Members borrow books.",
    "class_names": ["MiniLibrary"],
    "limits": {"max_loans": [2, 3]},
    "entities": {
        "book": {
            "id_format": "BK-{n:03d}",
            "label": "title",
            "fields": {"title": "str", "stock": {"type": "int", "min": 0, "max": 50}},
            "operations": [
                {"name": "get_book", "kind": "get"},
                {"name": "find_books", "kind": "find"},
            ],
        },
        "loan": {
            "id_format": "LN-{n:04d}",
            "fields": {"book_id": "ref(book)", "returned_on": "date?"},
            "status": {
                "states": ["active", "returned"],
                "initial": "active",
                "transitions": [{"from": ["active"], "to": "returned"}],
            },
            "operations": [
                {"name": "get_loan", "kind": "get"},
                {
                    "name": "borrow_book",
                    "kind": "create",
                    "args": ["book_id"],
                    "preconditions": [
                        {"kind": "compare", "left": "book_id.stock", "op": ">=", "right": 1},
                    ],
                    "effects": [{"kind": "decrement", "path": "book_id.stock", "by": 1}],
                    "phrases": ["I'd like {book_id.label}.", "Lend me {book_id}."],
                },
                {
                    "name": "return_book",
                    "kind": "update",
                    "preconditions": [
                        {"kind": "field_in", "path": "target.status", "values": ["active"]},
                    ],
                    "effects": [
                        {"kind": "transition", "to": "returned"},
                        {"kind": "stamp", "path": "target.returned_on"},
                        {"kind": "increment", "path": "target.book_id.stock", "by": 1},
                    ],
                    "phrases": ["Returning {loan_id}.", "Please check in {loan_id}."],
                },
            ],
        },
    },
}


def mini() -> dict:
    return copy.deepcopy(MINI)


def operation(spec: dict, entity: str, name: str) -> dict:
    return next(op for op in spec["entities"][entity]["operations"] if op["name"] == name)


def test_catalog_has_twelve_distinct_domains():
    names = list_domains()
    assert len(names) >= 12
    titles = {load_domain(name).title for name in names}
    assert len(titles) == len(names)


@pytest.mark.parametrize("name", list_domains())
def test_catalog_spec_validates_with_both_tool_kinds(name):
    spec = load_domain(name)
    assert spec.name == name
    kinds = {op.is_query for op in spec.operations()}
    assert kinds == {True, False}
    assert len(spec.operations()) >= 15
    for entity in spec.entities.values():
        assert any(op.kind == "get" for op in entity.operations)


def test_validation_is_idempotent():
    spec = parse_domain(mini())
    again = parse_domain(spec.model_dump(by_alias=True))
    assert again == spec


def test_unknown_domain_is_a_spec_error():
    with pytest.raises(SpecError, match="spec 'nope'"):
        load_domain("nope")


def test_mini_spec_is_valid():
    spec = parse_domain(mini())
    loan_args = [arg.name for arg in spec.entities["loan"].operations[2].args]
    assert loan_args == ["loan_id"]


def test_effect_on_missing_field_names_spec_entity_and_operation():
    spec = mini()
    effects = operation(spec, "loan", "return_book")["effects"]
    effects[1]["path"] = "target.returned_at"
    with pytest.raises(SpecError) as err:
        parse_domain(spec)
    assert str(err.value) == (
        "spec 'mini', entity 'loan', operation 'return_book': "
        "effect sets missing field 'returned_at'"
    )


def test_status_value_outside_states_can_never_hold():
    spec = mini()
    operation(spec, "loan", "return_book")["preconditions"][0]["values"] = ["lent"]
    where = r"spec 'mini', entity 'loan', operation 'return_book'"
    with pytest.raises(SpecError, match=where + ".*never"):
        parse_domain(spec)


def test_numeric_bound_contradicting_field_min_can_never_hold():
    spec = mini()
    pre = operation(spec, "loan", "borrow_book")["preconditions"][0]
    pre.update(op="<", right=0)
    with pytest.raises(SpecError, match=r"operation 'borrow_book'.*can never hold"):
        parse_domain(spec)


def test_limit_bound_above_field_max_can_never_hold():
    spec = mini()
    spec["limits"]["huge"] = [60, 80]
    operation(spec, "loan", "borrow_book")["preconditions"][0]["right"] = "$huge"
    with pytest.raises(SpecError, match=r"entity 'loan', operation 'borrow_book'.*never hold"):
        parse_domain(spec)


def test_transition_from_unreachable_state_is_refused():
    spec = mini()
    machine = spec["entities"]["loan"]["status"]
    machine["states"].append("lost")
    machine["transitions"].append({"from": ["lost"], "to": "returned"})
    with pytest.raises(SpecError, match=r"spec 'mini', entity 'loan'.*unreachable"):
        parse_domain(spec)


def test_precondition_excluding_every_source_state_is_refused():
    spec = mini()
    machine = spec["entities"]["loan"]["status"]
    machine["states"].append("late")
    machine["transitions"].append({"from": ["active"], "to": "late"})
    operation(spec, "loan", "return_book")["preconditions"][0]["values"] = ["late"]
    with pytest.raises(SpecError, match=r"operation 'return_book'.*excludes every state"):
        parse_domain(spec)


def test_unknown_entity_reference_is_refused():
    spec = mini()
    operation(spec, "loan", "borrow_book")["args"] = [{"name": "book_id", "type": "ref(ghost)"}]
    with pytest.raises(SpecError) as err:
        parse_domain(spec)
    assert "spec 'mini', entity 'loan', operation 'borrow_book'" in str(err.value)
    assert "ghost" in str(err.value)


def test_unknown_entity_in_field_is_refused():
    spec = mini()
    spec["entities"]["loan"]["fields"]["member_id"] = "ref(member)"
    with pytest.raises(SpecError, match=r"spec 'mini', entity 'loan'.*unknown entity 'member'"):
        parse_domain(spec)


def test_duplicate_operation_name_is_refused():
    spec = mini()
    spec["entities"]["loan"]["operations"].append({"name": "get_book", "kind": "get"})
    with pytest.raises(SpecError, match=r"entity 'loan', operation 'get_book'.*duplicate"):
        parse_domain(spec)


def test_duplicate_alias_is_refused():
    spec = mini()
    operation(spec, "loan", "get_loan")["aliases"] = ["find_books"]
    with pytest.raises(SpecError, match="duplicate or invalid tool name 'find_books'"):
        parse_domain(spec)


def test_create_without_required_field_is_refused():
    spec = mini()
    spec["entities"]["loan"]["fields"]["due_on"] = "date"
    with pytest.raises(SpecError, match=r"operation 'borrow_book'.*field 'due_on'"):
        parse_domain(spec)


def test_unknown_limit_is_refused():
    spec = mini()
    operation(spec, "loan", "borrow_book")["effects"][0]["by"] = "$nope"
    with pytest.raises(SpecError, match=r"operation 'borrow_book': effect reads unknown limit"):
        parse_domain(spec)


def test_structural_error_names_spec_entity_and_operation():
    spec = mini()
    operation(spec, "loan", "return_book")["effects"][0]["kind"] = "teleport"
    with pytest.raises(SpecError) as err:
        parse_domain(spec)
    assert str(err.value).startswith("spec 'mini', entity 'loan', operation 'return_book':")
    assert "teleport" in str(err.value)


def test_phrase_placeholder_must_name_an_argument():
    spec = mini()
    operation(spec, "loan", "return_book")["phrases"][0] = "Returning {book_id}."
    with pytest.raises(SpecError, match=r"operation 'return_book'.*placeholder '\{book_id\}'"):
        parse_domain(spec)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"field": "returned_on", "high": "return_book", "low": "borrow_book"}, "not a number"),
        ({"field": "stock", "high": "return_book", "low": "weed_book"}, "not one of its"),
        ({"field": "stock", "high": "get_book", "low": "get_book"}, "not one of its changes"),
    ],
)
def test_a_policy_reads_a_number_of_its_record_and_chooses_between_two_of_its_operations(
    policy, message
):
    spec = mini()
    spec["entities"]["book"]["policies"] = [{**policy, "why": "Stock is short"}]
    with pytest.raises(SpecError, match=message):
        parse_domain(spec)


def test_every_declared_policy_names_its_entitys_own_operations():
    for name in list_domains():
        for entity in load_domain(name).entities.values():
            ops = {op.name for op in entity.operations}
            for policy in entity.policies:
                assert {policy.high, policy.low} <= ops and policy.why, (name, policy)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"high": "get_book"}, "not one of its changes"),  # a read decides nothing
        ({"least": float("inf")}, "least"),
        ({"least": -5}, "least"),
    ],
)
def test_a_policy_chooses_between_changes_with_a_finite_least(change, message):
    """Round 41's breaker: a read as a branch was silently never used; an infinite least
    crashed every conditional of the domain."""
    spec = mini()
    spec["entities"]["loan"]["fields"]["days"] = {"type": "int", "min": 0, "max": 60}
    loan = spec["entities"]["loan"]
    loan["operations"].append(
        {"name": "renew_loan", "kind": "update", "phrases": ["Renew {loan_id}."]}
    )
    policy = {"field": "days", "high": "return_book", "low": "renew_loan", "why": "Stock is short"}
    loan["policies"] = [{**policy, **change}]
    if change.get("high") == "get_book":
        loan["policies"][0]["high"] = "get_loan"
    with pytest.raises((SpecError, ValueError), match=message):
        parse_domain(spec)
