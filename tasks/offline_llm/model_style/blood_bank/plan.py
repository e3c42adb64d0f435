"""The blood bank's plan, as the model answers the planning prompt."""

from envmill.tasks.offline_llm.model_style.planning import entity

TYPES = "enum: O- | O+ | A- | A+ | B- | B+ | AB- | AB+"
COMPONENT = "enum: whole_blood | plasma | platelets"

PLAN = {
    "environment": "Community blood bank",
    "category": "blood bank",
    "class_name": "CommunityBloodBank",
    "introduction": (
        "The blood bank keeps its registered donors, their donation appointments at the "
        "collection sites, the inventory of collected blood units with their expiry dates, and "
        "the requests partner hospitals send in. Staff use it to register donors, book and record "
        "donations, keep the shelves clean of expired units and send compatible units to "
        "hospitals. It enforces donor eligibility, appointment status changes, unit expiry and "
        "blood-type compatibility."
    ),
    "entities": [
        entity(
            "donor",
            "A person registered to give blood.",
            ("donor_id", "str", "Unique donor id, e.g. 'DN-0007'."),
            ("full_name", "str", "The donor's full name."),
            ("blood_type", TYPES, "ABO group and Rh factor."),
            ("date_of_birth", "date", "Date of birth."),
            ("phone", "str", "Contact phone number."),
            ("city", "str", "City the donor lives in."),
            ("status", "enum: active | deferred | inactive", "Whether the donor may donate."),
            ("last_donation_date", "date", "Day of the last donation; empty if never donated."),
            ("donation_count", "int", "Completed donations so far."),
        ),
        entity(
            "appointment",
            "A donation slot booked for a donor at one of the collection sites.",
            ("appointment_id", "str", "Unique appointment id, e.g. 'AP-0012'."),
            ("donor_id", "str", "The donor who booked it."),
            ("scheduled_at", "datetime", "Start of the slot."),
            ("site", "str", "Collection site."),
            ("status", "enum: scheduled | completed | cancelled | no_show", "Where it stands."),
            ("unit_id", "str", "The unit collected at it; empty until completed."),
        ),
        entity(
            "blood_unit",
            "One bag of collected blood or a blood component on the shelf.",
            ("unit_id", "str", "Unique unit id, e.g. 'BU-0031'."),
            ("donor_id", "str", "The donor it came from."),
            ("blood_type", TYPES, "The donor's blood type."),
            ("component", COMPONENT, "What the bag holds."),
            ("volume_ml", "int", "Volume in millilitres."),
            ("collected_on", "date", "Collection day."),
            ("expires_on", "date", "Last day the unit may be used."),
            ("status", "enum: available | reserved | issued | discarded", "Inventory status."),
            ("request_id", "str", "The hospital request it is reserved for or issued to."),
        ),
        entity(
            "hospital_request",
            "A partner hospital's request for units of one component for a patient.",
            ("request_id", "str", "Unique request id, e.g. 'HR-0004'."),
            ("hospital_name", "str", "The requesting hospital."),
            ("blood_type", TYPES, "The patient's blood type."),
            ("component", COMPONENT, "The component needed."),
            ("units_needed", "int", "Units requested (1 to 6)."),
            ("priority", "enum: routine | urgent | emergency", "Clinical priority."),
            ("status", "enum: open | allocated | fulfilled | cancelled", "Request status."),
            ("allocated_unit_ids", "list[str]", "Ids of the units reserved for it."),
            ("needed_by", "datetime", "When the hospital needs the units."),
        ),
    ],
    "business_rules": [
        "A donor must be at least 17 years old on the day they register.",
        "Blood types are O-, O+, A-, A+, B-, B+, AB- and AB+; components are whole_blood, "
        "plasma and platelets.",
        "Only active donors may book a donation appointment, and a donor holds at most one "
        "scheduled appointment at a time.",
        "A whole-blood donation needs at least 56 days since the donor's last donation, counted "
        "to the appointment's date.",
        "Appointments are booked in the future, at most 60 days ahead, at one of the collection "
        "sites.",
        "Only scheduled appointments can be cancelled, recorded as a donation or marked as a "
        "no-show; a donation is recorded and a no-show marked only once the appointment time has "
        "come.",
        "Recording a donation creates one available unit of the donor's blood type that expires "
        "after 42 days (whole blood), 365 days (plasma) or 5 days (platelets), and updates the "
        "donor's last donation date and donation count.",
        "Only available units can be discarded, and a discard needs a reason.",
        "Units are allocated to an open request only when unexpired, of the requested component "
        "and compatible with the patient's blood type; soonest-expiring units go first.",
        "A request is allocated in full or not at all: it takes exactly units_needed units.",
        "Only allocated requests can be fulfilled; fulfilling issues every unit reserved for it.",
    ],
}
