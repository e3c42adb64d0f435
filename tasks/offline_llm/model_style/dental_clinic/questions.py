"""The clinic's requests that hinge on something read first: a balance or a plan, a shared name,
a question, or a rule that says no."""

from __future__ import annotations

from datetime import datetime, timedelta

from envmill.tasks.offline_llm.model_style.dental_clinic.tasks import (
    RULES,
    _dentist,
    _free_slot,
    _patient,
    _unique,
    _visits,
    _when,
)
from envmill.tasks.offline_llm.model_style.scene import Scene, View, say_money, say_time, step


def _hygienist(view: View) -> dict | None:
    return next(
        (d for d in view.records("dentists") if d["specialty"] == "hygienist" and d["active"]),
        None,
    )


def book_if_balance_low(view: View) -> Scene | None:
    """Conditional: book a cleaning only if the balance is under the limit."""
    hygienist = _hygienist(view)
    for patient in view.records("patients"):
        balance = patient["balance_due"]
        if not (patient["status"] == "active" and 0 < balance < 200 and _unique(view, patient)):
            continue
        if hygienist is None:
            return None
        slot = _free_slot(view, hygienist["dentist_id"], 8, 9)
        return Scene(
            task=f"{patient['full_name']} wants a cleaning with {hygienist['full_name']} on "
            f"{_when(slot)}. If their balance due is under $200, book it; otherwise just tell "
            "me what they owe.",
            steps=[
                step("find_patient_by_name", name=patient["full_name"]),
                step("list_dentists", specialty="hygienist"),
                step(
                    "schedule_dental_visit",
                    patient_id=patient["patient_id"],
                    dentist_id=hygienist["dentist_id"],
                    starts_at=slot,
                    procedure="cleaning",
                ),
            ],
            expected_answer={"type": "money", "value": balance},
            reply=f"{patient['full_name']} owes {say_money(balance)}, which is under the limit, "
            f"so I booked the cleaning with {hygienist['full_name']} on {_when(slot)}.",
        )
    return None


def book_if_premium(view: View) -> Scene | None:
    """Conditional: book a filling only if the patient is on the premium plan."""
    dentist = next(
        (d for d in view.records("dentists") if d["specialty"] == "general" and d["active"]), None
    )
    premium = [
        p
        for p in view.records("patients")
        if p["insurance_plan"] == "premium" and p["status"] == "active" and _unique(view, p)
    ]
    patient = view.pick(premium)
    if patient is None or dentist is None:
        return None
    slot = _free_slot(view, dentist["dentist_id"], 9, 13)
    return Scene(
        task=f"Check {patient['full_name']}'s insurance. If they're on the premium plan, book them "
        f"a filling with {dentist['full_name']} on {_when(slot)}; if not, tell me which plan "
        "they have so I can quote them.",
        steps=[
            step("find_patient_by_name", name=patient["full_name"]),
            step("list_dentists", specialty="general"),
            step(
                "schedule_dental_visit",
                patient_id=patient["patient_id"],
                dentist_id=dentist["dentist_id"],
                starts_at=slot,
                procedure="filling",
            ),
        ],
        expected_answer={"type": "enum", "value": "premium"},
        reply=f"{patient['full_name']} is on the premium plan, so I booked the filling with "
        f"{dentist['full_name']} on {_when(slot)}.",
    )


def book_the_right_namesake(view: View) -> Scene | None:
    """Disambiguation: two patients share a name; the birth date tells them apart."""
    hygienist = _hygienist(view)
    patients = view.records("patients")
    for patient in patients:
        twins = [p for p in patients if p["full_name"] == patient["full_name"]]
        if len(twins) < 2 or hygienist is None or patient["status"] != "active":
            continue
        slot = _free_slot(view, hygienist["dentist_id"], 7, 15)
        return Scene(
            task=f"Please book {patient['full_name']} (date of birth {patient['date_of_birth']}) "
            f"a cleaning with {hygienist['full_name']} on {_when(slot)}.",
            steps=[
                step("find_patient_by_name", name=patient["full_name"]),
                step("list_dentists", specialty="hygienist"),
                step(
                    "schedule_dental_visit",
                    patient_id=patient["patient_id"],
                    dentist_id=hygienist["dentist_id"],
                    starts_at=slot,
                    procedure="cleaning",
                ),
            ],
        )
    return None


