"""What volunteers at the tool library's counter ask for, as the model writes it per kind of
scenario: members named as the volunteer knows them, tools by what they are."""

from __future__ import annotations

from typing import Any

from envmill.tasks.offline_llm.model_style.scene import (
    Scene,
    View,
    say_date,
    say_money,
    step,
)
from envmill.tasks.offline_llm.model_style.tool_library.plan import PLAN

RULES = PLAN["business_rules"]


def _member(view: View, member_id: str) -> dict[str, Any]:
    return view.get("members", member_id) or {}


def _tool(view: View, tool_id: str) -> dict[str, Any]:
    return view.get("tools", tool_id) or {}


def _unique(view: View, member: dict[str, Any]) -> bool:
    names = [m["full_name"] for m in view.records("members")]
    return names.count(member.get("full_name")) == 1


def _active(view: View, overdue: bool) -> list[dict[str, Any]]:
    today = view.today.isoformat()
    return [
        loan
        for loan in view.records("loans")
        if loan["status"] == "active" and (loan["due_on"] < today) == overdue
    ]


def _waited_for(view: View) -> set[str]:
    return {r["tool_id"] for r in view.records("reservations") if r["status"] == "waiting"}


def _keyword(tool: dict[str, Any]) -> str:
    """The word a volunteer searches the catalogue by: the last word of the tool's name."""
    return tool["name"].split(" (")[0].split()[-1].lower()


def check_in_overdue(view: View) -> Scene | None:
    loan = view.pick(_active(view, overdue=True))
    if loan is None:
        return None
    member, tool = _member(view, loan["member_id"]), _tool(view, loan["tool_id"])
    return Scene(
        task=f"Hi! {member['full_name']} just dropped off the {tool['name'].lower()} they "
        "borrowed. It's a bit late but in good shape. Please check it back in.",
        chat="Someone just brought a tool back to the counter. Can you check it in?",
        facts={"member_name": member["full_name"], "tool": tool["name"], "condition": "good"},
        steps=[
            step("find_members", query=member["full_name"]),
            step("list_loans_of_member", member_id=member["member_id"], status="active"),
            step("return_tool", loan_id=loan["loan_id"], condition="good"),
        ],
    )


def renew_for_another_week(view: View) -> Scene | None:
    waited = _waited_for(view)
    loans = [
        loan
        for loan in _active(view, overdue=False)
        if loan["renewals"] == 0 and loan["tool_id"] not in waited
    ]
    loan = next((x for x in loans if _unique(view, _member(view, x["member_id"]))), None)
    if loan is None:
        return None
    member, tool = _member(view, loan["member_id"]), _tool(view, loan["tool_id"])
    return Scene(
        task=f"{member['full_name']} asked if they can keep the {tool['name'].lower()} for "
        "another week. Please renew that loan.",
        chat="A member wants to keep a tool they borrowed for another week.",
        facts={"member_name": member["full_name"], "tool": tool["name"]},
        steps=[
            step("find_members", query=member["full_name"]),
            step("list_loans_of_member", member_id=member["member_id"], status="active"),
            step("extend_loan_by_a_week", loan_id=loan["loan_id"]),
        ],
    )


def pay_toward_fees(view: View) -> Scene | None:
    owing = [m for m in view.records("members") if m["late_fees_owed"] >= 10 and _unique(view, m)]
    member = view.pick(owing)
    if member is None:
        return None
    amount = 10.0
    return Scene(
        task=f"{member['full_name']} is paying {say_money(amount)} in cash towards their late "
        "fees. Please record it.",
        chat="A member is paying off some of their late fees at the counter.",
        facts={"member_name": member["full_name"], "amount_paid": amount},
        steps=[
            step("find_members", query=member["full_name"]),
            step("pay_late_fees", member_id=member["member_id"], amount=amount),
        ],
    )


