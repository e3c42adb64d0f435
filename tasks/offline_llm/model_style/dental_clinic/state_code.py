"""The dental clinic's state code as the model writes it: patients with an insurance plan and a
balance, dentists, appointments and invoices, its fee schedule and coverage kept as tables."""

STATE_CODE = r'''"""Dental clinic front desk: patients, dentists, appointments and invoices."""

from datetime import datetime, timedelta
from typing import TypedDict


class Patient(TypedDict):
    patient_id: str
    full_name: str
    date_of_birth: str  # YYYY-MM-DD
    phone: str
    insurance_plan: str  # none | basic | premium
    balance_due: float
    status: str  # active | archived


class Dentist(TypedDict):
    dentist_id: str
    full_name: str
    specialty: str  # general | hygienist | orthodontist
    active: bool


class Appointment(TypedDict):
    appointment_id: str
    patient_id: str
    dentist_id: str
    starts_at: str  # ISO 8601
    ends_at: str  # ISO 8601
    procedure: str  # one of PROCEDURES
    status: str  # booked | checked_in | completed | cancelled | no_show
    notes: str


class Invoice(TypedDict):
    invoice_id: str
    appointment_id: str
    patient_id: str
    total: float
    insurance_pays: float
    patient_owes: float
    amount_paid: float
    status: str  # open | paid
    issued_on: str  # YYYY-MM-DD


class DentalClinicFrontDesk:
    """The front desk of a dental clinic keeps its patients with their insurance plan and balance,
    the dentists and hygienists, the appointment book and the invoices for completed visits.
    Receptionists use it to register patients, book, move and cancel appointments, check
    patients in, close visits and take payments. It enforces opening hours and the dentists'
    diaries, who may perform what, notice periods, and how insurance splits each bill.

    Business rules:
    - Appointments start between 08:00 and 17:00 on the hour or half hour, end by 18:00, lie in
      the future and never overlap another booked or checked-in appointment of the same dentist.
    - Each procedure takes a set time: checkup 30 minutes, cleaning 45, filling 60, extraction
      60, root canal 90.
    - Hygienists perform only checkups and cleanings; dentists who are not active take no
      bookings.
    - Archived patients cannot book, and a patient whose balance due is over 200.00 must pay
      before booking.
    - Only booked appointments can be rescheduled or cancelled, and only at least 24 hours
      before they start.
    - A patient is checked in only for a booked appointment on the day it takes place.
    - Only checked-in appointments can be completed; completing one issues an invoice for the
      procedure's fee (checkup 80, cleaning 120, filling 180, extraction 250, root canal 900), of
      which insurance pays 0%, 50% or 80% (plan none, basic, premium), and adds the patient's
      share to their balance.
    - Payments are positive, at most what is still owed on the invoice, and reduce the patient's
      balance; an invoice paid in full is marked paid.
    - Insurance plans are none, basic or premium.
    """

    PROCEDURES = ("checkup", "cleaning", "filling", "extraction", "root_canal")
    HYGIENE_PROCEDURES = ("checkup", "cleaning")
    PLANS = ("none", "basic", "premium")
    PROCEDURE_MINUTES = {"checkup": 30, "cleaning": 45, "filling": 60, "extraction": 60,
                         "root_canal": 90}  # fmt: skip
    PROCEDURE_FEES = {"checkup": 80.0, "cleaning": 120.0, "filling": 180.0, "extraction": 250.0,
                      "root_canal": 900.0}  # fmt: skip
    COVERAGE = {"none": 0.0, "basic": 0.5, "premium": 0.8}
    OPENING_HOUR = 8
    CLOSING_HOUR = 18
    NOTICE_HOURS = 24
    BALANCE_LIMIT = 200.0

    def __init__(self) -> None:
        self.patients: dict[str, Patient] = {}
        self.dentists: dict[str, Dentist] = {}
        self.appointments: dict[str, Appointment] = {}
        self.invoices: dict[str, Invoice] = {}
        self.next_patient_number: int = 1
        self.next_appointment_number: int = 1
        self.next_invoice_number: int = 1
        self.current_time: str = "2025-01-01T08:00:00"

    def _now(self) -> datetime:
        return datetime.fromisoformat(self.current_time)

    def _slot_problem(self, dentist_id: str, start: datetime, minutes: int, skip: str = "") -> str:
        """Why a slot cannot be booked for this dentist, or "" when it can."""
        end = start + timedelta(minutes=minutes)
        if start <= self._now():
            return "The appointment must be in the future"
        if start.minute not in (0, 30) or start.second or not self.OPENING_HOUR <= start.hour < 17:
            return "Appointments start on the hour or half hour between 08:00 and 17:00"
        if end > start.replace(hour=self.CLOSING_HOUR, minute=0):
            return "The appointment would run past closing time (18:00)"
        for other in self.appointments.values():
            if other["appointment_id"] == skip or other["dentist_id"] != dentist_id:
                continue
            if other["status"] not in ("booked", "checked_in"):
                continue
            taken_from = datetime.fromisoformat(other["starts_at"])
            taken_to = datetime.fromisoformat(other["ends_at"])
            if start < taken_to and taken_from < end:
                return f"The dentist is already booked then ({other['appointment_id']})"
        return ""

    def _outstanding(self, invoice: Invoice) -> float:
        return round(invoice["patient_owes"] - invoice["amount_paid"], 2)
'''
