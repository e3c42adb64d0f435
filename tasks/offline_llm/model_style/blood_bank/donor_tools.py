"""The blood bank's donor and appointment tools, as the model writes them (one call's answer)."""

METHODS = r'''from datetime import date, datetime, timedelta


def get_donor_record(self, donor_id: str) -> dict:
    """Look up one donor by their donor id.

    Args:
        donor_id (str): The donor's id, e.g. "DN-0007".

    Returns:
        dict: {"success": True, "data": <donor record>} or {"success": False, "error": ...}.

    Constraints:
        - The donor must exist.
    """
    if not isinstance(donor_id, str) or not donor_id.strip():
        return {"success": False, "error": "donor_id must be a non-empty string"}
    donor = self.donors.get(donor_id)
    if donor is None:
        return {"success": False, "error": f"No donor found with id {donor_id}"}
    return {"success": True, "data": dict(donor)}


def search_donors_by_name(self, name: str) -> dict:
    """Find donors whose full name contains the given text, ignoring case.

    Args:
        name (str): All or part of the donor's name, e.g. "Okafor".

    Returns:
        dict: {"success": True, "data": [<donor record>, ...]} (possibly empty), or
        {"success": False, "error": ...}.

    Constraints:
        - The search text must not be empty.
    """
    if not isinstance(name, str) or not name.strip():
        return {"success": False, "error": "Please give a name (or part of one) to search for"}
    needle = name.strip().lower()
    matches = [dict(d) for d in self.donors.values() if needle in d["full_name"].lower()]
    return {"success": True, "data": matches}


def list_donor_appointments(self, donor_id: str, status: str | None = None) -> dict:
    """List a donor's donation appointments, earliest first, optionally only one status.

    Args:
        donor_id (str): The donor's id.
        status (str): Only appointments in this status: scheduled, completed, cancelled or
            no_show.

    Returns:
        dict: {"success": True, "data": [<appointment>, ...]} or {"success": False, "error": ...}.

    Constraints:
        - The donor must exist; a status filter must be a known appointment status.
    """
    if donor_id not in self.donors:
        return {"success": False, "error": f"No donor found with id {donor_id}"}
    if status is not None and status not in ("scheduled", "completed", "cancelled", "no_show"):
        return {"success": False, "error": f"Unknown appointment status '{status}'"}
    found = [
        dict(a)
        for a in self.appointments.values()
        if a["donor_id"] == donor_id and (status is None or a["status"] == status)
    ]
    found.sort(key=lambda a: a["scheduled_at"])
    return {"success": True, "data": found}


def register_new_donor(
    self, full_name: str, blood_type: str, date_of_birth: str, phone: str, city: str
) -> dict:
    """Register a new blood donor.

    Args:
        full_name (str): The donor's full name.
        blood_type (str): One of O-, O+, A-, A+, B-, B+, AB-, AB+.
        date_of_birth (str): Date of birth, YYYY-MM-DD.
        phone (str): A contact phone number.
        city (str): The city the donor lives in.

    Returns:
        dict: {"success": True, "message": ..., "data": <new donor>} or
        {"success": False, "error": ...}.

    Constraints:
        - A donor must be at least 17 years old on the day they register.
        - The blood type must be one of the eight ABO/Rh types.
    """
    for label, value in (("full_name", full_name), ("phone", phone), ("city", city)):
        if not isinstance(value, str) or not value.strip():
            return {"success": False, "error": f"{label} must be a non-empty string"}
    if blood_type not in self.BLOOD_TYPES:
        return {"success": False, "error": f"'{blood_type}' is not a valid blood type"}
    try:
        age = self._age_on(date_of_birth, self._today())
    except (TypeError, ValueError):
        return {"success": False, "error": "date_of_birth must be a date in YYYY-MM-DD format"}
    if age < self.MIN_DONOR_AGE:
        return {
            "success": False,
            "error": f"Donors must be at least {self.MIN_DONOR_AGE}; this person is {age}",
        }
    donor_id = f"DN-{self.next_donor_number:04d}"
    self.next_donor_number += 1
    donor: Donor = {
        "donor_id": donor_id,
        "full_name": full_name.strip(),
        "blood_type": blood_type,
        "date_of_birth": date_of_birth,
        "phone": phone.strip(),
        "city": city.strip(),
        "status": "active",
        "last_donation_date": None,
        "donation_count": 0,
    }
    self.donors[donor_id] = donor
    return {"success": True, "message": f"Registered donor {donor_id}", "data": dict(donor)}


def book_donation_slot(self, donor_id: str, scheduled_at: str, site: str) -> dict:
    """Book a whole-blood donation appointment for an active donor.

    Args:
        donor_id (str): The donor's id.
        scheduled_at (str): Start of the slot, ISO 8601 (e.g. "2025-03-20T10:30:00").
        site (str): Collection site: Main Street Center, Riverside Mobile Unit or University Hall.

    Returns:
        dict: {"success": True, "message": ..., "data": <new appointment>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only active donors may book, and a donor holds at most one scheduled appointment.
        - At least 56 days must pass between whole-blood donations.
        - The slot must be in the future and at most 60 days ahead, at a known site.
    """
    donor = self.donors.get(donor_id)
    if donor is None:
        return {"success": False, "error": f"No donor found with id {donor_id}"}
    if site not in self.SITES:
        sites = ", ".join(self.SITES)
        return {"success": False, "error": f"Unknown site '{site}'; choose one of: {sites}"}
    try:
        when = datetime.fromisoformat(scheduled_at)
    except (TypeError, ValueError):
        return {"success": False, "error": "scheduled_at must be an ISO 8601 date and time"}
    if when <= self._now():
        return {"success": False, "error": "The appointment must be in the future"}
    if when.date() > self._today() + timedelta(days=self.MAX_DAYS_AHEAD):
        limit = self.MAX_DAYS_AHEAD
        return {"success": False, "error": f"Appointments can be booked at most {limit} days ahead"}
    if donor["status"] != "active":
        return {"success": False, "error": f"Donor {donor_id} is {donor['status']} and cannot book"}
    for appt in self.appointments.values():
        if appt["donor_id"] == donor_id and appt["status"] == "scheduled":
            return {
                "success": False,
                "error": f"Donor {donor_id} already has {appt['appointment_id']} scheduled",
            }
    if donor["last_donation_date"]:
        gap = (when.date() - date.fromisoformat(donor["last_donation_date"])).days
        if gap < self.WHOLE_BLOOD_INTERVAL_DAYS:
            return {
                "success": False,
                "error": f"Only {gap} days since the last donation on "
                f"{donor['last_donation_date']}; whole blood needs "
                f"{self.WHOLE_BLOOD_INTERVAL_DAYS}",
            }
    appointment_id = f"AP-{self.next_appointment_number:04d}"
    self.next_appointment_number += 1
    appt: Appointment = {
        "appointment_id": appointment_id,
        "donor_id": donor_id,
        "scheduled_at": when.isoformat(),
        "site": site,
        "status": "scheduled",
        "unit_id": None,
    }
    self.appointments[appointment_id] = appt
    message = f"Booked {appointment_id} for {donor['full_name']} at {site}"
    return {"success": True, "message": message, "data": dict(appt)}


def cancel_donation_slot(self, appointment_id: str) -> dict:
    """Cancel a scheduled donation appointment.

    Args:
        appointment_id (str): The appointment's id, e.g. "AP-0012".

    Returns:
        dict: {"success": True, "message": ..., "data": <appointment>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only scheduled appointments can be cancelled.
    """
    appt = self.appointments.get(appointment_id)
    if appt is None:
        return {"success": False, "error": f"Appointment {appointment_id} does not exist"}
    if appt["status"] != "scheduled":
        return {
            "success": False,
            "error": f"Appointment {appointment_id} is {appt['status']}; "
            "only scheduled appointments can be cancelled",
        }
    appt["status"] = "cancelled"
    message = f"Cancelled appointment {appointment_id}"
    return {"success": True, "message": message, "data": dict(appt)}


def record_donation(
    self, appointment_id: str, component: str, volume_ml: int | None = None
) -> dict:
    """Record the donation collected at an appointment and add the new unit to the inventory.

    Args:
        appointment_id (str): The appointment at which the donor gave blood.
        component (str): What was collected: whole_blood, plasma or platelets.
        volume_ml (int): Collected volume in millilitres; the component's standard bag if omitted.

    Returns:
        dict: {"success": True, "message": ..., "data": {"appointment": ..., "unit": ...}} or
        {"success": False, "error": ...}.

    Constraints:
        - Only scheduled appointments whose time has come can be recorded.
        - The new unit expires after 42 days (whole blood), 365 (plasma) or 5 (platelets).
        - The donor's last donation date and donation count are updated.
    """
    appt = self.appointments.get(appointment_id)
    if appt is None:
        return {"success": False, "error": f"Appointment {appointment_id} does not exist"}
    if component not in self.COMPONENTS:
        return {"success": False, "error": f"Unknown component '{component}'"}
    if volume_ml is not None and (not isinstance(volume_ml, int) or not 100 <= volume_ml <= 700):
        return {"success": False, "error": "volume_ml must be a whole number between 100 and 700"}
    if appt["status"] != "scheduled":
        status = appt["status"]
        return {"success": False, "error": f"Appointment {appointment_id} is already {status}"}
    if datetime.fromisoformat(appt["scheduled_at"]) > self._now():
        return {"success": False, "error": f"Appointment {appointment_id} has not started yet"}
    donor = self.donors[appt["donor_id"]]
    today = self._today()
    unit_id = f"BU-{self.next_unit_number:04d}"
    self.next_unit_number += 1
    unit: BloodUnit = {
        "unit_id": unit_id,
        "donor_id": donor["donor_id"],
        "blood_type": donor["blood_type"],
        "component": component,
        "volume_ml": volume_ml if volume_ml is not None else self.DEFAULT_VOLUME_ML[component],
        "collected_on": today.isoformat(),
        "expires_on": self._expiry_for(component, today),
        "status": "available",
        "request_id": None,
    }
    self.blood_units[unit_id] = unit
    appt["status"] = "completed"
    appt["unit_id"] = unit_id
    donor["last_donation_date"] = today.isoformat()
    donor["donation_count"] += 1
    return {
        "success": True,
        "message": f"Recorded the donation at {appointment_id} as unit {unit_id}",
        "data": {"appointment": dict(appt), "unit": dict(unit)},
    }


def mark_donor_no_show(self, appointment_id: str) -> dict:
    """Mark a scheduled appointment as a no-show once its time has passed.

    Args:
        appointment_id (str): The appointment's id.

    Returns:
        dict: {"success": True, "message": ..., "data": <appointment>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only scheduled appointments whose time has come can be marked as a no-show.
    """
    appt = self.appointments.get(appointment_id)
    if appt is None:
        return {"success": False, "error": f"Appointment {appointment_id} does not exist"}
    if appt["status"] != "scheduled":
        status = appt["status"]
        return {"success": False, "error": f"Appointment {appointment_id} is already {status}"}
    if datetime.fromisoformat(appt["scheduled_at"]) > self._now():
        return {"success": False, "error": "That appointment has not happened yet"}
    appt["status"] = "no_show"
    return {"success": True, "message": f"Marked {appointment_id} as a no-show", "data": dict(appt)}
'''
