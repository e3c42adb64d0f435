"""How the model tests the tool library: a member free to borrow takes a tool off the shelf, a
second shelf tool goes for repair, the overdue loan comes back, a loan nobody waits behind is
renewed, and the free member joins the waiting list of a tool that is out."""

from __future__ import annotations

from typing import Any

from envmill.tasks.offline_llm.model_style.probing import Shown, call

NEGATIVES = {
    "search_tools": ({"category": "plumbing"}, "Fails: plumbing is not a category."),
    "return_tool": ({"loan_id": "LN-9999", "condition": "good"}, "Fails: no such loan."),
    "pay_late_fees": ({"member_id": "MB-9999", "amount": 5.0}, "Fails: unknown member."),
}


def probes(state: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    shown = Shown(state)
    member, tool = shown.first("members"), shown.first("tools")
    found = {
        "show_member_account": [
            call("show_member_account", "Returns the member.", member_id=member["member_id"])
        ],
        "find_members": [
            call(
                "find_members",
                "Finds the member by surname.",
                query=member["full_name"].split()[-1].lower(),
            )
        ],
        "enroll_new_member": [
            call(
                "enroll_new_member",
                "Signs up a new basic member.",
                full_name="Robin Ash",
                email="robin.ash@example.com",
                phone="+1-555-0147",
                tier="basic",
            )
        ],
        "get_tool": [call("get_tool", "Returns the tool.", tool_id=tool["tool_id"])],
        "search_tools": [
            call(
                "search_tools",
                "Lists the power tools on the shelf.",
                category="power",
                available_only=True,
            )  # fmt: skip
        ],
        "list_overdue_loans": [call("list_overdue_loans", "Lists the overdue loans.")],
    }
    return found | _member_changes(shown) | _loan_changes(shown)


def _member_changes(shown: Shown) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    owing = [m for m in shown.records("members") if m["late_fees_owed"] > 0]
    if owing:
        amount = min(owing[0]["late_fees_owed"], 5.0)
        found["pay_late_fees"] = [
            call(
                "pay_late_fees",
                "Takes part of what the member owes.",
                member_id=owing[0]["member_id"],
                amount=amount,
            )  # fmt: skip
        ]
    loans = shown.records("loans")
    if loans:
        found["list_loans_of_member"] = [
            call(
                "list_loans_of_member", "Lists the member's loans.", member_id=loans[0]["member_id"]
            )
        ]
    return found


def _loan_changes(shown: Shown) -> dict[str, list[dict[str, Any]]]:
    tools = shown.records("tools")
    members = shown.records("members")
    loans = [loan for loan in shown.records("loans") if loan["status"] == "active"]
    waiting = [r for r in shown.records("reservations") if r["status"] == "waiting"]
    queued = {r["tool_id"] for r in waiting}
    free = [t for t in tools if t["status"] == "available" and t["tool_id"] not in queued]
    out = {loan["tool_id"] for loan in loans}
    borrower = next(
        (m for m in members if m["status"] == "active" and m["late_fees_owed"] < 20), None
    )
    found: dict[str, list[dict[str, Any]]] = {}
    if borrower and free:
        found["check_out_tool"] = [
            call(
                "check_out_tool",
                f"Lends the {free[0]['name']} to a member in good standing.",
                member_id=borrower["member_id"],
                tool_id=free[0]["tool_id"],
            )  # fmt: skip
        ]
    if len(free) > 1:
        found["send_tool_for_repair"] = [
            call(
                "send_tool_for_repair",
                "Sends a shelf tool for repair.",
                tool_id=free[-1]["tool_id"],
            )  # fmt: skip
        ]
    renewable = [loan for loan in loans if loan["tool_id"] not in queued and loan["renewals"] == 0]
    renewable = [loan for loan in renewable if loan["due_on"] >= shown.state["current_time"][:10]]
    overdue = [loan for loan in loans if loan not in renewable]
    if renewable:
        found["extend_loan_by_a_week"] = [
            call(
                "extend_loan_by_a_week",
                "Renews a loan nobody waits behind.",
                loan_id=renewable[0]["loan_id"],
            )
        ]
    if overdue or renewable[1:]:
        back = (overdue or renewable[1:])[0]
        found["return_tool"] = [
            call(
                "return_tool",
                "Checks the tool back in, charging any late days.",
                loan_id=back["loan_id"],
                condition="good",
            )  # fmt: skip
        ]
    found |= _waiting_list(shown, borrower, out, renewable, waiting)
    return found


def _waiting_list(
    shown: Shown,
    borrower: dict[str, Any] | None,
    out: set[str],
    renewable: list[dict[str, Any]],
    waiting: list[dict[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    spared = {loan["tool_id"] for loan in renewable[:1]}
    theirs = {r["tool_id"] for r in waiting if borrower and r["member_id"] == borrower["member_id"]}
    wanted = sorted(out - spared - theirs)
    if borrower and wanted:
        found["reserve_tool"] = [
            call(
                "reserve_tool",
                "Puts the member on the waiting list of a tool that is out.",
                member_id=borrower["member_id"],
                tool_id=wanted[-1],
            )  # fmt: skip
        ]
    if waiting:
        found["cancel_tool_reservation"] = [
            call(
                "cancel_tool_reservation",
                "Takes a member off a waiting list.",
                reservation_id=waiting[0]["reservation_id"],
            )  # fmt: skip
        ]
        found["get_tool_waitlist"] = [
            call(
                "get_tool_waitlist", "Shows the queue for the tool.", tool_id=waiting[0]["tool_id"]
            )
        ]
    return found
