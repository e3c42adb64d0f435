"""The blood bank's requests that hinge on something read first: a condition, a shared name, a
question, or a rule that forbids what is asked."""

from __future__ import annotations

from datetime import date

from envmill.tasks.offline_llm.model_style.blood_bank.tasks import (
    BOOKING_RULE,
    DISCARD_RULE,
    STATUS_RULE,
    _slot,
    _when,
)
from envmill.tasks.offline_llm.model_style.scene import Scene, View, say_date, step


def allocate_if_stock(view: View) -> Scene | None:
    """Conditional: reserve for an urgent request only if the shelf holds enough of its type."""
    for request in view.records("hospital_requests"):
        if request["status"] != "open" or request["component"] != "whole_blood":
            continue
        blood_type, needed = request["blood_type"], request["units_needed"]
        have = _usable(view, blood_type)
        if have < needed:
            continue
        hospital = request["hospital_name"]
        return Scene(
            task=f"Before I call {hospital} back: how many usable {blood_type} whole-blood units "
            f"do we have? If it's at least {needed}, reserve units for their "
            f"{request['priority']} whole-blood request; if not, just tell me the count.",
            steps=[
                step("get_inventory_summary", component="whole_blood"),
                step("list_open_requests", hospital_name=hospital),
                step("allocate_units", request_id=request["request_id"]),
            ],
            expected_answer={"type": "count", "value": have},
            reply=f"We have {have} usable {blood_type} whole-blood units, enough for the "
            f"{needed} they need, so I reserved units for their request {request['request_id']}.",
        )
    return None


def _usable(view: View, blood_type: str) -> int:
    today = view.today.isoformat()
    return sum(
        1
        for u in view.records("blood_units")
        if u["blood_type"] == blood_type
        and u["component"] == "whole_blood"
        and u["status"] == "available"
        and u["expires_on"] >= today
    )


def book_if_rested(view: View) -> Scene | None:
    """Conditional: book a donor for whole blood only if the 56 days have passed."""
    busy = {a["donor_id"] for a in view.records("appointments") if a["status"] == "scheduled"}
    slot = _slot(view, 4, 11)
    for donor in view.records("donors"):
        last = donor["last_donation_date"]
        if donor["status"] != "active" or donor["donor_id"] in busy or not last:
            continue
        if (date.fromisoformat(slot[:10]) - date.fromisoformat(last)).days < 56:
            continue
        name = donor["full_name"]
        return Scene(
            task=f"{name} would like to give whole blood again. If it's been at least 56 days "
            f"since their last donation, book them at Main Street Center on {_when(slot)}; "
            "otherwise just tell me when they last donated.",
            steps=[
                step("search_donors_by_name", name=name),
                step(
                    "book_donation_slot",
                    donor_id=donor["donor_id"],
                    scheduled_at=slot,
                    site="Main Street Center",
                ),
            ],
            expected_answer={"type": "date", "value": last},
            reply=f"{name} last donated on {say_date(last)}, more than 56 days ago, so I booked "
            f"them at Main Street Center on {_when(slot)}.",
        )
    return None


def book_the_right_namesake(view: View) -> Scene | None:
    """Disambiguation: two donors share a name; the city tells them apart."""
    donors = view.records("donors")
    for donor in donors:
        twins = [d for d in donors if d["full_name"] == donor["full_name"]]
        if len(twins) < 2 or donor["status"] != "active":
            continue
        slot = _slot(view, 5, 9)
        return Scene(
            task=f"Please book {donor['full_name']} for a whole-blood donation at Riverside "
            f"Mobile Unit on {_when(slot)}. It's the {donor['full_name']} who lives in "
            f"{donor['city']}; we have another donor with the same name.",
            chat="Could you book one of our donors in for a whole-blood donation?",
            facts={
                "donor_name": donor["full_name"],
                "donor_city": donor["city"],
                "site": "Riverside Mobile Unit",
                "appointment": _when(slot),
            },
            steps=[
                step("search_donors_by_name", name=donor["full_name"]),
                step(
                    "book_donation_slot",
                    donor_id=donor["donor_id"],
                    scheduled_at=slot,
                    site="Riverside Mobile Unit",
                ),
            ],
        )
    return None


def usable_stock(view: View) -> Scene | None:
    """Answer: a count from the inventory summary."""
    kinds = sorted({u["blood_type"] for u in view.records("blood_units")})
    blood_type = view.pick(kinds)
    if blood_type is None:
        return None
    have = _usable(view, blood_type)
    return Scene(
        task=f"Quick stock question: how many usable {blood_type} whole-blood units do we have on "
        "the shelf right now? Don't change anything.",
        steps=[step("get_inventory_summary", component="whole_blood")],
        expected_answer={"type": "count", "value": have},
        reply=f"We have {have} usable {blood_type} whole-blood units on the shelf.",
    )


