"""Design 2: a neighbourhood tool-lending library (members with tiers and late fees, tools with
a condition, loans, a waiting list), its limits kept as a tuple of categories and a per-tier
table."""

from envmill.tasks.offline_llm.model_style.design import Design
from envmill.tasks.offline_llm.model_style.tool_library import (
    loan_tools,
    member_tools,
    questions,
    tasks,
)
from envmill.tasks.offline_llm.model_style.tool_library.plan import PLAN
from envmill.tasks.offline_llm.model_style.tool_library.probes import NEGATIVES, probes
from envmill.tasks.offline_llm.model_style.tool_library.state_code import STATE_CODE
from envmill.tasks.offline_llm.model_style.tool_library.states import build_state

DESIGN = Design(
    key="tool_library",
    words=frozenset("tool tools lending lend borrow borrowing library drill ladder".split()),
    plan=PLAN,
    state_code=STATE_CODE,
    method_texts=(member_tools.METHODS, loan_tools.METHODS),
    entities={
        "member": ("show_member_account", "find_members", "enroll_new_member", "pay_late_fees"),
        "tool": ("get_tool", "search_tools", "send_tool_for_repair"),
        "loan": (
            "list_loans_of_member",
            "list_overdue_loans",
            "check_out_tool",
            "return_tool",
            "extend_loan_by_a_week",
        ),
        "reservation": ("get_tool_waitlist", "reserve_tool", "cancel_tool_reservation"),
    },
    queries=frozenset(
        {
            "show_member_account",
            "find_members",
            "get_tool",
            "search_tools",
            "list_loans_of_member",
            "list_overdue_loans",
            "get_tool_waitlist",
        }
    ),
    build_state=build_state,
    probes=probes,
    negatives=NEGATIVES,
    tasks={
        "change": (tasks.check_in_overdue, tasks.renew_for_another_week, tasks.pay_toward_fees),
        "filtered_lookup": (tasks.return_the_overdue_one, tasks.lend_the_sander_on_the_shelf),
        "created_chain": (tasks.sign_up_and_lend,),
        "conditional": (questions.lend_if_fees_low, questions.renew_if_nobody_waits),
        "disambiguation": (questions.lend_to_the_right_namesake,),
        "answer": (questions.fees_owed, tasks.when_due, questions.overdue_count),
        "refusal": (
            questions.borrow_while_owing,
            questions.borrow_while_suspended,
            questions.renew_with_a_queue,
        ),
    },
)
