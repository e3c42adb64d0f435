"""A mid-morning at the dental clinic, as the model fills it: a patient due for a cleaning later
today, one in the chair, one booked later in the week with an unpaid filling, one booked for
tomorrow morning (too late to cancel), an archived file, one over the balance limit, and the
invoices behind the balances."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from envmill.tasks.offline_llm.model_style.people import Inventor, first_number, numbered

PATIENTS = 8
PLANS = ("basic", "premium", "none", "basic", "basic", "none", "premium", "basic")
# patient, dentist, start (days from today, hour, minute), procedure, status
APPOINTMENTS = (
    (1, 1, (0, 11, 30), "cleaning", "booked"),
    (2, 0, (0, 9, 0), "filling", "checked_in"),
    (3, 0, (3, 14, 0), "checkup", "booked"),
    (6, 1, (1, 9, 0), "cleaning", "booked"),
    (3, 0, (-30, 10, 0), "filling", "completed"),
    (7, 0, (-14, 15, 0), "extraction", "completed"),
    (5, 0, (-60, 8, 30), "root_canal", "completed"),
    (0, 1, (-90, 16, 0), "checkup", "completed"),
    (2, 1, (-20, 13, 0), "cleaning", "cancelled"),
)
MINUTES = {"checkup": 30, "cleaning": 45, "filling": 60, "extraction": 60, "root_canal": 90}
FEES = {"checkup": 80.0, "cleaning": 120.0, "filling": 180.0, "extraction": 250.0,
        "root_canal": 900.0}  # fmt: skip
COVERAGE = {"none": 0.0, "basic": 0.5, "premium": 0.8}
PAID = (0.0, 80.0, 640.0, None)  # per completed visit, in order; None: paid in full
DENTISTS = (("general", True), ("hygienist", True), ("orthodontist", True), ("general", False))


def build_state(seed: int, scenario: int, kind: str) -> dict[str, Any]:
    people = Inventor(seed * 15485863 + scenario)
    today = date(2025, 4, 7) + timedelta(days=seed % 180 + 17 * (scenario + 1))
    now = datetime.combine(today, datetime.min.time()).replace(hour=10, minute=15)
    first = first_number(scenario)
    patients = _patients(people, today, first, kind == "disambiguation")
    dentists = [
        {
            "dentist_id": dentist_id,
            "full_name": f"{'Dr. ' if specialty != 'hygienist' else ''}{people.name()}",
            "specialty": specialty,
            "active": active,
        }
        for dentist_id, (specialty, active) in zip(
            numbered("DR", first, len(DENTISTS)), DENTISTS, strict=True
        )
    ]
    appointments = _appointments(patients, dentists, today, first)
    invoices = _invoices(patients, appointments, today, first)
    return {
        "patients": {p["patient_id"]: p for p in patients},
        "dentists": {d["dentist_id"]: d for d in dentists},
        "appointments": {a["appointment_id"]: a for a in appointments},
        "invoices": {i["invoice_id"]: i for i in invoices},
        "next_patient_number": first + len(patients),
        "next_appointment_number": first + len(appointments),
        "next_invoice_number": first + len(invoices),
        "current_time": now.isoformat(),
    }


def _patients(people: Inventor, today: date, first: int, namesake: bool) -> list[dict[str, Any]]:
    patients = []
    for index, patient_id in enumerate(numbered("PT", first, PATIENTS + namesake)):
        born = date(
            today.year - people.between(8, 80), people.between(1, 12), people.between(1, 28)
        )
        patients.append(
            {
                "patient_id": patient_id,
                "full_name": people.name(),
                "date_of_birth": born.isoformat(),
                "phone": people.phone(),
                "insurance_plan": PLANS[index % PATIENTS],
                "balance_due": 0.0,
                "status": "archived" if index == 4 else "active",
            }
        )
    if namesake:  # a second patient under the first one's name, born another year
        patients[-1]["full_name"] = patients[0]["full_name"]
        while patients[-1]["date_of_birth"][:4] == patients[0]["date_of_birth"][:4]:
            patients[-1]["date_of_birth"] = f"{people.between(1950, 2010)}-06-15"
    return patients


def _appointments(
    patients: list[dict[str, Any]], dentists: list[dict[str, Any]], today: date, first: int
) -> list[dict[str, Any]]:
    midnight = datetime.combine(today, datetime.min.time())
    found = []
    for appointment_id, (patient, dentist, (days, hour, minute), procedure, status) in zip(
        numbered("AP", first, len(APPOINTMENTS)), APPOINTMENTS, strict=True
    ):
        start = midnight + timedelta(days=days, hours=hour, minutes=minute)
        found.append(
            {
                "appointment_id": appointment_id,
                "patient_id": patients[patient]["patient_id"],
                "dentist_id": dentists[dentist]["dentist_id"],
                "starts_at": start.isoformat(),
                "ends_at": (start + timedelta(minutes=MINUTES[procedure])).isoformat(),
                "procedure": procedure,
                "status": status,
                "notes": "Routine visit, no complications." if status == "completed" else "",
            }
        )
    return found


def _invoices(
    patients: list[dict[str, Any]], appointments: list[dict[str, Any]], today: date, first: int
) -> list[dict[str, Any]]:
    done = [a for a in appointments if a["status"] == "completed"]
    by_id = {p["patient_id"]: p for p in patients}
    invoices = []
    for invoice_id, appt, paid in zip(numbered("IN", first, len(done)), done, PAID, strict=True):
        patient = by_id[appt["patient_id"]]
        total = FEES[appt["procedure"]]
        insurer = round(total * COVERAGE[patient["insurance_plan"]], 2)
        owes = round(total - insurer, 2)
        settled = owes if paid is None else paid
        patient["balance_due"] = round(patient["balance_due"] + owes - settled, 2)
        invoices.append(
            {
                "invoice_id": invoice_id,
                "appointment_id": appt["appointment_id"],
                "patient_id": patient["patient_id"],
                "total": total,
                "insurance_pays": insurer,
                "patient_owes": owes,
                "amount_paid": settled,
                "status": "paid" if settled >= owes else "open",
                "issued_on": appt["starts_at"][:10],
            }
        )
    return invoices
