"""How the model tests the blood bank's tools: one positive call per tool on records of the state
shown that suit it (a donor free to book, a morning slot that is due, an expired unit, an open
request the shelf can fill), each state change on a record no other call touches, and a
registration first where the state has no donor to book."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from envmill.tasks.offline_llm.model_style.probing import Shown, call

NEGATIVES = {
    "list_units_by_blood_type": ({"blood_type": "C+"}, "Fails: C+ is not a blood type."),
    "list_open_requests": ({"priority": "critical"}, "Fails: critical is not a priority."),
    "get_inventory_summary": ({"component": "red_cells"}, "Fails: red_cells is no component."),
    "discard_unit": ({"unit_id": "BU-9999", "reason": "expired"}, "Fails: no such unit."),
}


def probes(state: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    shown = Shown(state)
    donor = shown.first("donors")
    unit = shown.first("blood_units")
    request = shown.first("hospital_requests")
    units = {
        "get_donor_record": [
            call("get_donor_record", f"Returns {donor['full_name']}.", donor_id=donor["donor_id"])
        ],
        "search_donors_by_name": [
            call(
                "search_donors_by_name",
                f"Finds {donor['full_name']} by surname, ignoring case.",
                name=donor["full_name"].split()[-1].lower(),
            )
        ],
        "list_donor_appointments": _appointments_of(shown),
        "register_new_donor": [_registration(donor.get("city") or "Riverton")],
        "get_blood_unit": [call("get_blood_unit", "Returns the unit.", unit_id=unit["unit_id"])],
        "list_units_by_blood_type": [
            call(
                "list_units_by_blood_type",
                f"Lists the available {unit['blood_type']} units, soonest-expiring first.",
                blood_type=unit["blood_type"],
                status="available",
            )
        ],
        "get_inventory_summary": [
            call("get_inventory_summary", "Counts usable whole blood.", component="whole_blood")
        ],
        "get_hospital_request": [
            call("get_hospital_request", "Returns the request.", request_id=request["request_id"])
        ],
        "list_open_requests": [call("list_open_requests", "Lists the open requests.")],
    }
    return units | _appointment_changes(shown) | _inventory_changes(shown)


def _appointments_of(shown: Shown) -> list[dict[str, Any]]:
    appt = shown.first("appointments")
    return [
        call(
            "list_donor_appointments",
            "Lists the donor's appointments, earliest first.",
            donor_id=appt["donor_id"],
        )
    ]


def _registration(city: str) -> dict[str, Any]:
    return call(
        "register_new_donor",
        "Registers a new adult donor as active with no donations.",
        full_name="Jordan Ellis",
        blood_type="O+",
        date_of_birth="1990-04-12",
        phone="+1-555-0199",
        city=city,
    )


def _appointment_changes(shown: Shown) -> dict[str, list[dict[str, Any]]]:
    now = datetime.fromisoformat(shown.state["current_time"])
    scheduled = [a for a in shown.records("appointments") if a["status"] == "scheduled"]
    due = [a for a in scheduled if datetime.fromisoformat(a["scheduled_at"]) <= now]
    ahead = [a for a in scheduled if datetime.fromisoformat(a["scheduled_at"]) > now]
    slot = (now + timedelta(days=7)).replace(hour=10, minute=0, second=0).isoformat()
    found: dict[str, list[dict[str, Any]]] = {"book_donation_slot": _booking(shown, slot)}
    if ahead:
        found["cancel_donation_slot"] = [
            call(
                "cancel_donation_slot",
                "Cancels a future scheduled appointment.",
                appointment_id=ahead[0]["appointment_id"],
            )
        ]
    if due:
        found["record_donation"] = [
            call(
                "record_donation",
                "Records whole blood for a morning slot that is due and adds a new unit.",
                appointment_id=due[0]["appointment_id"],
                component="whole_blood",
            )
        ]
    if len(due) > 1:
        found["mark_donor_no_show"] = [
            call(
                "mark_donor_no_show",
                "Marks the second morning slot, which has passed, as a no-show.",
                appointment_id=due[1]["appointment_id"],
            )
        ]
    return found


def _booking(shown: Shown, slot: str) -> list[dict[str, Any]]:
    """A booking for an active donor with nothing scheduled and a long enough gap, else for a
    donor registered first."""
    busy = {a["donor_id"] for a in shown.records("appointments") if a["status"] == "scheduled"}
    day = date.fromisoformat(slot[:10])
    for donor in shown.records("donors"):
        last = donor.get("last_donation_date")
        rested = not last or (day - date.fromisoformat(last)).days >= 56
        if donor["status"] == "active" and donor["donor_id"] not in busy and rested:
            expectation = f"Books {donor['full_name']}, who is eligible, a week from now."
            return [
                call(
                    "book_donation_slot",
                    expectation,
                    donor_id=donor["donor_id"],
                    scheduled_at=slot,
                    site="Main Street Center",
                )
            ]
    first = _registration("Riverton")
    booking = call(
        "book_donation_slot",
        "Books the donor just registered.",
        donor_id="@1.data.donor_id",
        scheduled_at=slot,
        site="Main Street Center",
    )
    return [first, booking]


def _inventory_changes(shown: Shown) -> dict[str, list[dict[str, Any]]]:
    today = datetime.fromisoformat(shown.state["current_time"]).date().isoformat()
    available = [u for u in shown.records("blood_units") if u["status"] == "available"]
    expired = [u for u in available if u["expires_on"] < today]
    requests = shown.records("hospital_requests")
    found: dict[str, list[dict[str, Any]]] = {}
    target = (expired or available[-1:] or [None])[0]
    if target is not None:
        found["discard_unit"] = [
            call(
                "discard_unit",
                "Discards a unit that is past its expiry date.",
                unit_id=target["unit_id"],
                reason="expired",
            )
        ]
    open_ = [r for r in requests if r["status"] == "open"]
    allocated = [r for r in requests if r["status"] == "allocated"]
    if open_:
        found["allocate_units"] = [
            call(
                "allocate_units",
                "Reserves compatible in-date units for the most urgent open request.",
                request_id=open_[0]["request_id"],
            )
        ]
    if allocated:
        found["fulfill_request"] = [
            call(
                "fulfill_request",
                "Issues the units reserved for an allocated request.",
                request_id=allocated[0]["request_id"],
            )
        ]
    return found
