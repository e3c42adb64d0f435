"""The blood bank's state code as the model writes it: TypedDicts, constants (tuples and a
compatibility table, as a model assumes it may keep them), ``__init__`` and shared helpers."""

STATE_CODE = r'''"""Community blood bank: donors, appointments, blood units, hospital requests."""

from datetime import date, datetime, timedelta
from typing import TypedDict


class Donor(TypedDict):
    donor_id: str
    full_name: str
    blood_type: str  # one of BLOOD_TYPES
    date_of_birth: str  # YYYY-MM-DD
    phone: str
    city: str
    status: str  # active | deferred | inactive
    last_donation_date: str | None  # YYYY-MM-DD, None if never donated
    donation_count: int


class Appointment(TypedDict):
    appointment_id: str
    donor_id: str
    scheduled_at: str  # ISO 8601 datetime
    site: str
    status: str  # scheduled | completed | cancelled | no_show
    unit_id: str | None  # the unit collected, once completed


class BloodUnit(TypedDict):
    unit_id: str
    donor_id: str
    blood_type: str
    component: str  # whole_blood | plasma | platelets
    volume_ml: int
    collected_on: str  # YYYY-MM-DD
    expires_on: str  # YYYY-MM-DD, last usable day
    status: str  # available | reserved | issued | discarded
    request_id: str | None  # the request it is reserved for or issued to


class HospitalRequest(TypedDict):
    request_id: str
    hospital_name: str
    blood_type: str  # the patient's blood type
    component: str
    units_needed: int
    priority: str  # routine | urgent | emergency
    status: str  # open | allocated | fulfilled | cancelled
    allocated_unit_ids: list[str]
    needed_by: str  # ISO 8601 datetime


class CommunityBloodBank:
    """The blood bank keeps its registered donors, their donation appointments at the collection
    sites, the inventory of collected blood units with their expiry dates, and the requests
    partner hospitals send in. Staff use it to register donors, book and record donations, keep
    the shelves clean of expired units and send compatible units to hospitals. It enforces donor
    eligibility, appointment status changes, unit expiry and blood-type compatibility.

    Business rules:
    - A donor must be at least 17 years old on the day they register.
    - Blood types are O-, O+, A-, A+, B-, B+, AB- and AB+; components are whole_blood, plasma
      and platelets.
    - Only active donors may book a donation appointment, and a donor holds at most one
      scheduled appointment at a time.
    - A whole-blood donation needs at least 56 days since the donor's last donation, counted to
      the appointment's date.
    - Appointments are booked in the future, at most 60 days ahead, at one of the collection
      sites.
    - Only scheduled appointments can be cancelled, recorded as a donation or marked as a no-show;
      a donation is recorded and a no-show marked only once the appointment time has come.
    - Recording a donation creates one available unit of the donor's blood type that expires
      after 42 days (whole blood), 365 days (plasma) or 5 days (platelets), and updates the
      donor's last donation date and donation count.
    - Only available units can be discarded, and a discard needs a reason.
    - Units are allocated to an open request only when unexpired, of the requested component and
      compatible with the patient's blood type; soonest-expiring units go first.
    - A request is allocated in full or not at all: it takes exactly units_needed units.
    - Only allocated requests can be fulfilled; fulfilling issues every unit reserved for it.
    """

    BLOOD_TYPES = ("O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+")
    COMPONENTS = ("whole_blood", "plasma", "platelets")
    SITES = ("Main Street Center", "Riverside Mobile Unit", "University Hall")
    MIN_DONOR_AGE = 17
    WHOLE_BLOOD_INTERVAL_DAYS = 56
    MAX_DAYS_AHEAD = 60
    SHELF_LIFE_DAYS = {"whole_blood": 42, "plasma": 365, "platelets": 5}
    DEFAULT_VOLUME_ML = {"whole_blood": 470, "plasma": 600, "platelets": 250}
    # Which donor blood types a patient of a given type can receive red cells from.
    RED_CELL_DONORS = {
        "O-": ("O-",),
        "O+": ("O-", "O+"),
        "A-": ("O-", "A-"),
        "A+": ("O-", "O+", "A-", "A+"),
        "B-": ("O-", "B-"),
        "B+": ("O-", "O+", "B-", "B+"),
        "AB-": ("O-", "A-", "B-", "AB-"),
        "AB+": ("O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+"),
    }
    # Plasma goes the other way round: AB plasma suits everyone.
    PLASMA_DONORS = {
        "O-": ("O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+"),
        "O+": ("O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+"),
        "A-": ("A-", "A+", "AB-", "AB+"),
        "A+": ("A-", "A+", "AB-", "AB+"),
        "B-": ("B-", "B+", "AB-", "AB+"),
        "B+": ("B-", "B+", "AB-", "AB+"),
        "AB-": ("AB-", "AB+"),
        "AB+": ("AB-", "AB+"),
    }

    def __init__(self) -> None:
        self.donors: dict[str, Donor] = {}
        self.appointments: dict[str, Appointment] = {}
        self.blood_units: dict[str, BloodUnit] = {}
        self.hospital_requests: dict[str, HospitalRequest] = {}
        self.next_donor_number: int = 1
        self.next_appointment_number: int = 1
        self.next_unit_number: int = 1
        self.next_request_number: int = 1
        self.current_time: str = "2025-01-01T09:00:00"

    # --- helpers shared by the tools ---------------------------------------------------------

    def _now(self) -> datetime:
        return datetime.fromisoformat(self.current_time)

    def _today(self) -> date:
        return self._now().date()

    def _is_expired(self, unit: BloodUnit) -> bool:
        return date.fromisoformat(unit["expires_on"]) < self._today()

    def _compatible_types(self, patient_type: str, component: str) -> tuple:
        table = self.PLASMA_DONORS if component == "plasma" else self.RED_CELL_DONORS
        return table.get(patient_type, ())

    def _age_on(self, date_of_birth: str, day: date) -> int:
        born = date.fromisoformat(date_of_birth)
        years = day.year - born.year
        if (day.month, day.day) < (born.month, born.day):
            years -= 1
        return years

    def _expiry_for(self, component: str, collected: date) -> str:
        return (collected + timedelta(days=self.SHELF_LIFE_DAYS[component])).isoformat()
'''
