"""A status rule in the system message reads as a policy is written (round 25: "you can
reschedule an event only when the event's status is draft or on sale" read as recited)."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.rules import rule_text
from envmill.tasks.backends.procedural.codegen.scope import OpScope
from envmill.tasks.backends.procedural.plan import plan_environment


def _status_rules(domain: str) -> list[str]:
    plan = plan_environment(load_domain(domain), 0)
    return [
        rule_text(OpScope(plan, tool), pre) or ""
        for tool in plan.tools
        for pre in tool.op.preconditions
        if pre.kind in ("field_in", "field_not_in") and pre.rule is None
    ]


@pytest.mark.parametrize(
    ("domain", "rule"),
    [
        ("events", "An event can be rescheduled only while it is draft or on sale."),
        ("events", "Tickets can be released only while the event is on sale."),
        ("gym", "A class can be rescheduled only while it is scheduled."),
        ("hr_leave", "Leave days cannot be granted while the employee is terminated."),
        (
            "city_requests",
            "An inspection can be passed only while the service request is resolved.",
        ),
    ],
)
def test_a_status_rule_is_said_of_the_thing_acted_on(domain, rule):
    assert rule in _status_rules(domain)


def test_an_action_that_is_not_a_verb_and_its_object_keeps_the_plain_form():
    rules = _status_rules("banking")  # "transfer" names no object
    assert "You can transfer only while the account is active." in rules


def test_the_acts_on_ones_own_records_are_said_once_per_kind_of_record():
    """Round 49: eight lines of "Senders … only their own …" read as a flat list; merged, they
    name only the acts the tools check (a breaker: "act only on their own bookings" of a tool
    that checks no owner)."""
    from envmill.tasks.backends.procedural.codegen.tool_manifest import own_records_rules

    said = own_records_rules(
        [
            "Senders cancel only their own shipments.",
            "Senders pack parcels only into their own shipments.",
            "Senders redirect only their own shipments.",
            "Senders dispute only their own deliveries.",
            "Senders change only their own address.",  # a field, not a record: as it is
            "Members reserve only for themselves.",
            "Members renew only their own loans.",  # one rule keeps its verb
        ],
        {"shipment", "delivery", "loan", "parcel"},
    )
    assert said == [
        "Senders cancel and redirect only their own shipments.",
        "Senders pack parcels only into their own shipments.",
        "Senders dispute only their own deliveries.",
        "Members renew only their own loans.",
        "Senders change only their own address.",
        "Members reserve only for themselves.",
    ]
