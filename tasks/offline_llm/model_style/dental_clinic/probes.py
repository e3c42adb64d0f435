"""How the model tests the clinic's desk: the patient in the chair is billed, the one due later
today is checked in, a visit later in the week is moved, a fresh booking is made (and another one
made and cancelled, since nothing else in the book is far enough ahead), and an open invoice is
paid down."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from envmill.tasks.offline_llm.model_style.probing import Shown, call

NEGATIVES = {
    "list_dentists": ({"specialty": "surgeon"}, "Fails: surgeon is not a specialty."),
    "update_insurance": ({"patient_id": "PT-9999", "insurance_plan": "basic"}, "No such patient."),
    "get_dentist_schedule": ({"dentist_id": "DR-0001", "day": "someday"}, "Fails: not a date."),
}


def probes(state: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    shown = Shown(state)
    patient, appt = shown.first("patients"), shown.first("appointments")
    invoice = shown.first("invoices")
    dentist = shown.first("dentists")
    today = state["current_time"][:10]
    found = {
        "get_patient_file": [
            call("get_patient_file", "Returns the patient.", patient_id=patient["patient_id"])
        ],
        "find_patient_by_name": [
            call(
                "find_patient_by_name",
                "Finds the patient by surname.",
                name=patient["full_name"].split()[-1].upper(),
            )  # fmt: skip
        ],
        "add_new_patient": [
            call(
                "add_new_patient",
                "Registers a new patient on the basic plan.",
                full_name="Sam Okoro",
                date_of_birth="1987-09-30",
                phone="+1-555-0110",
                insurance_plan="basic",
            )  # fmt: skip
        ],
        "update_insurance": [
            call(
                "update_insurance",
                "Moves the patient to the premium plan.",
                patient_id=patient["patient_id"],
                insurance_plan="premium",
            )  # fmt: skip
        ],
        "list_dentists": [call("list_dentists", "Lists the hygienists.", specialty="hygienist")],
        "get_invoice_details": [
            call("get_invoice_details", "Returns the invoice.", invoice_id=invoice["invoice_id"])
        ],
        "list_open_invoices": [call("list_open_invoices", "Lists invoices with money owing.")],
        "view_appointment": [
            call("view_appointment", "Returns the visit.", appointment_id=appt["appointment_id"])
        ],
        "list_appointments_for_patient": [
            call(
                "list_appointments_for_patient",
                "Lists the patient's visits.",
                patient_id=appt["patient_id"],
            )  # fmt: skip
        ],
        "get_dentist_schedule": [
            call(
                "get_dentist_schedule",
                "Shows today's diary.",
                dentist_id=dentist["dentist_id"],
                day=today,
            )  # fmt: skip
        ],
    }
    return found | _bookings(shown) | _visits(shown)


def _bookings(shown: Shown) -> dict[str, list[dict[str, Any]]]:
    now = datetime.fromisoformat(shown.state["current_time"])
    patient = next(
        p for p in shown.records("patients") if p["status"] == "active" and p["balance_due"] <= 200
    )
    dentists = [d for d in shown.records("dentists") if d["active"]]
    general = next(d for d in dentists if d["specialty"] == "general")
    hygienist = next((d for d in dentists if d["specialty"] == "hygienist"), general)
    later = (now + timedelta(days=5)).replace(hour=10, minute=0).isoformat()
    spare = (now + timedelta(days=5)).replace(hour=14, minute=0).isoformat()
    ahead = [
        a
        for a in shown.records("appointments")
        if a["status"] == "booked"
        and datetime.fromisoformat(a["starts_at"]) - now > timedelta(hours=30)
    ]
    found = {
        "schedule_dental_visit": [
            call(
                "schedule_dental_visit",
                "Books a checkup in a free slot five days out.",
                patient_id=patient["patient_id"],
                dentist_id=general["dentist_id"],
                starts_at=later,
                procedure="checkup",
            )  # fmt: skip
        ],
        "cancel_dental_visit": [
            call(
                "schedule_dental_visit",
                "Books a cleaning to cancel next.",
                patient_id=patient["patient_id"],
                dentist_id=hygienist["dentist_id"],
                starts_at=spare,
                procedure="cleaning",
            ),  # fmt: skip
            call(
                "cancel_dental_visit",
                "Cancels it, days before it starts.",
                appointment_id="@1.data.appointment_id",
            ),  # fmt: skip
        ],
    }
    if ahead:
        moved = (datetime.fromisoformat(ahead[0]["starts_at"]) + timedelta(days=1)).replace(
            hour=11, minute=30
        )
        found["move_dental_visit"] = [
            call("move_dental_visit", "Moves a visit later in the week by a day.",
                 appointment_id=ahead[0]["appointment_id"], new_starts_at=moved.isoformat())
        ]  # fmt: skip
    return found


def _visits(shown: Shown) -> dict[str, list[dict[str, Any]]]:
    today = shown.state["current_time"][:10]
    appointments = shown.records("appointments")
    due = [a for a in appointments if a["status"] == "booked" and a["starts_at"][:10] == today]
    chair = [a for a in appointments if a["status"] == "checked_in"]
    open_ = [i for i in shown.records("invoices") if i["status"] == "open"]
    found: dict[str, list[dict[str, Any]]] = {}
    if due:
        found["check_in_for_visit"] = [
            call(
                "check_in_for_visit",
                "Checks in today's patient.",
                appointment_id=due[0]["appointment_id"],
            )  # fmt: skip
        ]
    if chair:
        found["complete_dental_visit"] = [
            call("complete_dental_visit", "Closes the visit and issues its invoice.",
                 appointment_id=chair[0]["appointment_id"], notes="Two-surface filling, UR6.")
        ]  # fmt: skip
    if open_:
        owing = round(open_[0]["patient_owes"] - open_[0]["amount_paid"], 2)
        found["post_patient_payment"] = [
            call(
                "post_patient_payment",
                "Takes a part payment on an open invoice.",
                invoice_id=open_[0]["invoice_id"],
                amount=min(owing, 20.0),
            )  # fmt: skip
        ]
    return found
