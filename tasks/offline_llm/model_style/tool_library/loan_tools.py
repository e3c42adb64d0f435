"""The tool library's loan and waiting-list tools, as the model writes them."""

METHODS = r'''from datetime import date, timedelta


def list_loans_of_member(self, member_id: str, status: str | None = None) -> dict:
    """List a member's loans, newest first.

    Args:
        member_id (str): The member whose loans to list.
        status (str): Only loans in this status: active or returned.

    Returns:
        dict: {"success": True, "data": [<loan plus "tool_name" and "overdue">, ...]} or
        {"success": False, "error": ...}.

    Constraints:
        - The member must exist; a status filter must be active or returned.
    """
    if member_id not in self.members:
        return {"success": False, "error": f"Member {member_id} not found"}
    if status is not None and status not in ("active", "returned"):
        return {"success": False, "error": "status must be active or returned"}
    rows = []
    for loan in self.loans.values():
        if loan["member_id"] != member_id or (status and loan["status"] != status):
            continue
        tool = self.tools.get(loan["tool_id"], {})
        rows.append({**loan, "tool_name": tool.get("name"), "overdue": self._is_overdue(loan)})
    rows.sort(key=lambda r: r["borrowed_on"], reverse=True)
    return {"success": True, "data": rows}


def list_overdue_loans(self) -> dict:
    """List every active loan past its due date, with the days overdue.

    Returns:
        dict: {"success": True, "data": [<loan plus "days_overdue">, ...]}.

    Constraints:
        - A loan is overdue when it is active and its due date is before today.
    """
    today = self._today()
    rows = [
        {**loan, "days_overdue": (today - date.fromisoformat(loan["due_on"])).days}
        for loan in self.loans.values()
        if self._is_overdue(loan)
    ]
    return {"success": True, "data": sorted(rows, key=lambda r: r["due_on"])}


def check_out_tool(self, member_id: str, tool_id: str) -> dict:
    """Lend a tool to a member for 7 days.

    Args:
        member_id (str): The borrowing member.
        tool_id (str): The tool to lend.

    Returns:
        dict: {"success": True, "message": ..., "data": <new loan>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only active members who owe less than 20.00 in late fees may borrow.
        - Basic members hold at most 2 active loans, plus members at most 5.
        - Only available tools can be lent; a tool with a waiting list goes to the first
          member on it.
    """
    member = self.members.get(member_id)
    tool = self.tools.get(tool_id)
    if member is None:
        return {"success": False, "error": f"Member {member_id} not found"}
    if tool is None:
        return {"success": False, "error": f"Tool {tool_id} not found"}
    if member["status"] != "active":
        error = f"{member['full_name']}'s membership is {member['status']}"
        return {"success": False, "error": error}
    if member["late_fees_owed"] >= self.FEE_BLOCK:
        owed = member["late_fees_owed"]
        error = f"Member owes ${owed:.2f} in late fees; please settle first"
        return {"success": False, "error": error}
    limit = self.LOAN_LIMITS[member["tier"]]
    if len(self._active_loans(member_id)) >= limit:
        error = f"{member['tier']} members can have {limit} tools out at once"
        return {"success": False, "error": error}
    if tool["status"] != "available":
        return {"success": False, "error": f"{tool['name']} is {tool['status']}"}
    queue = self._waiting(tool_id)
    if queue and queue[0]["member_id"] != member_id:
        error = f"{tool['name']} is held for the next member on its waiting list"
        return {"success": False, "error": error}
    today = self._today()
    loan_id = f"LN-{self.next_loan_number:04d}"
    self.next_loan_number += 1
    loan: Loan = {
        "loan_id": loan_id,
        "member_id": member_id,
        "tool_id": tool_id,
        "borrowed_on": today.isoformat(),
        "due_on": (today + timedelta(days=self.LOAN_DAYS)).isoformat(),
        "returned_on": None,
        "renewals": 0,
        "late_fee": 0.0,
        "status": "active",
    }
    self.loans[loan_id] = loan
    tool["status"] = "on_loan"
    if queue:
        queue[0]["status"] = "fulfilled"
    message = f"{tool['name']} lent until {loan['due_on']}"
    return {"success": True, "message": message, "data": dict(loan)}


def return_tool(self, loan_id: str, condition: str) -> dict:
    """Check a borrowed tool back in, charging late fees if it comes back after its due date.

    Args:
        loan_id (str): The loan being returned.
        condition (str): The tool's condition on return: good, worn or needs_repair.

    Returns:
        dict: {"success": True, "message": ..., "data": <loan>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only active loans can be returned.
        - Each late day costs 2.50, added to the member's late fees.
        - A tool returned as needs_repair goes to repair; otherwise it is available again.
    """
    loan = self.loans.get(loan_id)
    if loan is None:
        return {"success": False, "error": f"Loan {loan_id} not found"}
    if condition not in self.CONDITIONS:
        return {"success": False, "error": f"condition must be one of {', '.join(self.CONDITIONS)}"}
    if loan["status"] != "active":
        error = f"Loan {loan_id} was already returned on {loan['returned_on']}"
        return {"success": False, "error": error}
    today = self._today()
    late_days = max(0, (today - date.fromisoformat(loan["due_on"])).days)
    fee = round(late_days * self.LATE_FEE_PER_DAY, 2)
    loan["status"] = "returned"
    loan["returned_on"] = today.isoformat()
    loan["late_fee"] = fee
    member = self.members[loan["member_id"]]
    member["late_fees_owed"] = round(member["late_fees_owed"] + fee, 2)
    tool = self.tools[loan["tool_id"]]
    tool["condition"] = condition
    tool["status"] = "in_repair" if condition == "needs_repair" else "available"
    note = f" ({late_days} days late, ${fee:.2f} fee)" if late_days else ""
    return {"success": True, "message": f"{tool['name']} returned{note}", "data": dict(loan)}


def extend_loan_by_a_week(self, loan_id: str) -> dict:
    """Extend an active loan by another 7 days.

    Args:
        loan_id (str): The loan to renew.

    Returns:
        dict: {"success": True, "message": ..., "data": <loan>} or
        {"success": False, "error": ...}.

    Constraints:
        - A loan can be renewed once, only while it is not overdue and nobody is waiting for
          the tool.
    """
    loan = self.loans.get(loan_id)
    if loan is None:
        return {"success": False, "error": f"Loan {loan_id} not found"}
    if loan["status"] != "active":
        return {"success": False, "error": f"Loan {loan_id} is already returned"}
    if self._is_overdue(loan):
        return {"success": False, "error": f"Loan {loan_id} is overdue (due {loan['due_on']})"}
    if loan["renewals"] >= self.MAX_RENEWALS:
        return {"success": False, "error": f"Loan {loan_id} has already been renewed once"}
    if self._waiting(loan["tool_id"]):
        return {"success": False, "error": "Another member is waiting for this tool"}
    due = date.fromisoformat(loan["due_on"]) + timedelta(days=self.LOAN_DAYS)
    loan["due_on"] = due.isoformat()
    loan["renewals"] += 1
    message = f"Loan {loan_id} now due {loan['due_on']}"
    return {"success": True, "message": message, "data": dict(loan)}


def get_tool_waitlist(self, tool_id: str) -> dict:
    """Show who is waiting for a tool, first in line first.

    Args:
        tool_id (str): The tool whose waiting list to show.

    Returns:
        dict: {"success": True, "data": [<reservation>, ...]} or {"success": False, "error": ...}.

    Constraints:
        - The tool must exist.
    """
    if tool_id not in self.tools:
        return {"success": False, "error": f"Tool {tool_id} not found"}
    return {"success": True, "data": [dict(r) for r in self._waiting(tool_id)]}


def reserve_tool(self, member_id: str, tool_id: str) -> dict:
    """Put a member on the waiting list for a tool that is out.

    Args:
        member_id (str): The member who wants the tool.
        tool_id (str): The tool they are waiting for.

    Returns:
        dict: {"success": True, "message": ..., "data": <new reservation>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only active members may reserve, and only tools that are on loan or in repair.
        - A member holds at most one waiting reservation per tool.
    """
    member = self.members.get(member_id)
    tool = self.tools.get(tool_id)
    if member is None or tool is None:
        return {"success": False, "error": "Unknown member or tool"}
    if member["status"] != "active":
        error = f"{member['full_name']}'s membership is {member['status']}"
        return {"success": False, "error": error}
    if tool["status"] not in ("on_loan", "in_repair"):
        error = f"{tool['name']} is {tool['status']}; no need to reserve it"
        return {"success": False, "error": error}
    if any(r["member_id"] == member_id for r in self._waiting(tool_id)):
        return {"success": False, "error": "This member is already on the waiting list"}
    reservation_id = f"RS-{self.next_reservation_number:04d}"
    self.next_reservation_number += 1
    reservation: Reservation = {
        "reservation_id": reservation_id,
        "member_id": member_id,
        "tool_id": tool_id,
        "created_at": self.current_time,
        "status": "waiting",
    }
    self.reservations[reservation_id] = reservation
    place = len(self._waiting(tool_id))
    message = f"{member['full_name']} is number {place} on the list for {tool['name']}"
    return {"success": True, "message": message, "data": dict(reservation)}


def cancel_tool_reservation(self, reservation_id: str) -> dict:
    """Take a member off a tool's waiting list.

    Args:
        reservation_id (str): The reservation to cancel.

    Returns:
        dict: {"success": True, "message": ..., "data": <reservation>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only waiting reservations can be cancelled.
    """
    reservation = self.reservations.get(reservation_id)
    if reservation is None:
        return {"success": False, "error": f"Reservation {reservation_id} not found"}
    if reservation["status"] != "waiting":
        error = f"Reservation {reservation_id} is already {reservation['status']}"
        return {"success": False, "error": error}
    reservation["status"] = "cancelled"
    message = f"Reservation {reservation_id} cancelled"
    return {"success": True, "message": message, "data": dict(reservation)}
'''
