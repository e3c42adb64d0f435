"""The tool library's requests that hinge on something read first: a member's fees, a waiting
list, a shared name, a question, or a rule that says no."""

from __future__ import annotations

from typing import Any

from envmill.tasks.offline_llm.model_style.scene import Scene, View, say_money, step
from envmill.tasks.offline_llm.model_style.tool_library.tasks import (
    RULES,
    _active,
    _keyword,
    _member,
    _tool,
    _unique,
    _waited_for,
)


def _shelf_tool(view: View) -> dict[str, Any] | None:
    waited = _waited_for(view)
    return next(
        (
            t
            for t in view.records("tools")
            if t["status"] == "available" and t["tool_id"] not in waited
        ),
        None,
    )


def lend_if_fees_low(view: View) -> Scene | None:
    """Conditional: lend only if the member owes under the fee limit."""
    tool = _shelf_tool(view)
    for member in view.records("members"):
        fees, active = member["late_fees_owed"], member["status"] == "active"
        if not (active and 0 < fees < 20 and _unique(view, member)) or tool is None:
            continue
        return Scene(
            task=f"{member['full_name']} wants to borrow the {tool['name'].lower()}. If they owe "
            "less than $20 in late fees, check it out to them; otherwise just tell me what they "
            "owe.",
            steps=[
                step("find_members", query=member["full_name"]),
                step("search_tools", keyword=_keyword(tool)),
                step("check_out_tool", member_id=member["member_id"], tool_id=tool["tool_id"]),
            ],
            expected_answer={"type": "money", "value": fees},
            reply=f"{member['full_name']} owes {say_money(fees)} in late fees, under the limit, "
            f"so I checked the {tool['name'].lower()} out to them.",
        )
    return None


def renew_if_nobody_waits(view: View) -> Scene | None:
    """Conditional: renew only if the waiting list is empty."""
    waited = _waited_for(view)
    for loan in _active(view, overdue=False):
        member = _member(view, loan["member_id"])
        if loan["tool_id"] in waited or loan["renewals"] or not _unique(view, member):
            continue
        tool = _tool(view, loan["tool_id"])
        return Scene(
            task=f"{member['full_name']} would like another week with the "
            f"{tool['name'].lower()}. If nobody is waiting for it, renew the loan; if someone "
            "is, tell me how many people are in the queue.",
            steps=[
                step("find_members", query=member["full_name"]),
                step("list_loans_of_member", member_id=member["member_id"], status="active"),
                step("get_tool_waitlist", tool_id=tool["tool_id"]),
                step("extend_loan_by_a_week", loan_id=loan["loan_id"]),
            ],
            expected_answer={"type": "count", "value": 0},
            reply=f"Nobody is waiting for the {tool['name'].lower()}, so I renewed "
            f"{member['full_name']}'s loan for another week.",
        )
    return None


def lend_to_the_right_namesake(view: View) -> Scene | None:
    """Disambiguation: two members share a name; the email tells them apart."""
    tool = _shelf_tool(view)
    members = view.records("members")
    for member in members:
        twins = [m for m in members if m["full_name"] == member["full_name"]]
        if len(twins) < 2 or tool is None or member["status"] != "active":
            continue
        return Scene(
            task=f"Please lend the {tool['name'].lower()} to {member['full_name']}, the one "
            f"whose email is {member['email']} (there are two of them).",
            chat="Could you lend a tool to one of our members? Careful, two members share "
            "the name.",
            facts={
                "member_name": member["full_name"],
                "email": member["email"],
                "tool": tool["name"],
            },  # fmt: skip
            steps=[
                step("find_members", query=member["full_name"]),
                step("search_tools", keyword=_keyword(tool)),
                step("check_out_tool", member_id=member["member_id"], tool_id=tool["tool_id"]),
            ],
        )
    return None