def return_the_overdue_one(view: View) -> Scene | None:
    """Filtered lookup: of a member's loans, the overdue one; it comes back broken."""
    for loan in _active(view, overdue=True):
        mine = [x for x in view.records("loans") if x["member_id"] == loan["member_id"]]
        member = _member(view, loan["member_id"])
        if len(mine) < 2 or not _unique(view, member):
            continue
        return Scene(
            task=f"{member['full_name']} is returning the tool they have overdue (just that one) "
            "and says it needs repair: the motor keeps cutting out.",
            steps=[
                step("find_members", query=member["full_name"]),
                step("list_loans_of_member", member_id=member["member_id"]),
                step("return_tool", loan_id=loan["loan_id"], condition="needs_repair"),
            ],
        )
    return None


def lend_the_sander_on_the_shelf(view: View) -> Scene | None:
    """Filtered lookup: two sanders in the catalogue, one on the shelf."""
    sanders = [t for t in view.records("tools") if _keyword(t) == "sander"]
    shelf = [t for t in sanders if t["status"] == "available"]
    member = next((m for m in view.records("members") if _free_to_borrow(view, m)), None)
    if len(sanders) < 2 or not shelf or member is None:
        return None
    return Scene(
        task=f"{member['full_name']} needs a sander for the weekend. Please lend them whichever "
        "sander is actually on the shelf.",
        chat="A member needs a sander for the weekend; lend them one that's on the shelf.",
        facts={"member_name": member["full_name"]},
        steps=[
            step("find_members", query=member["full_name"]),
            step("search_tools", keyword="sander"),
            step("check_out_tool", member_id=member["member_id"], tool_id=shelf[0]["tool_id"]),
        ],
    )


def _free_to_borrow(view: View, member: dict[str, Any]) -> bool:
    loans = [x for x in view.records("loans") if x["member_id"] == member["member_id"]]
    active = [x for x in loans if x["status"] == "active"]
    limit = {"basic": 2, "plus": 5}[member["tier"]]
    return (
        member["status"] == "active"
        and member["late_fees_owed"] < 20
        and len(active) < limit
        and _unique(view, member)
    )


def sign_up_and_lend(view: View) -> Scene | None:
    """Created chain: a new member, then their first loan."""
    waited = _waited_for(view)
    shelf = [t for t in view.records("tools") if t["status"] == "available"]
    tool = next((t for t in shelf if t["tool_id"] not in waited and _keyword(t) != "sander"), None)
    if tool is None:
        return None
    name = ("Dana Whitaker", "Luis Ferreira", "June Okoye", "Arjun Patel")[view.index % 4]
    email = f"{name.lower().replace(' ', '.')}@example.com"
    details = {"full_name": name, "email": email, "phone": "+1-555-0183", "tier": "basic"}
    return Scene(
        task=f"{name} wants to join (basic tier; email {email}, phone +1-555-0183) and take "
        f"the {tool['name'].lower()} home today. Please sign them up and check it out to them.",
        chat="A new neighbour wants to join and borrow a tool today. Can you set them up?",
        facts={**details, "tool": tool["name"]},
        steps=[
            step("enroll_new_member", **details),
            step("search_tools", keyword=_keyword(tool)),
            step("check_out_tool", member_id="$1.data.member_id", tool_id=tool["tool_id"]),
        ],
    )


def when_due(view: View) -> Scene | None:
    """Answer: a loan's due date."""
    loans = [
        x for x in _active(view, overdue=False) if _unique(view, _member(view, x["member_id"]))
    ]
    loan = view.pick(loans)
    if loan is None:
        return None
    member, tool = _member(view, loan["member_id"]), _tool(view, loan["tool_id"])
    return Scene(
        task=f"When is {member['full_name']}'s {tool['name'].lower()} due back?",
        steps=[
            step("find_members", query=member["full_name"]),
            step("list_loans_of_member", member_id=member["member_id"], status="active"),
        ],
        expected_answer={"type": "date", "value": loan["due_on"]},
        reply=f"The {tool['name'].lower()} {member['full_name']} has is due back on "
        f"{say_date(loan['due_on'])}.",
    )