def unit_expiry(view: View) -> Scene | None:
    """Answer: a unit's expiry date."""
    units = [u for u in view.records("blood_units") if u["status"] in ("available", "reserved")]
    unit = view.pick(units)
    if unit is None:
        return None
    return Scene(
        task=f"When does unit {unit['unit_id']} expire?",
        steps=[step("get_blood_unit", unit_id=unit["unit_id"])],
        expected_answer={"type": "date", "value": unit["expires_on"]},
        reply=f"Unit {unit['unit_id']} expires on {say_date(unit['expires_on'])}.",
    )


def last_donation(view: View) -> Scene | None:
    """Answer: when a donor last gave blood."""
    donors = [d for d in view.records("donors") if d["last_donation_date"]]
    names = [d["full_name"] for d in view.records("donors")]
    donors = [d for d in donors if names.count(d["full_name"]) == 1]
    donor = view.pick(donors)
    if donor is None:
        return None
    when = donor["last_donation_date"]
    return Scene(
        task=f"{donor['full_name']} is asking when they last gave blood with us. Can you check?",
        chat="A donor wants to know when they last gave blood with us.",
        facts={"donor_name": donor["full_name"]},
        steps=[step("search_donors_by_name", name=donor["full_name"])],
        expected_answer={"type": "date", "value": when},
        reply=f"{donor['full_name']} last gave blood on {say_date(when)}.",
    )


def book_deferred_donor(view: View) -> Scene | None:
    """Refusal: a deferred donor cannot book."""
    donor = view.pick([d for d in view.records("donors") if d["status"] == "deferred"])
    if donor is None:
        return None
    slot = _slot(view, 3, 14)
    name = donor["full_name"]
    return Scene(
        task=f"Please book {name} for a whole-blood donation at Main Street Center on "
        f"{_when(slot)}.",
        chat="Can you book a donor in for a whole-blood donation later this week?",
        facts={"donor_name": name, "site": "Main Street Center", "appointment": _when(slot)},
        steps=[step("search_donors_by_name", name=name)],
        refusal={
            "rules": [
                {
                    "rule_id": "active_donors_only",
                    "condition": "Only active donors may book; this donor's status is deferred.",
                    "triggers": ["deferred"],
                    "policy": BOOKING_RULE,
                }
            ],
            "action": "book",
            "targets": ["scheduled"],
        },
        reply=f"I can't book {name}: their donor record is deferred, and only active donors may "
        "book a donation appointment.",
    )


def cancel_completed_visit(view: View) -> Scene | None:
    """Refusal: a completed appointment cannot be cancelled."""
    done = [a for a in view.records("appointments") if a["status"] == "completed"]
    appt = view.pick(done)
    if appt is None:
        return None
    donor = view.get("donors", appt["donor_id"]) or {}
    day = say_date(appt["scheduled_at"])
    return Scene(
        task=f"Please cancel {donor.get('full_name')}'s donation appointment on {day}.",
        steps=[
            step("search_donors_by_name", name=donor.get("full_name")),
            step("list_donor_appointments", donor_id=appt["donor_id"]),
        ],
        refusal={
            "rules": [
                {
                    "rule_id": "only_scheduled_cancel",
                    "condition": "Only scheduled appointments can be cancelled; this one is "
                    "completed.",
                    "triggers": ["completed"],
                    "policy": STATUS_RULE,
                }
            ],
            "action": "cancel",
            "targets": ["cancelled"],
        },
        reply=f"I can't cancel that appointment: the {day} visit is already completed, and only "
        "scheduled appointments can be cancelled.",
    )


def discard_issued_unit(view: View) -> Scene | None:
    """Refusal: an issued unit is no longer on the shelf to discard."""
    unit = view.pick([u for u in view.records("blood_units") if u["status"] == "issued"])
    if unit is None:
        return None
    return Scene(
        task=f"Unit {unit['unit_id']} turned up on my audit list. Please discard it as damaged.",
        steps=[step("get_blood_unit", unit_id=unit["unit_id"])],
        refusal={
            "rules": [
                {
                    "rule_id": "discard_available_only",
                    "condition": "Only available units can be discarded; this unit is issued.",
                    "triggers": ["issued"],
                    "policy": DISCARD_RULE,
                }
            ],
            "action": "discard",
            "targets": ["discarded"],
        },
        reply=f"I can't discard unit {unit['unit_id']}: it has already been issued to a "
        "hospital, and only available units can be discarded.",
    )
