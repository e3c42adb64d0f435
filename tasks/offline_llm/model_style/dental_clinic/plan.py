"""The dental clinic's plan, as the model answers the planning prompt."""

from envmill.tasks.offline_llm.model_style.planning import entity

PROCEDURE = "enum: checkup | cleaning | filling | extraction | root_canal"

PLAN = {
    "environment": "Dental clinic front desk",
    "category": "dental clinic",
    "class_name": "DentalClinicFrontDesk",
    "introduction": (
        "The front desk of a dental clinic keeps its patients with their insurance plan and "
        "balance, the dentists and hygienists, the appointment book and the invoices for "
        "completed visits. Receptionists use it to register patients, book, move and cancel "
        "appointments, check patients in, close visits and take payments. It enforces opening "
        "hours and the dentists' diaries, who may perform what, notice periods, and how "
        "insurance splits each bill."
    ),
    "entities": [
        entity(
            "patient",
            "A person registered with the clinic.",
            ("patient_id", "str", "Unique patient id, e.g. 'PT-0042'."),
            ("full_name", "str", "The patient's full name."),
            ("date_of_birth", "date", "Date of birth."),
            ("phone", "str", "Contact phone number."),
            ("insurance_plan", "enum: none | basic | premium", "Dental insurance on file."),
            ("balance_due", "float", "What the patient owes the clinic, in dollars."),
            ("status", "enum: active | archived", "Archived files cannot book."),
        ),
        entity(
            "dentist",
            "A dentist or hygienist who sees patients.",
            ("dentist_id", "str", "Unique id, e.g. 'DR-0003'."),
            ("full_name", "str", "Name as patients know it, e.g. 'Dr. Ana Ruiz'."),
            ("specialty", "enum: general | hygienist | orthodontist", "What they do."),
            ("active", "bool", "Whether they take bookings."),
        ),
        entity(
            "appointment",
            "A visit in the appointment book.",
            ("appointment_id", "str", "Unique id, e.g. 'AP-0107'."),
            ("patient_id", "str", "The patient."),
            ("dentist_id", "str", "The dentist or hygienist."),
            ("starts_at", "datetime", "Start of the visit."),
            ("ends_at", "datetime", "End of the visit (start plus the procedure's time)."),
            ("procedure", PROCEDURE, "What will be done."),
            (
                "status",
                "enum: booked | checked_in | completed | cancelled | no_show",
                "Where the visit stands.",
            ),
            ("notes", "str", "Clinical notes, filled in when the visit is completed."),
        ),
        entity(
            "invoice",
            "The bill for a completed visit, split between insurer and patient.",
            ("invoice_id", "str", "Unique id, e.g. 'IN-0009'."),
            ("appointment_id", "str", "The visit billed."),
            ("patient_id", "str", "The patient billed."),
            ("total", "float", "The procedure's fee."),
            ("insurance_pays", "float", "The insurer's share."),
            ("patient_owes", "float", "The patient's share."),
            ("amount_paid", "float", "What the patient has paid so far."),
            ("status", "enum: open | paid", "Whether anything is still owed."),
            ("issued_on", "date", "Day the invoice was issued."),
        ),
    ],
    "business_rules": [
        "Appointments start between 08:00 and 17:00 on the hour or half hour, end by 18:00, lie "
        "in the future and never overlap another booked or checked-in appointment of the same "
        "dentist.",
        "Each procedure takes a set time: checkup 30 minutes, cleaning 45, filling 60, "
        "extraction 60, root canal 90.",
        "Hygienists perform only checkups and cleanings; dentists who are not active take no "
        "bookings.",
        "Archived patients cannot book, and a patient whose balance due is over 200.00 must pay "
        "before booking.",
        "Only booked appointments can be rescheduled or cancelled, and only at least 24 hours "
        "before they start.",
        "A patient is checked in only for a booked appointment on the day it takes place.",
        "Only checked-in appointments can be completed; completing one issues an invoice for the "
        "procedure's fee (checkup 80, cleaning 120, filling 180, extraction 250, root canal 900), "
        "of which insurance pays 0%, 50% or 80% (plan none, basic, premium), and adds the "
        "patient's share to their balance.",
        "Payments are positive, at most what is still owed on the invoice, and reduce the "
        "patient's balance; an invoice paid in full is marked paid.",
        "Insurance plans are none, basic or premium.",
    ],
}