def next_visit(view: View) -> Scene | None:
    """Answer: when a patient's next visit is."""
    booked = [a for a in _visits(view, "booked") if _unique(view, _patient(view, a["patient_id"]))]
    appt = view.pick(booked)
    if appt is None:
        return None
    patient = _patient(view, appt["patient_id"])
    return Scene(
        task=f"When is {patient['full_name']}'s next appointment?",
        chat="A patient wants to know when their next appointment is.",
        facts={"patient_name": patient["full_name"]},
        steps=[
            step("find_patient_by_name", name=patient["full_name"]),
            step(
                "list_appointments_for_patient", patient_id=patient["patient_id"], status="booked"
            ),
        ],
        expected_answer={"type": "datetime", "value": appt["starts_at"]},
        reply=f"{patient['full_name']}'s next appointment is on {_when(appt['starts_at'])}.",
    )


def book_archived(view: View) -> Scene | None:
    """Refusal: an archived file cannot book."""
    patient = view.pick([p for p in view.records("patients") if p["status"] == "archived"])
    hygienist = _hygienist(view)
    if patient is None or hygienist is None:
        return None
    slot = _free_slot(view, hygienist["dentist_id"], 4, 10)
    return Scene(
        task=f"Please book {patient['full_name']} a checkup with {hygienist['full_name']} on "
        f"{_when(slot)}.",
        steps=[step("find_patient_by_name", name=patient["full_name"])],
        refusal={
            "rules": [
                {
                    "rule_id": "archived_cannot_book",
                    "condition": "Archived patients cannot book; this file is archived.",
                    "triggers": ["archived"],
                    "policy": RULES[3],
                }
            ],
            "action": "book",
            "targets": ["booked"],
        },
        reply=f"I can't book {patient['full_name']}: their file is archived, and archived patients "
        "can't book appointments. It would need to be reactivated first.",
    )


def book_over_balance(view: View) -> Scene | None:
    """Refusal: a balance over the limit blocks booking."""
    patient = next(
        (p for p in view.records("patients") if p["balance_due"] > 200 and p["status"] == "active"),
        None,
    )
    hygienist = _hygienist(view)
    if patient is None or hygienist is None:
        return None
    slot = _free_slot(view, hygienist["dentist_id"], 4, 11)
    balance = patient["balance_due"]
    return Scene(
        task=f"{patient['full_name']} would like a cleaning with {hygienist['full_name']} on "
        f"{_when(slot)}. Can you book that?",
        steps=[step("find_patient_by_name", name=patient["full_name"])],
        refusal={
            "rules": [
                {
                    "rule_id": "balance_limit",
                    "condition": f"A balance due over 200.00 must be paid before booking; it is "
                    f"{balance:.2f}.",
                    "triggers": [balance],
                    "policy": RULES[3],
                }
            ],
            "action": "book",
            "targets": ["booked"],
        },
        reply=f"I can't book that yet: {patient['full_name']} has a balance due of "
        f"{say_money(balance)}, and anything over $200 has to be paid before a new booking.",
    )


def late_cancellation(view: View) -> Scene | None:
    """Refusal: too close to the start to cancel."""
    soon = [
        a
        for a in _visits(view, "booked")
        if timedelta(0) < datetime.fromisoformat(a["starts_at"]) - view.now < timedelta(hours=24)
        and a["starts_at"][:10] != view.today.isoformat()
    ]
    appt = next((a for a in soon if _unique(view, _patient(view, a["patient_id"]))), None)
    if appt is None:
        return None
    patient, dentist = _patient(view, appt["patient_id"]), _dentist(view, appt["dentist_id"])
    return Scene(
        task=f"{patient['full_name']} can't make tomorrow's {say_time(appt['starts_at'])} "
        f"{appt['procedure']} with {dentist['full_name']}. Please cancel it.",
        steps=[
            step("find_patient_by_name", name=patient["full_name"]),
            step(
                "list_appointments_for_patient", patient_id=patient["patient_id"], status="booked"
            ),
        ],
        refusal={
            "rules": [
                {
                    "rule_id": "cancel_notice",
                    "condition": "Appointments can be cancelled only at least 24 hours before "
                    "they start; this one starts in less than 24 hours.",
                    "triggers": [appt["starts_at"]],
                    "policy": RULES[4],
                }
            ],
            "action": "cancel",
            "targets": ["cancelled"],
        },
        reply=f"I can't cancel it: the {appt['procedure']} starts tomorrow at "
        f"{say_time(appt['starts_at'])}, less than 24 hours from now, and cancellations need at "
        "least 24 hours' notice.",
    )