def fees_owed(view: View) -> Scene | None:
    """Answer: what a member owes."""
    owing = [m for m in view.records("members") if m["late_fees_owed"] > 0 and _unique(view, m)]
    member = view.pick(owing)
    if member is None:
        return None
    owed = member["late_fees_owed"]
    return Scene(
        task=f"How much does {member['full_name']} owe us in late fees?",
        steps=[step("find_members", query=member["full_name"])],
        expected_answer={"type": "money", "value": owed},
        reply=f"{member['full_name']} owes {say_money(owed)} in late fees.",
    )


def overdue_count(view: View) -> Scene | None:
    """Answer: how many loans are overdue."""
    count = len(_active(view, overdue=True))
    return Scene(
        task="How many loans are overdue right now? Just the number, please.",
        steps=[step("list_overdue_loans")],
        expected_answer={"type": "count", "value": count},
        reply=f"{count} loan{'s are' if count != 1 else ' is'} overdue right now.",
    )


def _refusal(
    rule_id: str, condition: str, triggers: list, policy: str, action: str, targets: tuple = ()
) -> dict:
    rule = {"rule_id": rule_id, "condition": condition, "triggers": triggers, "policy": policy}
    return {"rules": [rule], "action": action, "targets": list(targets)}


def borrow_while_owing(view: View) -> Scene | None:
    """Refusal: fees at or over the limit block borrowing."""
    tool = _shelf_tool(view)
    owing = [m for m in view.records("members") if m["late_fees_owed"] >= 20 and _unique(view, m)]
    member = view.pick(owing)
    if member is None or tool is None:
        return None
    owed = member["late_fees_owed"]
    return Scene(
        task=f"{member['full_name']} would like to borrow the {tool['name'].lower()} today.",
        chat="A member would like to borrow a tool today.",
        facts={"member_name": member["full_name"], "tool": tool["name"]},
        steps=[step("find_members", query=member["full_name"])],
        refusal=_refusal(
            "fee_limit",
            f"A member who owes 20.00 or more in late fees cannot borrow; they owe {owed:.2f}.",
            [owed],
            RULES[2],
            "lend",
            ("on_loan",),
        ),
        reply=f"I can't lend it to {member['full_name']} yet: they owe {say_money(owed)} in late "
        "fees, and members who owe $20 or more can't borrow until they pay.",
    )


def borrow_while_suspended(view: View) -> Scene | None:
    """Refusal: a suspended member cannot borrow."""
    tool = _shelf_tool(view)
    suspended = [m for m in view.records("members") if m["status"] == "suspended"]
    member = view.pick([m for m in suspended if _unique(view, m)])
    if member is None or tool is None:
        return None
    return Scene(
        task=f"Please check the {tool['name'].lower()} out to {member['full_name']}.",
        steps=[step("find_members", query=member["full_name"])],
        refusal=_refusal(
            "active_members_only",
            "Only active members may borrow; this membership is suspended.",
            ["suspended"],
            RULES[0],
            "lend",
            ("on_loan",),
        ),
        reply=f"I can't check it out: {member['full_name']}'s membership is suspended, and only "
        "active members may borrow tools.",
    )


def renew_with_a_queue(view: View) -> Scene | None:
    """Refusal: nobody may renew a tool someone is waiting for."""
    waited = _waited_for(view)
    loans = [x for x in _active(view, overdue=False) if x["tool_id"] in waited]
    loan = next((x for x in loans if _unique(view, _member(view, x["member_id"]))), None)
    if loan is None:
        return None
    member, tool = _member(view, loan["member_id"]), _tool(view, loan["tool_id"])
    return Scene(
        task=f"{member['full_name']} asked to keep the {tool['name'].lower()} one more week; "
        "can you renew it?",
        steps=[
            step("find_members", query=member["full_name"]),
            step("list_loans_of_member", member_id=member["member_id"], status="active"),
            step("get_tool_waitlist", tool_id=tool["tool_id"]),
        ],
        refusal=_refusal(
            "no_renewal_with_waitlist",
            "A loan cannot be renewed while another member is waiting for the tool.",
            ["waiting"],
            RULES[4],
            "renew",
        ),
        reply=f"I can't renew it: another member is waiting for the {tool['name'].lower()}, and "
        "loans can't be renewed while someone is on the waiting list.",
    )
