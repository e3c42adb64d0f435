"""Design 1: a community blood bank (donors, donation appointments, blood units with expiry
dates, hospital requests), its ABO/Rh compatibility kept as the model assumes it may: a tuple
of blood types and a table of tuples as class constants."""

from envmill.tasks.offline_llm.model_style.blood_bank import donor_tools, questions, unit_tools
from envmill.tasks.offline_llm.model_style.blood_bank import tasks as changes
from envmill.tasks.offline_llm.model_style.blood_bank.plan import PLAN
from envmill.tasks.offline_llm.model_style.blood_bank.probes import NEGATIVES, probes
from envmill.tasks.offline_llm.model_style.blood_bank.state_code import STATE_CODE
from envmill.tasks.offline_llm.model_style.blood_bank.states import build_state
from envmill.tasks.offline_llm.model_style.design import Design

DESIGN = Design(
    key="blood_bank",
    words=frozenset("blood donor donors donation donations plasma transfusion hospital".split()),
    plan=PLAN,
    state_code=STATE_CODE,
    method_texts=(donor_tools.METHODS, unit_tools.METHODS),
    entities={
        "donor": ("get_donor_record", "search_donors_by_name", "register_new_donor"),
        "appointment": (
            "list_donor_appointments",
            "book_donation_slot",
            "cancel_donation_slot",
            "record_donation",
            "mark_donor_no_show",
        ),
        "blood_unit": (
            "get_blood_unit",
            "list_units_by_blood_type",
            "get_inventory_summary",
            "discard_unit",
        ),
        "hospital_request": (
            "get_hospital_request",
            "list_open_requests",
            "allocate_units",
            "fulfill_request",
        ),
    },
    queries=frozenset(
        {
            "get_donor_record",
            "search_donors_by_name",
            "list_donor_appointments",
            "get_blood_unit",
            "list_units_by_blood_type",
            "get_inventory_summary",
            "get_hospital_request",
            "list_open_requests",
        }
    ),
    build_state=build_state,
    probes=probes,
    negatives=NEGATIVES,
    tasks={
        "change": (
            changes.record_morning_donation,
            changes.cancel_future_appointment,
            changes.discard_expired_unit,
        ),
        "filtered_lookup": (
            changes.cancel_upcoming_of_regular,
            changes.allocate_urgent_of_hospital,
        ),
        "created_chain": (changes.register_and_book,),
        "conditional": (questions.allocate_if_stock, questions.book_if_rested),
        "disambiguation": (questions.book_the_right_namesake,),
        "answer": (questions.usable_stock, questions.unit_expiry, questions.last_donation),
        "refusal": (
            questions.book_deferred_donor,
            questions.cancel_completed_visit,
            questions.discard_issued_unit,
        ),
    },
)
