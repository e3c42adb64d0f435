"""Timelines (issue 29, item 6): a record's times keep to its parent's and its own status's.

The spec says them with invariants (``compare`` through a ref, ``hours`` of slack, ``count``
``at_least``); the state fill keeps them; tools refuse an action before its time (``in_past``
with an ``hours`` allowance). Every catalog domain declares the timelines its entities have.
"""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

import pytest

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain, parse_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.spec.domain import DomainSpec, EntitySpec, SpecError
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.backends.procedural.state.invariants import check_invariants

TIMES = ("date", "datetime")

CLINIC = {
    "name": "tiny_clinic",
    "title": "Tiny clinic",
    "topic": "A tiny clinic used to test timelines.",
    "introduction": "Patients visit; visits are billed once they started.",
    "class_names": ["TinyClinic"],
    "entities": {
        "visit": {
            "id_format": "VS-{n}",
            "count": [6, 8],
            "fields": {"starts_at": {"type": "datetime", "days": [-3, 3],
                                     "by_status": {"done": [-3, -1], "arrived": [0, 0]}}},
            "status": {
                "states": ["booked", "arrived", "done"],
                "initial": "booked",
                "transitions": [{"from": ["booked"], "to": "arrived"},
                                {"from": ["arrived"], "to": "done"}],
            },
            "invariants": [
                {"kind": "compare", "when": {"status": ["arrived"]}, "left": "starts_at",
                 "op": "<=", "right": "now", "hours": 1,
                 "rule": "A visit is checked in at most an hour early."},
                {"kind": "count", "when": {"status": ["done"]}, "entity": "charge",
                 "via": "visit_id", "at_least": 1, "rule": "A finished visit is billed."},
            ],
            "operations": [
                {"name": "get_visit", "kind": "get"},
                {"name": "check_in", "kind": "update",
                 "preconditions": [{"kind": "in_past", "value": "target.starts_at", "hours": 1,
                                    "rule": "Check-in opens an hour before the visit."}],
                 "effects": [{"kind": "transition", "to": "arrived"}],
                 "phrases": ["I'm here for {visit_id}.", "Check in {visit_id}."]},
            ],
        },
        "charge": {
            "id_format": "CH-{n}",
            "count": [8, 10],
            "fields": {
                "visit_id": "ref(visit)",
                "posted_at": {"type": "datetime", "days": [-6, 0]},
            },
            "invariants": [
                {"kind": "compare", "left": "posted_at", "op": "<=", "right": "now"},
                {"kind": "implies", "then": {"visit_id.status": ["done"]},
                 "rule": "Only finished visits are billed."},
                {"kind": "compare", "left": "posted_at", "op": ">=",
                 "right": "visit_id.starts_at", "rule": "A visit is billed after it starts."},
            ],
            "operations": [{"name": "get_charge", "kind": "get"}],
        },
    },
}  # fmt: skip

STATE = {
    "visits": {
        "VS-1": {"visit_id": "VS-1", "starts_at": "2025-03-10T10:30:00", "status": "arrived"},
        "VS-2": {"visit_id": "VS-2", "starts_at": "2025-03-09T09:00:00", "status": "done"},
    },
    "charges": {
        "CH-1": {"charge_id": "CH-1", "visit_id": "VS-2", "posted_at": "2025-03-09T11:00:00"},
    },
    "current_time": "2025-03-10T10:00:00",
}


@pytest.fixture(scope="module")
def clinic() -> DomainSpec:
    return parse_domain(copy.deepcopy(CLINIC))


def _violations(spec: DomainSpec, change: dict[str, Any]) -> list[str]:
    """The violations of ``STATE`` with ``{"charges.CH-1.posted_at": value}`` applied."""
    state = copy.deepcopy(STATE)
    for path, value in change.items():
        attr, record, field = path.split(".")
        state[attr][record][field] = value
    return check_invariants(spec, state)


def test_a_consistent_timeline_passes(clinic):
    assert check_invariants(clinic, copy.deepcopy(STATE)) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"charges.CH-1.posted_at": "2025-03-09T08:00:00"}, "A visit is billed after it starts."),
        ({"visits.VS-2.status": "booked"}, "Only finished visits are billed."),
        ({"visits.VS-1.starts_at": "2025-03-10T11:30:00"}, "at most an hour early"),
        ({"charges.CH-1.visit_id": "VS-1"}, "A finished visit is billed."),
    ],
)
def test_each_broken_timeline_is_reported(clinic, change, expected):
    problems = _violations(clinic, change)
    assert any(expected in problem for problem in problems), problems


def test_hours_of_slack_show_in_the_violation(clinic):
    problems = _violations(clinic, {"visits.VS-1.starts_at": "2025-03-10T11:30:00"})
    assert "now + 1 hours ('2025-03-10T11:00:00')" in problems[0], problems


