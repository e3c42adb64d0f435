"""Design 3: a dental clinic's front desk (patients with an insurance plan and a balance,
dentists and hygienists, the appointment book, invoices split with the insurer), its fee
schedule, procedure lengths and coverage kept as class tables."""

from envmill.tasks.offline_llm.model_style.dental_clinic import (
    appointment_tools,
    patient_tools,
    questions,
    tasks,
)
from envmill.tasks.offline_llm.model_style.dental_clinic.plan import PLAN
from envmill.tasks.offline_llm.model_style.dental_clinic.probes import NEGATIVES, probes
from envmill.tasks.offline_llm.model_style.dental_clinic.state_code import STATE_CODE
from envmill.tasks.offline_llm.model_style.dental_clinic.states import build_state
from envmill.tasks.offline_llm.model_style.design import Design

DESIGN = Design(
    key="dental_clinic",
    words=frozenset("dental dentist dentists teeth tooth orthodontic hygienist clinic".split()),
    plan=PLAN,
    state_code=STATE_CODE,
    method_texts=(patient_tools.METHODS, appointment_tools.METHODS),
    entities={
        "patient": (
            "get_patient_file",
            "find_patient_by_name",
            "add_new_patient",
            "update_insurance",
        ),
        "dentist": ("list_dentists", "get_dentist_schedule"),
        "appointment": (
            "view_appointment",
            "list_appointments_for_patient",
            "schedule_dental_visit",
            "move_dental_visit",
            "cancel_dental_visit",
            "check_in_for_visit",
            "complete_dental_visit",
        ),
        "invoice": ("get_invoice_details", "list_open_invoices", "post_patient_payment"),
    },
    queries=frozenset(
        {
            "get_patient_file",
            "find_patient_by_name",
            "list_dentists",
            "get_dentist_schedule",
            "view_appointment",
            "list_appointments_for_patient",
            "get_invoice_details",
            "list_open_invoices",
        }
    ),
    build_state=build_state,
    probes=probes,
    negatives=NEGATIVES,
    tasks={
        "change": (tasks.check_in_arrival, tasks.close_visit, tasks.move_visit, tasks.switch_plan),
        "filtered_lookup": (tasks.cancel_the_booked_one, tasks.settle_the_rest),
        "created_chain": (tasks.register_and_book,),
        "conditional": (questions.book_if_balance_low, questions.book_if_premium),
        "disambiguation": (questions.book_the_right_namesake,),
        "answer": (tasks.balance_question, questions.next_visit),
        "refusal": (
            questions.book_archived,
            questions.book_over_balance,
            questions.late_cancellation,
        ),
    },
)
