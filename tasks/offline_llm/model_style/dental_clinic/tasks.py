"""What the clinic's receptionists ask for, as the model writes it per kind of scenario: patients
by name, dentists as "Dr. …", times as people say them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from envmill.tasks.offline_llm.model_style.dental_clinic.plan import PLAN
from envmill.tasks.offline_llm.model_style.scene import (
    Scene,
    View,
    say_date,
    say_day,
    say_money,
    say_time,
    step,
)

RULES = PLAN["business_rules"]


def _patient(view: View, patient_id: str) -> dict[str, Any]:
    return view.get("patients", patient_id) or {}


def _dentist(view: View, dentist_id: str) -> dict[str, Any]:
    return view.get("dentists", dentist_id) or {}


def _unique(view: View, patient: dict[str, Any]) -> bool:
    names = [p["full_name"] for p in view.records("patients")]
    return names.count(patient.get("full_name")) == 1


def _when(moment: str) -> str:
    return f"{say_date(moment)} at {say_time(moment)}"


def _free_slot(view: View, dentist_id: str, days: int, hour: int) -> str:
    """A start ``days`` ahead at ``hour`` that the dentist's diary leaves free."""
    start = (view.now + timedelta(days=days)).replace(hour=hour, minute=0, second=0)
    taken = [
        (datetime.fromisoformat(a["starts_at"]), datetime.fromisoformat(a["ends_at"]))
        for a in view.records("appointments")
        if a["dentist_id"] == dentist_id and a["status"] in ("booked", "checked_in")
    ]
    while any(begin < start + timedelta(minutes=90) and start < end for begin, end in taken):
        start += timedelta(minutes=90)
    return start.isoformat()


def _visits(view: View, status: str) -> list[dict[str, Any]]:
    return [a for a in view.records("appointments") if a["status"] == status]


def check_in_arrival(view: View) -> Scene | None:
    today = view.today.isoformat()
    due = [a for a in _visits(view, "booked") if a["starts_at"][:10] == today]
    appt = next((a for a in due if _unique(view, _patient(view, a["patient_id"]))), None)
    if appt is None:
        return None
    patient, dentist = _patient(view, appt["patient_id"]), _dentist(view, appt["dentist_id"])
    return Scene(
        task=f"{patient['full_name']} just walked in for their {say_time(appt['starts_at'])} "
        f"{appt['procedure']} with {dentist['full_name']}. Can you check them in?",
        chat="A patient has just arrived for their appointment; please check them in.",
        facts={"patient_name": patient["full_name"]},
        steps=[
            step("find_patient_by_name", name=patient["full_name"]),
            step(
                "list_appointments_for_patient", patient_id=patient["patient_id"], status="booked"
            ),
            step("check_in_for_visit", appointment_id=appt["appointment_id"]),
        ],
    )


def close_visit(view: View) -> Scene | None:
    appt = next(iter(_visits(view, "checked_in")), None)
    if appt is None or not _unique(view, _patient(view, appt["patient_id"])):
        return None
    patient, dentist = _patient(view, appt["patient_id"]), _dentist(view, appt["dentist_id"])
    return Scene(
        task=f"{dentist['full_name']} has finished with {patient['full_name']} "
        f"({appt['procedure']}). Please close the visit so it gets billed.",
        steps=[
            step("find_patient_by_name", name=patient["full_name"]),
            step(
                "list_appointments_for_patient",
                patient_id=patient["patient_id"],
                status="checked_in",
            ),
            step("complete_dental_visit", appointment_id=appt["appointment_id"]),
        ],
    )


def move_visit(view: View) -> Scene | None:
    later = [
        a
        for a in _visits(view, "booked")
        if datetime.fromisoformat(a["starts_at"]) - view.now > timedelta(hours=48)
    ]
    appt = next((a for a in later if _unique(view, _patient(view, a["patient_id"]))), None)
    if appt is None:
        return None
    patient = _patient(view, appt["patient_id"])
    new = (datetime.fromisoformat(appt["starts_at"]) + timedelta(days=1)).replace(hour=9)
    return Scene(
        task=f"{patient['full_name']} can't do {say_day(appt['starts_at'], view.today)}. "
        f"Please move their {appt['procedure']} to {_when(new.isoformat())}, same dentist.",
        chat="A patient needs to move their appointment to another day.",
        facts={"patient_name": patient["full_name"], "new_time": new.isoformat()},
        steps=[
            step("find_patient_by_name", name=patient["full_name"]),
            step(
                "list_appointments_for_patient", patient_id=patient["patient_id"], status="booked"
            ),
            step(
                "move_dental_visit",
                appointment_id=appt["appointment_id"],
                new_starts_at=new.isoformat(),
            ),
        ],
    )