@pytest.mark.parametrize(
    ("entity", "rule", "message"),
    [
        ("charge", {"kind": "compare", "left": "posted_at", "op": ">=", "right": "now",
                    "hours": 2, "when": {"visit_id.status": ["done"]}}, None),
        ("visit", {"kind": "count", "entity": "charge", "via": "visit_id", "at_least": 1,
                   "at_most": 3}, "needs exactly one of field, exactly, at_least and at_most"),
    ],
)  # fmt: skip
def test_spec_checks_the_timeline_vocabulary(entity, rule, message):
    spec = copy.deepcopy(CLINIC)
    spec["entities"][entity]["invariants"].append(rule)
    if message is None:
        parse_domain(spec)
        return
    with pytest.raises(SpecError, match=message):
        parse_domain(spec)


def test_spec_refuses_hours_on_in_future():
    spec = copy.deepcopy(CLINIC)
    pre = spec["entities"]["visit"]["operations"][1]["preconditions"][0]
    pre["kind"] = "in_future"
    with pytest.raises(SpecError, match="in_future takes no hours"):
        parse_domain(spec)


def _tiny_env(clinic: DomainSpec, now: str, starts_at: str) -> Any:
    """The compiled tiny clinic, run in-process, with one booked visit at ``starts_at``."""
    compiled = compile_environment(clinic, 0)
    namespace: dict[str, Any] = {}
    exec(compile(compiled.source, "tiny_clinic", "exec"), namespace)  # noqa: S102 - our own code
    env = namespace[compiled.class_name]()
    visit = {"visit_id": "VS-1", "starts_at": starts_at, "status": "booked"}
    for key, value in {"visits": {"VS-1": visit}, "charges": {}, "current_time": now}.items():
        setattr(env, key, value)
    return env


@pytest.mark.parametrize(
    ("starts_at", "refused"),
    [("2025-03-10T13:00:00", True), ("2025-03-10T10:45:00", False), ("2025-03-09T10:00:00", False)],
)
def test_check_in_is_refused_before_its_window(clinic, starts_at, refused):
    env = _tiny_env(clinic, "2025-03-10T10:00:00", starts_at)
    result = env.check_in("VS-1")
    if refused:
        assert "error" in result and "Too early" in result["error"], result
        assert env.visits["VS-1"]["status"] == "booked"
    else:
        assert "error" not in result, result
        assert env.visits["VS-1"]["status"] == "arrived"


def test_fill_keeps_the_timeline(clinic):
    """Charges move to finished visits and after their start; visits checked in early stay
    within the hour; every filled state is consistent and still has charges."""
    for seed in range(10):
        state = build_initial_state(compile_environment(clinic, 0), seed)
        assert check_invariants(clinic, state) == [], seed
        assert state["charges"], seed


# -- the catalog ---------------------------------------------------------------------------------

# a child's time and its parent's that no rule orders, with the reason
UNORDERED = {
    ("manufacturing", "batch", "work_order_id"): "a batch may run past its order's due date",
    ("streaming", "rental", "account_id"): "a rental has nothing to do with the renewal day",
    ("tax_filing", "tax_payment", "tax_return_id"): "estimated tax is paid before filing",
}


def timed_children(spec: DomainSpec) -> list[tuple[EntitySpec, str]]:
    """(child, ref field) pairs where the child and the parent it names both have a time."""
    pairs = []
    for entity in spec.entities.values():
        if not any(field.type in TIMES for field in entity.fields.values()):
            continue
        for name, field in entity.fields.items():
            parent = spec.entities.get(field.entity or "") if field.type == "ref" else None
            if parent and any(f.type in TIMES for f in parent.fields.values()):
                pairs.append((entity, name))
    return pairs


def declares_timeline(entity: EntitySpec, ref: str) -> bool:
    """A ``compare`` between one of the child's times and a time read through ``ref``."""
    own = {name for name, field in entity.fields.items() if field.type in TIMES}
    for inv in entity.invariants:
        if inv.kind != "compare":
            continue
        sides = {str(inv.left), str(inv.right)}
        if sides & own and any(side.startswith(f"{ref}.") for side in sides):
            return True
    return False


@pytest.mark.parametrize("domain", list_domains())
def test_every_timed_child_declares_its_timeline(domain):
    """A domain whose child entity has a date/datetime and names a parent that has one states
    how the two are ordered (or is listed above with the reason it does not)."""
    spec = load_domain(domain)
    missing = [
        f"{entity.name}.{ref}"
        for entity, ref in timed_children(spec)
        if not declares_timeline(entity, ref) and (domain, entity.name, ref) not in UNORDERED
    ]
    assert missing == [], f"{domain}: no timeline declared for {missing}"


def test_exemptions_name_real_pairs():
    for domain, entity, ref in UNORDERED:
        pairs = {(e.name, r) for e, r in timed_children(load_domain(domain))}
        assert (entity, ref) in pairs, (domain, entity, ref)


