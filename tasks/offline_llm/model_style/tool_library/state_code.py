"""The tool library's state code as the model writes it: members with a tier and late fees,
tools with a condition and a deposit, loans and a waiting list, limits kept as a tuple of
categories and a per-tier table."""

STATE_CODE = r'''"""Neighbourhood tool-lending library: members, tools, loans and reservations."""

from datetime import date, datetime, timedelta
from typing import TypedDict


class Member(TypedDict):
    member_id: str
    full_name: str
    email: str
    phone: str
    tier: str  # basic | plus
    status: str  # active | suspended
    late_fees_owed: float
    joined_on: str  # YYYY-MM-DD


class Tool(TypedDict):
    tool_id: str
    name: str
    category: str  # one of CATEGORIES
    condition: str  # good | worn | needs_repair
    deposit: float
    status: str  # available | on_loan | in_repair | retired


class Loan(TypedDict):
    loan_id: str
    member_id: str
    tool_id: str
    borrowed_on: str  # YYYY-MM-DD
    due_on: str  # YYYY-MM-DD
    returned_on: str | None
    renewals: int
    late_fee: float
    status: str  # active | returned


class Reservation(TypedDict):
    reservation_id: str
    member_id: str
    tool_id: str
    created_at: str  # ISO 8601
    status: str  # waiting | fulfilled | cancelled


class ToolLendingLibrary:
    """A neighbourhood tool library lends drills, ladders, garden and cleaning tools to its
    members. Volunteers at the counter use it to sign members up, check tools out and in, renew
    loans, keep a waiting list for tools that are out, collect late fees and send worn tools for
    repair. It enforces membership limits, due dates and late fees, the waiting list and the
    tools' condition.

    Business rules:
    - Only active members may borrow or reserve tools.
    - A basic member holds at most 2 active loans at a time, a plus member at most 5.
    - A member who owes 20.00 or more in late fees cannot borrow until they pay.
    - Only available tools can be checked out; a tool someone is waiting for goes to the first
      member on its waiting list.
    - A loan lasts 7 days and can be renewed once, for another 7 days, only while it is not
      overdue and nobody is waiting for the tool.
    - A tool returned after its due date costs 2.50 per late day, added to the member's late
      fees.
    - A tool returned as needs_repair goes to repair; otherwise it is available again.
    - Tools can be reserved only while they are out (on loan or in repair); a member holds at
      most one waiting reservation per tool.
    - Payments are positive and at most what the member owes.
    - Only available tools can be sent for repair.
    """

    CATEGORIES = ("power", "hand", "garden", "ladders", "cleaning")
    CONDITIONS = ("good", "worn", "needs_repair")
    TIERS = ("basic", "plus")
    LOAN_LIMITS = {"basic": 2, "plus": 5}
    LOAN_DAYS = 7
    MAX_RENEWALS = 1
    LATE_FEE_PER_DAY = 2.5
    FEE_BLOCK = 20.0

    def __init__(self) -> None:
        self.members: dict[str, Member] = {}
        self.tools: dict[str, Tool] = {}
        self.loans: dict[str, Loan] = {}
        self.reservations: dict[str, Reservation] = {}
        self.next_member_number: int = 1
        self.next_loan_number: int = 1
        self.next_reservation_number: int = 1
        self.current_time: str = "2025-01-01T09:00:00"

    def _today(self) -> date:
        return datetime.fromisoformat(self.current_time).date()

    def _active_loans(self, member_id: str) -> list:
        return [
            loan
            for loan in self.loans.values()
            if loan["member_id"] == member_id and loan["status"] == "active"
        ]

    def _waiting(self, tool_id: str) -> list:
        queue = [
            r
            for r in self.reservations.values()
            if r["tool_id"] == tool_id and r["status"] == "waiting"
        ]
        return sorted(queue, key=lambda r: (r["created_at"], r["reservation_id"]))

    def _is_overdue(self, loan: Loan) -> bool:
        return loan["status"] == "active" and date.fromisoformat(loan["due_on"]) < self._today()
'''
