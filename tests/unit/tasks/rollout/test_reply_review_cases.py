"""Cases a reviewer who did not write it found in the replies said by a record's making, the
refusals' offers and the someone-else's-record filter (each failed before its fix)."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.scenarios.refusals import _not_theirs_to_ask, next_step
from envmill.tasks.core.instructions import past_participle
from envmill.tasks.rollout.closing import closing_message


@pytest.mark.parametrize(
    ("clause", "done"),
    [
        ("offer a seat", "offered a seat"),  # 'fer' is not always stressed last
        ("limit a card", "limited a card"),  # nor 'mit'
        ("split a bill", "split a bill"),
        ("run a payroll", "run a payroll"),
        ("rerun a report", "rerun a report"),
        ("override a price", "overridden a price"),
        ("prepay an order", "prepaid an order"),
        ("broadcast an alert", "broadcast an alert"),
        ("bid on a lot", "bid on a lot"),
        ("find a slot", "found a slot"),
        ("equip a van", "equipped a van"),
        ("format a label", "formatted a label"),
        ("refuel a vehicle", "refuelled a vehicle"),  # British, as "cancelled"
        ("panic", "panicked"),
        ("check-in a guest", "checked in a guest"),  # a hyphenated phrasal verb
        ("top-up a card", "topped up a card"),
    ],
)
def test_participles(clause, done):
    assert past_participle(clause) == done


def test_the_made_record_keeps_a_status_the_making_does_not_say():
    """A ticket sold onto a waiting list is not 'sold': the old template said the status."""
    t = {"event_id": "EV-1", "quantity": 1, "total": 42.0, "status": "waitlisted"}
    said = closing_message(
        {"tickets": {}}, {"tickets": {"TK-9": t}}, "s1", made_by={"TK-9": "sold 1 ticket"}
    )
    assert "waitlist" in said, said


def test_a_new_id_inside_another_id_is_still_said():
    t = {"event_id": "EV-1", "quantity": 1, "total": 2.0}
    done = {"TK-1": "exchanged ticket TK-12 for Jazz Night"}
    said = closing_message({"tickets": {}}, {"tickets": {"TK-1": t}}, "s1", made_by=done)
    assert said.count("TK-1") > said.count("TK-12"), said


def test_a_huge_price_is_not_read_out():
    t = {"event_id": "EV-1", "quantity": 1, "total": 1e300}
    said = closing_message(
        {"tickets": {}}, {"tickets": {"TK-9": t}}, "s1", made_by={"TK-9": "sold 1 ticket"}
    )
    assert len(said) < 200, said


@pytest.mark.parametrize("role", ["support", "reception", "agent"])  # streaming, vet, telecom
def test_a_role_refusal_offers_no_role(role):
    """Once "A support can do it for you." and "An agent can …" (the AI agent itself); then, in
    rating round 23, "A member of staff can do it for you." to a passenger asking to delay a
    flight, read as a promise: a role refusal offers no one."""
    error = f"Permission denied: the signed-in role 'member' may not use x; only {role} may"
    assert next_step(error) is None


def test_an_offer_says_its_unit():
    assert next_step("nights (30) must be at most the limit 14") != (
        "I can do it for up to 14 instead, if that helps."
    )


def test_an_offer_never_rounds_to_nothing():
    offer = next_step("amount (9) must be at most the balance of account AC-1 (0.004)")
    assert offer is None or "$0.00" not in offer, offer


def test_no_role_refusal_for_an_inspection_of_another_residents_request():
    """From the default corpus: resident RES-00009 asked to fail INS-00001, whose request
    SR-000003 is RES-00004's; the reply offered 'A dispatcher can do it for you.'"""
    compiled = compile_environment(load_domain("city_requests"), 0)
    manifest = next(
        t
        for t in compiled.tools
        if "inspection_id" in [a.name for a in t.args] and t.kind == "state_change"
    )
    state = {
        "acting_role": "resident",
        "acting_id": "RES-00009",
        compiled.entity_attrs["inspection"]: {
            "INS-00001": {
                "inspection_id": "INS-00001",
                "service_request_id": "SR-000003",
                "status": "scheduled",
            }
        },
        compiled.entity_attrs["service_request"]: {
            "SR-000003": {
                "service_request_id": "SR-000003",
                "resident_id": "RES-00004",
                "status": "in_progress",
            }
        },
    }
    error = (
        f"Permission denied: the signed-in role 'resident' may not use {manifest.tool}; "
        "only dispatcher may"
    )
    asked = {"inspection_id": "INS-00001"}
    assert _not_theirs_to_ask(compiled, manifest, asked, error, state)
    theirs = {**state, "acting_id": "RES-00004"}  # their own request's inspection: they may ask
    assert not _not_theirs_to_ask(compiled, manifest, asked, error, theirs)
    # round 23, a passenger delaying a flight: a record no client owns is staff's business
    no_one = {**state, compiled.entity_attrs["service_request"]: {}}
    assert _not_theirs_to_ask(compiled, manifest, asked, error, no_one)
    # a member of staff trying what another role may is a premise a person has
    staff = {**state, "acting_role": "dispatcher", "acting_id": "DSP-01"}
    assert not _not_theirs_to_ask(compiled, manifest, asked, error, staff)


def _reference_closing(tool, description, record, rid, coll, args):
    from envmill.schemas.scenario import CertificationReport, ScenarioSpec
    from envmill.tasks.rollout.reference import reference_messages

    initial = {coll: {}}
    spec = ScenarioSpec(
        env_id="e",
        task="Do it.",
        initial_state=initial,
        reference_solution=[{"tool": tool, "arguments": args}],
        checks=[],
    )
    report = CertificationReport(
        scenario_id="cd" * 8,
        gates=[],
        final_state={coll: {rid: record}},
        step_results=[{"success": True, "data": {**record, f"{coll[:-1]}_id": rid}}],
    )
    return reference_messages(spec, report, {tool: "state_change"}, {tool: description})[-1][
        "content"
    ]


def test_a_tool_name_fallback_is_no_sentence_and_drops_the_terms():
    """From run2 (property_leases): "I've created lease; the reference is LSE-00007." where the
    old template said "Lease LSE-00007 is active until 21 Feb 2026, with a monthly rent of
    $1,650.00"."""
    lease = {
        "tenant_id": "TEN-8",
        "unit_id": "UNIT-4",
        "monthly_rent": 1650.0,
        "ends_on": "2026-02-21",
        "status": "active",
    }
    desc = (
        "Let a vacant unit to a tenant at its advertised rent for the standard term starting "
        "on a future date."
    )
    said = _reference_closing(
        "create_lease", desc, lease, "LSE-7", "leases", {"tenant_id": "TEN-8", "unit_id": "UNIT-4"}
    )
    assert "created lease;" not in said and "1,650.00" in said, said


def test_an_amount_claimed_is_not_what_it_came_to():
    claim = {"policy_id": "POL-1", "amount_claimed": 900.0, "status": "filed"}
    said = closing_message(
        {"claims": {}},
        {"claims": {"CLM-9": claim}},
        "s1",
        made_by={"CLM-9": "filed a claim on policy POL-1"},
    )
    assert "came to $900.00" not in said and "total is $900.00" not in said, said