def timeline_rules(spec: DomainSpec) -> set[str]:
    """The rule words of every compare through a ref: the timelines of the domain."""
    return {
        inv.rule or ""
        for entity in spec.entities.values()
        for inv in entity.invariants
        if inv.kind == "compare" and any("." in str(side) for side in (inv.left, inv.right))
    }


@pytest.mark.parametrize("domain", list_domains())
def test_filled_states_have_no_timeline_violation(domain):
    """Measured over compile and fill seeds: no filled state breaks a declared timeline."""
    spec = load_domain(domain)
    rules = timeline_rules(spec)
    broken = [
        problem
        for compile_seed in (0, 1)
        for fill_seed in range(10)
        for problem in check_invariants(
            spec, build_initial_state(compile_environment(spec, compile_seed), fill_seed)
        )
        if any(rule and rule in problem for rule in rules)
    ]
    assert broken == []


# -- times filled `after` another, events in order, whole-month terms ------------------------------

CLAIMS = {
    "name": "tiny_claims",
    "title": "Tiny claims",
    "topic": "A tiny insurer used to test implied timelines.",
    "introduction": "Claims are filed after an incident inside the policy's term.",
    "class_names": ["TinyClaims"],
    "entities": {
        "policy": {
            "id_format": "P-{n}",
            "count": [2, 3],
            "fields": {"starts_on": {"type": "date", "days": [-20, -10]},
                       "ends_on": {"type": "date", "after": "starts_on", "months": [1, 1]}},
            "operations": [{"name": "get_policy", "kind": "get"}],
        },
        "claim": {
            "id_format": "C-{n}",
            "count": [8, 10],
            "fields": {
                "policy_id": "ref(policy)",
                "incident_on": {"type": "date", "days": [-60, -1]},
                "filed_at": {"type": "datetime", "after": "incident_on", "days": [0, 1]},
            },
            "invariants": [
                {"kind": "compare", "left": "incident_on", "op": ">=",
                 "right": "policy_id.starts_on", "rule": "Incidents fall in the policy's term."},
            ],
            "status": {"states": ["filed", "closed"], "initial": "filed",
                       "transitions": [{"from": ["filed"], "to": "closed"}]},
            "operations": [
                {"name": "get_claim", "kind": "get"},
                {"name": "close_claim", "kind": "update",
                 "effects": [{"kind": "transition", "to": "closed"}],
                 "phrases": ["Close claim {claim_id}.", "Please close {claim_id}."]},
            ],
        },
    },
}  # fmt: skip


def test_a_time_filled_after_another_is_never_before_it():
    """`after` is a timeline: a state with a claim filed before its incident is reported."""
    spec = parse_domain(copy.deepcopy(CLAIMS))
    state = {
        "policies": {"P-1": {"policy_id": "P-1", "starts_on": "2025-03-01", "ends_on": None}},
        "claims": {"C-1": {"claim_id": "C-1", "policy_id": "P-1", "incident_on": "2025-03-20",
                           "filed_at": "2025-03-15T10:00:00", "status": "filed"}},
        "current_time": "2025-03-25T09:00:00",
    }  # fmt: skip
    problems = check_invariants(spec, state)
    assert any("filed at is not before the incident on" in p for p in problems), problems
    state["claims"]["C-1"]["filed_at"] = "2025-03-20T10:00:00"
    assert check_invariants(spec, state) == []


def test_fill_keeps_after_when_a_repair_moves_the_earlier_time():
    """An incident redrawn into the policy's term takes the filing along (the rater's claim
    filed on 06-15 for an incident on 06-30)."""
    spec = parse_domain(copy.deepcopy(CLAIMS))
    for seed in range(10):
        state = build_initial_state(compile_environment(spec, 0), seed)
        assert check_invariants(spec, state) == [], seed
        for claim in state["claims"].values():
            assert claim["filed_at"][:10] >= claim["incident_on"], (seed, claim)


def test_months_end_on_the_day_the_term_started():
    spec = parse_domain(copy.deepcopy(CLAIMS))
    for seed in range(5):
        state = build_initial_state(compile_environment(spec, 0), seed)
        for policy in state["policies"].values():
            start, end = policy["starts_on"], policy["ends_on"]
            assert end[8:] == start[8:] or end[8:] >= "28", policy
            assert int(end[5:7]) % 12 == int(start[5:7]) % 12 + 1 - 12 * (start[5:7] == "12")


@pytest.mark.parametrize(
    ("start", "months", "end"),
    [
        ("2025-01-31", 1, "2025-02-28"),
        ("2025-11-13", 1, "2025-12-13"),
        ("2025-12-05", 2, "2026-02-05"),
    ],
)
def test_plus_months(start, months, end):
    from datetime import date

    from envmill.tasks.backends.procedural.state.values import plus_months

    assert plus_months(date.fromisoformat(start), months).isoformat() == end


