"""The requests a blood bank's staff make, as the model writes them for each kind of scenario:
told the way a coordinator at the front desk talks, naming donors and hospitals rather than ids,
with the lookups an agent needs before it acts."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from envmill.tasks.offline_llm.model_style.blood_bank.plan import PLAN
from envmill.tasks.offline_llm.model_style.scene import (
    Scene,
    View,
    say_date,
    say_day,
    say_time,
    step,
)

RULES = PLAN["business_rules"]
BOOKING_RULE, STATUS_RULE, DISCARD_RULE = RULES[2], RULES[5], RULES[7]


def _donor(view: View, donor_id: str) -> dict[str, Any]:
    return view.get("donors", donor_id) or {}


def _scheduled(view: View, due: bool) -> list[dict[str, Any]]:
    now = view.now
    return [
        a
        for a in view.records("appointments")
        if a["status"] == "scheduled" and (datetime.fromisoformat(a["scheduled_at"]) <= now) == due
    ]


def _slot(view: View, days: int, hour: int) -> str:
    return (view.now + timedelta(days=days)).replace(hour=hour, minute=30).isoformat()


def _when(moment: str) -> str:
    return f"{say_date(moment)} at {say_time(moment)}"


def record_morning_donation(view: View) -> Scene | None:
    appt = view.pick(_scheduled(view, due=True))
    if appt is None:
        return None
    name = _donor(view, appt["donor_id"])["full_name"]
    steps = [
        step("search_donors_by_name", name=name),
        step("list_donor_appointments", donor_id=appt["donor_id"], status="scheduled"),
        step("record_donation", appointment_id=appt["appointment_id"], component="whole_blood"),
    ]
    return Scene(
        task=f"Morning! {name} just finished giving blood here at {appt['site']} "
        f"({say_time(appt['scheduled_at'])} slot). Could you log it as a standard "
        "whole-blood donation?",
        chat="One of this morning's donors just finished giving blood. Can you log the donation "
        "for me?",
        facts={"donor_name": name, "donation": "a standard whole-blood bag"},
        steps=steps,
    )


def cancel_future_appointment(view: View) -> Scene | None:
    appt = view.pick(_scheduled(view, due=False))
    if appt is None:
        return None
    name = _donor(view, appt["donor_id"])["full_name"]
    day = say_day(appt["scheduled_at"], view.today)
    return Scene(
        task=f"{name} phoned to say they can't make their donation on {day} at "
        f"{say_time(appt['scheduled_at'])}. Please cancel that appointment, nothing else.",
        chat="A donor called to cancel their upcoming donation. Can you sort it out?",
        facts={"donor_name": name},
        steps=[
            step("search_donors_by_name", name=name),
            step("list_donor_appointments", donor_id=appt["donor_id"], status="scheduled"),
            step("cancel_donation_slot", appointment_id=appt["appointment_id"]),
        ],
    )


def discard_expired_unit(view: View) -> Scene | None:
    today = view.today.isoformat()
    expired = [
        u
        for u in view.records("blood_units")
        if u["status"] == "available" and u["expires_on"] < today
    ]
    unit = view.pick(expired)
    if unit is None:
        return None
    kind = unit["component"].replace("_", " ")
    return Scene(
        task=f"During the shelf check I found unit {unit['unit_id']} ({unit['blood_type']} {kind}) "
        f"still marked available, but it expired on {say_date(unit['expires_on'])}. Please "
        "discard it as expired.",
        steps=[
            step("get_blood_unit", unit_id=unit["unit_id"]),
            step("discard_unit", unit_id=unit["unit_id"], reason="expired"),
        ],
    )


def cancel_upcoming_of_regular(view: View) -> Scene | None:
    """Filtered lookup: a donor with several appointments, one of them still ahead."""
    for appt in _scheduled(view, due=False):
        mine = [a for a in view.records("appointments") if a["donor_id"] == appt["donor_id"]]
        if len(mine) >= 2:
            name = _donor(view, appt["donor_id"])["full_name"]
            return Scene(
                task=f"{name} won't be able to come in after all. Please cancel their upcoming "
                "donation appointment (the one that's still scheduled) and leave their past "
                "visits alone.",
                chat="One of our regular donors can't make their next appointment. Please "
                "cancel it.",
                facts={"donor_name": name},
                steps=[
                    step("search_donors_by_name", name=name),
                    step("list_donor_appointments", donor_id=appt["donor_id"]),
                    step("cancel_donation_slot", appointment_id=appt["appointment_id"]),
                ],
            )
    return None


def allocate_urgent_of_hospital(view: View) -> Scene | None:
    """Filtered lookup: a hospital with two open requests, the urgent one picked."""
    open_ = [r for r in view.records("hospital_requests") if r["status"] == "open"]
    for request in open_:
        same = [r for r in open_ if r["hospital_name"] == request["hospital_name"]]
        if request["priority"] == "urgent" and len(same) >= 2:
            hospital = request["hospital_name"]
            return Scene(
                task=f"{hospital} has more than one request open with us. Please reserve units "
                "for their urgent one now; the routine one can wait.",
                steps=[
                    step("list_open_requests", hospital_name=hospital),
                    step("allocate_units", request_id=request["request_id"]),
                ],
            )
    return None


def register_and_book(view: View) -> Scene | None:
    """Created chain: a walk-in registers, then books into the donor id just made."""
    taken = {d["full_name"] for d in view.records("donors")}
    name = next(
        n for n in ("Noah Fischer", "Lina Haddad", "Ruth Mensah", "Ivo Sato") if n not in taken
    )
    slot = _slot(view, 6 + view.index % 5, 10)
    details = {
        "full_name": name,
        "blood_type": ("B+", "O-", "A+", "AB-")[view.index % 4],
        "date_of_birth": f"{1978 + view.index % 20}-05-18",
        "phone": f"+1-555-21{view.index % 90:02d}",
        "city": "Millbrook",
    }
    said = (
        f"{name}, blood type {details['blood_type']}, born {say_date(details['date_of_birth'])}, "
        f"phone {details['phone']}, living in Millbrook"
    )
    return Scene(
        task=f"We have a first-time donor at the desk: {said}. Please register them and book "
        f"them a whole-blood donation at University Hall on {_when(slot)}.",
        chat="There's a first-time donor at the desk who wants to sign up and book a donation. "
        "Can you set that up?",
        facts={**details, "site": "University Hall", "appointment": _when(slot)},
        steps=[
            step("register_new_donor", **details),
            step(
                "book_donation_slot",
                donor_id="$1.data.donor_id",
                scheduled_at=slot,
                site="University Hall",
            ),
        ],
    )
