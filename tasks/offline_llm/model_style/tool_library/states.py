"""A Saturday morning at the tool library, as the model fills it: members in every situation the
counter meets (one free to borrow, one with a loan to renew, one overdue, one blocked by fees,
one suspended, one at the basic limit, one on a waiting list), tools on the shelf, out, in
repair and retired, and the loans and waiting list behind them."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from envmill.tasks.offline_llm.model_style.people import Inventor, first_number, numbered

# name, category, deposit; the order is the shelf order the loans below refer to
TOOLS = (
    ("Cordless drill", "power", 40.0),
    ("Extension ladder (6 m)", "ladders", 60.0),
    ("Pressure washer", "cleaning", 80.0),
    ("Wet tile saw", "power", 90.0),
    ("Lawn aerator", "garden", 35.0),
    ("Hedge trimmer", "garden", 30.0),
    ("Stud finder", "hand", 10.0),
    ("Carpet cleaner", "cleaning", 50.0),
    ("Socket set", "hand", 15.0),
    ("Belt sander (old)", "power", 20.0),
    ("Orbital sander", "power", 30.0),
)
TOOL_STATUS = ("available", "on_loan", "on_loan", "on_loan", "available", "in_repair",
               "on_loan", "on_loan", "available", "retired", "available")  # fmt: skip
# member, tool, borrowed (days ago), returned (days ago) or None
LOANS = ((1, 1, 3, None), (2, 2, 12, None), (5, 3, 2, None), (7, 6, 1, None), (7, 7, 4, None),
         (2, 0, 27, 20), (0, 8, 30, 24))  # fmt: skip
# member, tool, hours ago, status
RESERVATIONS = ((6, 3, 20, "waiting"), (0, 5, 50, "waiting"), (3, 1, 70, "cancelled"),
                (1, 0, 400, "fulfilled"))  # fmt: skip
MEMBERS = 8  # 0 free, 1 renews, 2 overdue, 3 owes fees, 4 suspended, 5 tool wanted, 6 waits, 7 full


def build_state(seed: int, scenario: int, kind: str) -> dict[str, Any]:
    people = Inventor(seed * 104729 + scenario)
    today = date(2025, 3, 1) + timedelta(days=seed % 200 + 19 * (scenario + 1))
    now = datetime.combine(today, datetime.min.time()).replace(hour=10)
    first = first_number(scenario)
    members = _members(people, today, first, kind == "disambiguation")
    tools = [
        {
            "tool_id": tool_id,
            "name": name,
            "category": category,
            "condition": "worn" if status == "in_repair" else "good",
            "deposit": deposit,
            "status": status,
        }
        for tool_id, (name, category, deposit), status in zip(
            numbered("TL", first, len(TOOLS)), TOOLS, TOOL_STATUS, strict=True
        )
    ]
    tools[5]["condition"] = "needs_repair"
    loans = _loans(members, tools, today, first)
    reservations = _reservations(members, tools, now, first)
    return {
        "members": {m["member_id"]: m for m in members},
        "tools": {t["tool_id"]: t for t in tools},
        "loans": {loan["loan_id"]: loan for loan in loans},
        "reservations": {r["reservation_id"]: r for r in reservations},
        "next_member_number": first + len(members),
        "next_loan_number": first + len(loans),
        "next_reservation_number": first + len(reservations),
        "current_time": now.isoformat(),
    }


def _members(people: Inventor, today: date, first: int, namesake: bool) -> list[dict[str, Any]]:
    fees = {1: 7.5, 3: 27.5, 4: 12.5}
    members = []
    for index, member_id in enumerate(numbered("MB", first, MEMBERS + namesake)):
        name = people.name()
        members.append(
            {
                "member_id": member_id,
                "full_name": name,
                "email": f"{name.lower().replace(' ', '.')}{people.between(1, 99)}@example.net",
                "phone": people.phone(),
                "tier": "plus" if index in (1, 5) else "basic",
                "status": "suspended" if index == 4 else "active",
                "late_fees_owed": fees.get(index, 0.0),
                "joined_on": (today - timedelta(days=people.between(30, 900))).isoformat(),
            }
        )
    if namesake:  # a second member under the first one's name
        twin = members[-1]
        twin["full_name"] = members[0]["full_name"]
        twin["email"] = f"{twin['full_name'].split()[0].lower()}.home@example.org"
    return members


def _loans(
    members: list[dict[str, Any]], tools: list[dict[str, Any]], today: date, first: int
) -> list[dict[str, Any]]:
    loans = []
    for loan_id, (member, tool, ago, back) in zip(
        numbered("LN", first, len(LOANS)), LOANS, strict=True
    ):
        borrowed = today - timedelta(days=ago)
        loans.append(
            {
                "loan_id": loan_id,
                "member_id": members[member]["member_id"],
                "tool_id": tools[tool]["tool_id"],
                "borrowed_on": borrowed.isoformat(),
                "due_on": (borrowed + timedelta(days=7)).isoformat(),
                "returned_on": None if back is None else (today - timedelta(days=back)).isoformat(),
                "renewals": 0,
                "late_fee": 0.0,
                "status": "active" if back is None else "returned",
            }
        )
    return loans


def _reservations(
    members: list[dict[str, Any]], tools: list[dict[str, Any]], now: datetime, first: int
) -> list[dict[str, Any]]:
    return [
        {
            "reservation_id": reservation_id,
            "member_id": members[member]["member_id"],
            "tool_id": tools[tool]["tool_id"],
            "created_at": (now - timedelta(hours=hours)).isoformat(),
            "status": status,
        }
        for reservation_id, (member, tool, hours, status) in zip(
            numbered("RS", first, len(RESERVATIONS)), RESERVATIONS, strict=True
        )
    ]