def test_spec_refuses_months_without_after():
    spec = copy.deepcopy(CLAIMS)
    del spec["entities"]["policy"]["fields"]["ends_on"]["after"]
    with pytest.raises(SpecError, match="whole months"):
        parse_domain(spec)


def _shipping_events(state: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Per shipment, its tracking events as (time, event), in time order."""
    events: dict[str, list[tuple[str, str]]] = {}
    for row in state["tracking_events"].values():
        events.setdefault(row["shipment_id"], []).append((row["occurred_at"], row["event"]))
    return {shipment: sorted(rows) for shipment, rows in events.items()}


def test_order_reports_events_out_of_order_and_twice():
    spec = load_domain("parcel_shipping")
    shipment = {
        "shipment_id": "S-1",
        "sender_id": None,
        "status": "delivered",
        "booked_at": "2025-11-20T09:00:00",
        "delivered_at": "2025-11-29T10:00:00",
    }
    events = {
        "T-1": ("booked", "2025-11-30T09:00:00"),
        "T-2": ("delivered", "2025-11-29T10:00:00"),
        "T-3": ("delivered", "2025-11-29T11:00:00"),
    }
    state = {
        "shipments": {"S-1": shipment},
        "tracking_events": {
            key: {"tracking_event_id": key, "shipment_id": "S-1", "event": event, "occurred_at": at}
            for key, (event, at) in events.items()
        },
        "current_time": "2025-12-01T09:00:00",
    }  # fmt: skip
    problems = check_invariants(spec, state)
    assert any("is before the event 'booked'" in p for p in problems), problems
    state["tracking_events"]["T-1"]["occurred_at"] = "2025-11-20T09:00:00"
    problems = check_invariants(spec, state)
    assert [p for p in problems if "T-3" in p and "'delivered' happened already" in p], problems
    assert not [p for p in problems if "T-1" in p or "T-2" in p], problems


def test_filled_tracking_events_follow_their_shipment():
    """Each shipment's events happen once, in the order of the statuses, and only those its
    status has reached (no 'returned' then 'delivered' then 'booked')."""
    spec = load_domain("parcel_shipping")
    order = spec.entities["tracking_event"].fields["event"].values
    reached = {"delivered": {"delivered", "disputed"}, "returned": {"returned"}}
    for seed in range(8):
        state = build_initial_state(compile_environment(spec, 0), seed)
        for shipment, rows in _shipping_events(state).items():
            events = [event for _, event in rows]
            assert events == sorted(events, key=order.index), (seed, shipment, rows)
            assert len(set(events)) == len(events), (seed, shipment, rows)
            status = state["shipments"][shipment]["status"]
            for event in events:
                assert status in reached.get(event, {status}), (seed, shipment, status, event)


@pytest.mark.parametrize(
    ("domain", "entity", "field"),
    [("hr_leave", "leave_request", "start_date"), ("courses", "course", "starts_on")],
)
def test_leave_and_courses_start_on_working_days(domain, entity, field):
    """Round 53: leave "starts 2025-12-20, a Saturday" (counted in working days) and a course
    that starts on a Sunday. ``working_day`` moves the date away from today, so a future start
    stays in the future."""
    spec = load_domain(domain)
    assert spec.entities[entity].fields[field].working_day
    compiled = compile_environment(spec, 0)
    days = []
    for seed in range(12):
        state = build_initial_state(compiled, seed)
        table = state[compiled.entity_attrs[entity]]
        days += [date.fromisoformat(r[field]) for r in table.values()]
        assert check_invariants(spec, state) == []
    assert len(days) > 40 and all(day.weekday() < 5 for day in days), days


def test_a_policy_applies_only_to_the_records_it_names():
    """Round 53: sick leave declined "for want of cover"; the policy now reads
    ``when: {leave_type: [vacation, personal]}``, and one naming no field fails on load."""
    from envmill.tasks.backends.procedural.scenarios.conditions import _applies

    policy = load_domain("hr_leave").entities["leave_request"].policies[0]
    assert _applies(policy, {"leave_type": "vacation", "days": 6})
    assert not _applies(policy, {"leave_type": "sick", "days": 6})
    raw = load_domain("hr_leave").model_dump(mode="json", exclude_none=True)
    for when, named in (
        ({"leave_kind": ["sick"]}, "leave_kind"),
        ({"leave_type": ["Vacation"]}, "Vacation"),  # misspelt: it switched the policy off
        ({"leave_type": []}, "leave_type"),
        ({"days": ["3"]}, "days"),  # a number field: no values to name
    ):
        raw["entities"]["leave_request"]["policies"][0]["when"] = when
        with pytest.raises(SpecError, match=named):
            parse_domain(raw)
