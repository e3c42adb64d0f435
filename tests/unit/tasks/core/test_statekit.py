"""State operations (DESIGN §3.2): canonical JSON, hash and diff, tested as properties."""

from __future__ import annotations

import copy
import json

from hypothesis import given
from hypothesis import strategies as st

from envmill.schemas.ids import canonical_json, content_id
from envmill.tasks.core.statekit import diff_states, state_hash

scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=5)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)
states = st.dictionaries(st.text(min_size=1, max_size=6), json_values, max_size=5)


def apply_diff(state, changes):
    """Rebuild the new state from the old one and a diff: the oracle for diff_states."""
    result = copy.deepcopy(state)
    for change in changes:
        path = change["path"]
        if not path:
            result = copy.deepcopy(change["new"])
            continue
        parent = result
        for key in path[:-1]:
            parent = parent[key]
        if change["op"] == "remove":
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(change["new"])
    return result


def test_canonical_json_is_the_contract_format():
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'
    assert len(content_id({"x": 1})) == 16


@given(states)
def test_hash_ignores_key_order(state):
    reordered = dict(reversed(list(state.items())))
    assert state_hash(state) == state_hash(reordered)


@given(states, states)
def test_hash_separates_different_states(a, b):
    if canonical_json(a) != canonical_json(b):
        assert state_hash(a) != state_hash(b)


@given(states)
def test_no_diff_against_itself(state):
    assert diff_states(state, copy.deepcopy(state)) == []


@given(states, states)
def test_diff_rebuilds_the_new_state(old, new):
    changes = diff_states(old, new)
    assert canonical_json(apply_diff(old, changes)) == canonical_json(new)


@given(states, states)
def test_diff_is_sorted_by_path(old, new):
    paths = [c["path"] for c in diff_states(old, new)]
    keyed = [tuple((0, p) if isinstance(p, int) else (1, p) for p in path) for path in paths]
    assert keyed == sorted(keyed)


def test_diff_shapes():
    old = {"books": {"B1": {"status": "in", "tags": [1, 2]}}, "log": [1], "gone": 1}
    new = {"books": {"B1": {"status": "out", "tags": [1, 3]}}, "log": [1, 2], "added": True}
    assert diff_states(old, new) == [
        {"path": ["added"], "op": "add", "old": None, "new": True},
        {"path": ["books", "B1", "status"], "op": "change", "old": "in", "new": "out"},
        {"path": ["books", "B1", "tags", 1], "op": "change", "old": 2, "new": 3},
        {"path": ["gone"], "op": "remove", "old": 1, "new": None},
        {"path": ["log"], "op": "change", "old": [1], "new": [1, 2]},
    ]


def test_int_to_float_is_a_change():
    assert diff_states({"x": 1}, {"x": 1.0}) == [
        {"path": ["x"], "op": "change", "old": 1, "new": 1.0}
    ]
    assert json.loads(canonical_json({"x": 1.0}))["x"] == 1.0