def switch_plan(view: View) -> Scene | None:
    patients = [
        p
        for p in view.records("patients")
        if p["status"] == "active" and p["insurance_plan"] != "premium" and _unique(view, p)
    ]
    patient = view.pick(patients)
    if patient is None:
        return None
    return Scene(
        task=f"{patient['full_name']} changed jobs and now has premium dental cover. Please update "
        "the plan on their file.",
        steps=[
            step("find_patient_by_name", name=patient["full_name"]),
            step("update_insurance", patient_id=patient["patient_id"], insurance_plan="premium"),
        ],
    )


def cancel_the_booked_one(view: View) -> Scene | None:
    """Filtered lookup: of a patient's visits, the one still booked (far enough ahead)."""
    for appt in _visits(view, "booked"):
        patient = _patient(view, appt["patient_id"])
        mine = [a for a in view.records("appointments") if a["patient_id"] == appt["patient_id"]]
        ahead = datetime.fromisoformat(appt["starts_at"]) - view.now > timedelta(hours=48)
        if len(mine) >= 2 and ahead and _unique(view, patient):
            return Scene(
                task=f"{patient['full_name']} called to cancel their upcoming appointment (the one "
                "still on the books). Leave their past visits alone.",
                steps=[
                    step("find_patient_by_name", name=patient["full_name"]),
                    step("list_appointments_for_patient", patient_id=patient["patient_id"]),
                    step("cancel_dental_visit", appointment_id=appt["appointment_id"]),
                ],
            )
    return None


def settle_the_rest(view: View) -> Scene | None:
    """Filtered lookup: among the open invoices, this patient's; paid off in full."""
    open_ = [i for i in view.records("invoices") if i["status"] == "open"]
    for invoice in open_:
        patient = _patient(view, invoice["patient_id"])
        rest = round(invoice["patient_owes"] - invoice["amount_paid"], 2)
        if len(open_) < 2 or not _unique(view, patient) or invoice["amount_paid"] <= 0:
            continue
        return Scene(
            task=f"{patient['full_name']} wants to pay off the rest of their bill in full today. "
            "Please record the payment against their open invoice.",
            steps=[
                step("find_patient_by_name", name=patient["full_name"]),
                step("list_open_invoices"),
                step("post_patient_payment", invoice_id=invoice["invoice_id"], amount=rest),
            ],
        )
    return None


def register_and_book(view: View) -> Scene | None:
    """Created chain: a new patient, then their first checkup."""
    dentist = next(
        (d for d in view.records("dentists") if d["specialty"] == "general" and d["active"]), None
    )
    if dentist is None:
        return None
    name = ("Helena Vasquez", "Marcus Bell", "Anya Petrenko", "Kofi Asante")[view.index % 4]
    slot = _free_slot(view, dentist["dentist_id"], 6, 10)
    details = {"full_name": name, "date_of_birth": "1990-02-14", "phone": "+1-555-0177",
               "insurance_plan": "basic"}  # fmt: skip
    return Scene(
        task=f"New patient: {name}, born {say_date('1990-02-14')}, phone +1-555-0177, basic "
        f"insurance. Please register them and book a checkup with {dentist['full_name']} on "
        f"{_when(slot)}.",
        chat="We have a new patient who wants to register and book a checkup.",
        facts={**details, "dentist": dentist["full_name"], "appointment_time": slot},
        steps=[
            step("add_new_patient", **details),
            step("list_dentists", specialty="general"),
            step(
                "schedule_dental_visit",
                patient_id="$1.data.patient_id",
                dentist_id=dentist["dentist_id"],
                starts_at=slot,
                procedure="checkup",
            ),
        ],
    )


def balance_question(view: View) -> Scene | None:
    """Answer: a patient's balance."""
    owing = [p for p in view.records("patients") if p["balance_due"] > 0 and _unique(view, p)]
    patient = view.pick(owing)
    if patient is None:
        return None
    return Scene(
        task=f"{patient['full_name']} is on the phone asking what they owe us. What's their "
        "balance?",
        steps=[step("find_patient_by_name", name=patient["full_name"])],
        expected_answer={"type": "money", "value": patient["balance_due"]},
        reply=f"{patient['full_name']}'s balance due is {say_money(patient['balance_due'])}.",
    )
