"""A working morning at the blood bank, as the model fills it: donors in every situation its
tools and tasks meet (one to book, two whose morning slots are due, one with a slot later this
week, a deferred one), units on the shelf with one already past its date, and hospital requests
open, allocated and closed. The seed picks the people, blood types and the day; the scenario
number moves the day and the ids, so no two states share their records."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from envmill.tasks.offline_llm.model_style.people import Inventor, first_number, numbered

BLOOD_TYPES = ("O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+")
SITES = ("Main Street Center", "Riverside Mobile Unit", "University Hall")
HOSPITALS = (
    "St. Brigid's Hospital",
    "Mercy Regional Medical Center",
    "Lakeside Children's Hospital",
    "Northgate General",
    "Valley Cancer Institute",
)
DONORS = 10
# (donor index, days ago, component, days the unit lasts) of each unit, in shelf order
UNITS = (
    (5, 20, "whole_blood", 42),  # U0 available
    (6, 30, "whole_blood", 42),  # U1 available, sooner to expire
    (7, 50, "whole_blood", 42),  # U2 expired, still on the shelf
    (8, 40, "plasma", 365),  # U3 available plasma
    (9, 2, "platelets", 5),  # U4 platelets, nearly out of date
    (3, 100, "plasma", 365),  # U5 reserved for the allocated request
    (2, 90, "plasma", 365),  # U6 issued
    (1, 150, "whole_blood", 42),  # U7 discarded long ago
)
UNIT_STATUS = ("available",) * 5 + ("reserved", "issued", "discarded")


def build_state(seed: int, scenario: int, kind: str) -> dict[str, Any]:
    people = Inventor(seed * 7919 + scenario)
    today = date(2025, 2, 3) + timedelta(days=seed % 240 + 23 * (scenario + 1))
    now = datetime.combine(today, datetime.min.time()).replace(hour=9, minute=30)
    first = first_number(scenario)
    donors = _donors(people, today, first, kind == "disambiguation")
    units = _units(donors, today, first)
    requests = _requests(people, donors, units, today, first)
    appointments = _appointments(donors, units, today, first)
    return {
        "donors": {d["donor_id"]: d for d in donors},
        "appointments": {a["appointment_id"]: a for a in appointments},
        "blood_units": {u["unit_id"]: u for u in units},
        "hospital_requests": {r["request_id"]: r for r in requests},
        "next_donor_number": first + len(donors),
        "next_appointment_number": first + len(appointments),
        "next_unit_number": first + len(units),
        "next_request_number": first + len(requests),
        "current_time": now.isoformat(),
    }


def _donors(people: Inventor, today: date, first: int, namesake: bool) -> list[dict[str, Any]]:
    ids = numbered("DN", first, DONORS + namesake)
    shared = people.choice(BLOOD_TYPES)  # donors 5 and 6 gave the two units on the shelf
    last = {0: 100, 1: 150, 2: 90, 3: 100, 5: 20, 6: 30, 7: 50, 8: 40, 9: 2}
    status = {3: "deferred", 7: "inactive"}
    donors = []
    for index, donor_id in enumerate(ids):
        ago = last.get(index)
        donors.append(
            {
                "donor_id": donor_id,
                "full_name": people.name(),
                "blood_type": shared if index in (5, 6) else people.choice(BLOOD_TYPES),
                "date_of_birth": _born(people, today),
                "phone": people.phone(),
                "city": people.city(),
                "status": status.get(index, "active"),
                "last_donation_date": (today - timedelta(days=ago)).isoformat() if ago else None,
                "donation_count": people.between(1, 30) if ago else 0,
            }
        )
    if namesake:  # a second donor under the first one's name, from another city
        twin = donors[-1]
        twin |= {"full_name": donors[0]["full_name"], "last_donation_date": None}
        twin |= {"donation_count": 0}
        while twin["city"] == donors[0]["city"]:
            twin["city"] = people.city()
    return donors


def _born(people: Inventor, today: date) -> str:
    year = today.year - people.between(19, 64)
    return date(year, people.between(1, 12), people.between(1, 28)).isoformat()


def _units(donors: list[dict[str, Any]], today: date, first: int) -> list[dict[str, Any]]:
    units = []
    for (donor, ago, component, shelf), unit_id, status in zip(
        UNITS, numbered("BU", first, len(UNITS)), UNIT_STATUS, strict=True
    ):
        collected = today - timedelta(days=ago)
        units.append(
            {
                "unit_id": unit_id,
                "donor_id": donors[donor]["donor_id"],
                "blood_type": donors[donor]["blood_type"],
                "component": component,
                "volume_ml": {"whole_blood": 470, "plasma": 600, "platelets": 250}[component],
                "collected_on": collected.isoformat(),
                "expires_on": (collected + timedelta(days=shelf)).isoformat(),
                "status": status,
                "request_id": None,
            }
        )
    return units


def _requests(
    people: Inventor,
    donors: list[dict[str, Any]],
    units: list[dict[str, Any]],
    today: date,
    first: int,
) -> list[dict[str, Any]]:
    ids = numbered("HR", first, 5)
    busy, other, closed, gone = people.rng.sample(HOSPITALS, 4)
    needed = datetime.combine(today, datetime.min.time())
    plan = (  # hospital, patient type (a unit's own), component, units, priority, status, units
        (busy, units[0]["blood_type"], "whole_blood", 2, "urgent", "open", []),
        (other, units[5]["blood_type"], "plasma", 1, "routine", "allocated", [5]),
        (closed, units[6]["blood_type"], "plasma", 1, "urgent", "fulfilled", [6]),
        (busy, units[3]["blood_type"], "plasma", 1, "routine", "open", []),
        (gone, donors[4]["blood_type"], "platelets", 1, "emergency", "cancelled", []),
    )
    requests = []
    for index, (request_id, row) in enumerate(zip(ids, plan, strict=True)):
        hospital, blood_type, component, count, priority, status, taken = row
        for unit in taken:
            units[unit]["request_id"] = request_id
        requests.append(
            {
                "request_id": request_id,
                "hospital_name": hospital,
                "blood_type": blood_type,
                "component": component,
                "units_needed": count,
                "priority": priority,
                "status": status,
                "allocated_unit_ids": [units[unit]["unit_id"] for unit in taken],
                "needed_by": (needed + timedelta(days=index - 1, hours=14)).isoformat(),
            }
        )
    return requests


def _appointments(
    donors: list[dict[str, Any]], units: list[dict[str, Any]], today: date, first: int
) -> list[dict[str, Any]]:
    morning = datetime.combine(today, datetime.min.time())
    plan = (  # donor, when (from today's midnight), site, status, unit
        (1, timedelta(hours=8), 0, "scheduled", None),
        (4, timedelta(hours=8, minutes=30), 1, "scheduled", None),
        (2, timedelta(days=3, hours=10, minutes=30), 2, "scheduled", None),
        (2, timedelta(days=-90, hours=11), 0, "completed", 6),
        (5, timedelta(days=-20, hours=9), 1, "completed", 0),
        (6, timedelta(days=-30, hours=15), 0, "completed", 1),
        (3, timedelta(days=-5, hours=13), 2, "cancelled", None),
        (9, timedelta(days=-2, hours=10), 0, "completed", 4),
    )
    return [
        {
            "appointment_id": appointment_id,
            "donor_id": donors[donor]["donor_id"],
            "scheduled_at": (morning + when).isoformat(),
            "site": SITES[site],
            "status": status,
            "unit_id": None if unit is None else units[unit]["unit_id"],
        }
        for appointment_id, (donor, when, site, status, unit) in zip(
            numbered("AP", first, len(plan)), plan, strict=True
        )
    ]
