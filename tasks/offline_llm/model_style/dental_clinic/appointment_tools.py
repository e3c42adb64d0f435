"""The dental clinic's appointment-book tools, as the model writes them."""

METHODS = r'''from datetime import datetime, timedelta


def view_appointment(self, appointment_id: str) -> dict:
    """Get one appointment.

    Args:
        appointment_id (str): The appointment's id, e.g. "AP-0107".

    Returns:
        dict: {"success": True, "data": <appointment>} or {"success": False, "error": ...}.

    Constraints:
        - The appointment must exist.
    """
    appt = self.appointments.get(appointment_id)
    if appt is None:
        return {"success": False, "error": f"Appointment {appointment_id} not found"}
    return {"success": True, "data": dict(appt)}


def list_appointments_for_patient(self, patient_id: str, status: str | None = None) -> dict:
    """List a patient's appointments in date order.

    Args:
        patient_id (str): The patient's id.
        status (str): Only this status: booked, checked_in, completed, cancelled or no_show.

    Returns:
        dict: {"success": True, "data": [<appointment>, ...]} or {"success": False, "error": ...}.

    Constraints:
        - The patient must exist.
    """
    if patient_id not in self.patients:
        return {"success": False, "error": f"Patient {patient_id} not found"}
    rows = [
        dict(a)
        for a in self.appointments.values()
        if a["patient_id"] == patient_id and (status is None or a["status"] == status)
    ]
    return {"success": True, "data": sorted(rows, key=lambda a: a["starts_at"])}


def get_dentist_schedule(self, dentist_id: str, day: str) -> dict:
    """Show a dentist's booked and checked-in appointments on one day.

    Args:
        dentist_id (str): The dentist's id.
        day (str): The day, YYYY-MM-DD.

    Returns:
        dict: {"success": True, "data": {"dentist_id", "day", "appointments": [...]}} or
        {"success": False, "error": ...}.

    Constraints:
        - The dentist must exist and the day must be a valid date.
    """
    if dentist_id not in self.dentists:
        return {"success": False, "error": f"Dentist {dentist_id} not found"}
    try:
        wanted = datetime.fromisoformat(str(day)).date().isoformat()
    except ValueError:
        return {"success": False, "error": "day must be YYYY-MM-DD"}
    rows = [
        dict(a)
        for a in self.appointments.values()
        if a["dentist_id"] == dentist_id
        and a["starts_at"][:10] == wanted
        and a["status"] in ("booked", "checked_in")
    ]
    rows.sort(key=lambda a: a["starts_at"])
    data = {"dentist_id": dentist_id, "day": wanted, "appointments": rows}
    return {"success": True, "data": data}


def schedule_dental_visit(
    self, patient_id: str, dentist_id: str, starts_at: str, procedure: str
) -> dict:
    """Book an appointment with a dentist or hygienist.

    Args:
        patient_id (str): The patient's id.
        dentist_id (str): The dentist or hygienist to see.
        starts_at (str): Start time, ISO 8601 (e.g. "2025-06-03T10:30:00").
        procedure (str): checkup, cleaning, filling, extraction or root_canal.

    Returns:
        dict: {"success": True, "message": ..., "data": <new appointment>} or
        {"success": False, "error": ...}.

    Constraints:
        - Archived patients cannot book; a balance due over 200.00 must be paid first.
        - Hygienists perform only checkups and cleanings; inactive dentists take no bookings.
        - The slot must be in opening hours, in the future and free in the dentist's diary.
    """
    patient = self.patients.get(patient_id)
    dentist = self.dentists.get(dentist_id)
    if patient is None:
        return {"success": False, "error": f"Patient {patient_id} not found"}
    if dentist is None:
        return {"success": False, "error": f"Dentist {dentist_id} not found"}
    if procedure not in self.PROCEDURES:
        return {"success": False, "error": f"Unknown procedure '{procedure}'"}
    try:
        start = datetime.fromisoformat(str(starts_at))
    except ValueError:
        return {"success": False, "error": "starts_at must be an ISO 8601 date and time"}
    if patient["status"] == "archived":
        return {"success": False, "error": f"{patient['full_name']}'s file is archived"}
    if patient["balance_due"] > self.BALANCE_LIMIT:
        error = f"Balance due is ${patient['balance_due']:.2f}; over $200.00 must be paid first"
        return {"success": False, "error": error}
    if not dentist["active"]:
        return {"success": False, "error": f"{dentist['full_name']} is not taking bookings"}
    if dentist["specialty"] == "hygienist" and procedure not in self.HYGIENE_PROCEDURES:
        return {"success": False, "error": f"Hygienists do not perform {procedure}"}
    minutes = self.PROCEDURE_MINUTES[procedure]
    problem = self._slot_problem(dentist_id, start, minutes)
    if problem:
        return {"success": False, "error": problem}
    appointment_id = f"AP-{self.next_appointment_number:04d}"
    self.next_appointment_number += 1
    appt: Appointment = {
        "appointment_id": appointment_id,
        "patient_id": patient_id,
        "dentist_id": dentist_id,
        "starts_at": start.isoformat(),
        "ends_at": (start + timedelta(minutes=minutes)).isoformat(),
        "procedure": procedure,
        "status": "booked",
        "notes": "",
    }
    self.appointments[appointment_id] = appt
    message = f"Booked {procedure} for {patient['full_name']} with {dentist['full_name']}"
    return {"success": True, "message": message, "data": dict(appt)}


def move_dental_visit(self, appointment_id: str, new_starts_at: str) -> dict:
    """Move a booked appointment to another time with the same dentist.

    Args:
        appointment_id (str): The appointment to move.
        new_starts_at (str): The new start time, ISO 8601.

    Returns:
        dict: {"success": True, "message": ..., "data": <appointment>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only booked appointments, at least 24 hours before they start.
        - The new slot must be in opening hours, in the future and free.
    """
    appt = self.appointments.get(appointment_id)
    if appt is None:
        return {"success": False, "error": f"Appointment {appointment_id} not found"}
    try:
        start = datetime.fromisoformat(str(new_starts_at))
    except ValueError:
        return {"success": False, "error": "new_starts_at must be an ISO 8601 date and time"}
    if appt["status"] != "booked":
        return {"success": False, "error": f"Appointment {appointment_id} is {appt['status']}"}
    notice = datetime.fromisoformat(appt["starts_at"]) - self._now()
    if notice < timedelta(hours=self.NOTICE_HOURS):
        return {"success": False, "error": "Changes need at least 24 hours' notice"}
    minutes = self.PROCEDURE_MINUTES[appt["procedure"]]
    problem = self._slot_problem(appt["dentist_id"], start, minutes, skip=appointment_id)
    if problem:
        return {"success": False, "error": problem}
    appt["starts_at"] = start.isoformat()
    appt["ends_at"] = (start + timedelta(minutes=minutes)).isoformat()
    message = f"Moved {appointment_id} to {appt['starts_at']}"
    return {"success": True, "message": message, "data": dict(appt)}


def cancel_dental_visit(self, appointment_id: str) -> dict:
    """Cancel a booked appointment.

    Args:
        appointment_id (str): The appointment to cancel.

    Returns:
        dict: {"success": True, "message": ..., "data": <appointment>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only booked appointments, at least 24 hours before they start.
    """
    appt = self.appointments.get(appointment_id)
    if appt is None:
        return {"success": False, "error": f"Appointment {appointment_id} not found"}
    if appt["status"] != "booked":
        return {"success": False, "error": f"Appointment {appointment_id} is {appt['status']}"}
    notice = datetime.fromisoformat(appt["starts_at"]) - self._now()
    if notice < timedelta(hours=self.NOTICE_HOURS):
        return {"success": False, "error": "Cancellations need at least 24 hours' notice"}
    appt["status"] = "cancelled"
    return {"success": True, "message": f"Cancelled {appointment_id}", "data": dict(appt)}


def check_in_for_visit(self, appointment_id: str) -> dict:
    """Check a patient in for today's appointment.

    Args:
        appointment_id (str): The appointment the patient has come for.

    Returns:
        dict: {"success": True, "message": ..., "data": <appointment>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only booked appointments, on the day they take place.
    """
    appt = self.appointments.get(appointment_id)
    if appt is None:
        return {"success": False, "error": f"Appointment {appointment_id} not found"}
    if appt["status"] != "booked":
        return {"success": False, "error": f"Appointment {appointment_id} is {appt['status']}"}
    if appt["starts_at"][:10] != self.current_time[:10]:
        return {"success": False, "error": f"Appointment {appointment_id} is not today"}
    appt["status"] = "checked_in"
    return {"success": True, "message": f"Checked in for {appointment_id}", "data": dict(appt)}


def complete_dental_visit(self, appointment_id: str, notes: str | None = None) -> dict:
    """Close a visit and bill it, splitting the fee with the patient's insurance.

    Args:
        appointment_id (str): The checked-in appointment that is done.
        notes (str): Clinical notes for the visit.

    Returns:
        dict: {"success": True, "message": ..., "data": {"appointment": ..., "invoice": ...}} or
        {"success": False, "error": ...}.

    Constraints:
        - Only checked-in appointments can be completed.
        - Insurance pays 0%, 50% or 80% (none, basic, premium); the rest goes on the balance.
    """
    appt = self.appointments.get(appointment_id)
    if appt is None:
        return {"success": False, "error": f"Appointment {appointment_id} not found"}
    if appt["status"] != "checked_in":
        return {"success": False, "error": f"Appointment {appointment_id} is {appt['status']}"}
    patient = self.patients[appt["patient_id"]]
    total = self.PROCEDURE_FEES[appt["procedure"]]
    insurer = round(total * self.COVERAGE[patient["insurance_plan"]], 2)
    invoice_id = f"IN-{self.next_invoice_number:04d}"
    self.next_invoice_number += 1
    invoice: Invoice = {
        "invoice_id": invoice_id,
        "appointment_id": appointment_id,
        "patient_id": patient["patient_id"],
        "total": total,
        "insurance_pays": insurer,
        "patient_owes": round(total - insurer, 2),
        "amount_paid": 0.0,
        "status": "open",
        "issued_on": self.current_time[:10],
    }
    self.invoices[invoice_id] = invoice
    appt["status"] = "completed"
    appt["notes"] = (notes or "").strip()
    patient["balance_due"] = round(patient["balance_due"] + invoice["patient_owes"], 2)
    message = f"Visit closed; invoice {invoice_id} for ${invoice['patient_owes']:.2f}"
    data = {"appointment": dict(appt), "invoice": dict(invoice)}
    return {"success": True, "message": message, "data": data}
'''
