"""The tool library's member and catalogue tools, as the model writes them."""

METHODS = r'''def show_member_account(self, member_id: str) -> dict:
    """Fetch a member's profile, including how many tools they have out.

    Args:
        member_id (str): The member's id, e.g. "MB-0012".

    Returns:
        dict: {"success": True, "data": <member plus "active_loans">} or
        {"success": False, "error": ...}.

    Constraints:
        - The member must exist.
    """
    member = self.members.get(member_id)
    if member is None:
        return {"success": False, "error": f"Member {member_id} not found"}
    return {"success": True, "data": {**member, "active_loans": len(self._active_loans(member_id))}}


def find_members(self, query: str) -> dict:
    """Search members by part of their name or email address.

    Args:
        query (str): Text to look for in the name or email, e.g. "okafor".

    Returns:
        dict: {"success": True, "data": [<member>, ...]} or {"success": False, "error": ...}.

    Constraints:
        - The query must not be blank.
    """
    if not isinstance(query, str) or not query.strip():
        return {"success": False, "error": "query must not be blank"}
    needle = query.strip().lower()
    hits = [
        dict(m)
        for m in self.members.values()
        if needle in m["full_name"].lower() or needle in m["email"].lower()
    ]
    return {"success": True, "data": hits}


def enroll_new_member(self, full_name: str, email: str, phone: str, tier: str) -> dict:
    """Sign up a new member.

    Args:
        full_name (str): The member's full name.
        email (str): Email address; must not belong to another member.
        phone (str): Contact phone number.
        tier (str): Membership tier: basic or plus.

    Returns:
        dict: {"success": True, "message": ..., "data": <new member>} or
        {"success": False, "error": ...}.

    Constraints:
        - The tier must be basic or plus, and the email must be new to the library.
    """
    if not isinstance(full_name, str) or not full_name.strip():
        return {"success": False, "error": "full_name is required"}
    if not isinstance(email, str) or "@" not in email:
        return {"success": False, "error": "A valid email address is required"}
    if tier not in self.TIERS:
        return {"success": False, "error": f"Unknown tier '{tier}'; use basic or plus"}
    if any(m["email"].lower() == email.strip().lower() for m in self.members.values()):
        return {"success": False, "error": f"{email} already belongs to a member"}
    member_id = f"MB-{self.next_member_number:04d}"
    self.next_member_number += 1
    member: Member = {
        "member_id": member_id,
        "full_name": full_name.strip(),
        "email": email.strip(),
        "phone": str(phone).strip(),
        "tier": tier,
        "status": "active",
        "late_fees_owed": 0.0,
        "joined_on": self._today().isoformat(),
    }
    self.members[member_id] = member
    return {"success": True, "message": f"Welcome aboard, {member_id}", "data": dict(member)}


def pay_late_fees(self, member_id: str, amount: float) -> dict:
    """Take a payment towards a member's late fees.

    Args:
        member_id (str): The paying member.
        amount (float): Amount paid, in dollars.

    Returns:
        dict: {"success": True, "message": ..., "data": <member>} or
        {"success": False, "error": ...}.

    Constraints:
        - Payments are positive and at most what the member owes.
    """
    member = self.members.get(member_id)
    if member is None:
        return {"success": False, "error": f"Member {member_id} not found"}
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount <= 0:
        return {"success": False, "error": "amount must be a positive number"}
    owed = member["late_fees_owed"]
    if amount - owed > 0.005:
        error = f"Member owes only ${owed:.2f}; cannot take ${amount:.2f}"
        return {"success": False, "error": error}
    member["late_fees_owed"] = round(owed - amount, 2)
    message = f"Received ${amount:.2f}; ${member['late_fees_owed']:.2f} still owed"
    return {"success": True, "message": message, "data": dict(member)}


def get_tool(self, tool_id: str) -> dict:
    """Fetch one tool from the catalogue.

    Args:
        tool_id (str): The tool's id, e.g. "TL-0031".

    Returns:
        dict: {"success": True, "data": <tool>} or {"success": False, "error": ...}.

    Constraints:
        - The tool must exist.
    """
    tool = self.tools.get(tool_id)
    if tool is None:
        return {"success": False, "error": f"Tool {tool_id} not found"}
    return {"success": True, "data": dict(tool)}


def search_tools(
    self, keyword: str | None = None, category: str | None = None, available_only: bool = False
) -> dict:
    """Browse the catalogue by keyword and category.

    Args:
        keyword (str): Text to look for in the tool's name, e.g. "drill".
        category (str): Only this category: power, hand, garden, ladders or cleaning.
        available_only (bool): Only tools that can be borrowed right now.

    Returns:
        dict: {"success": True, "data": [<tool>, ...]} or {"success": False, "error": ...}.

    Constraints:
        - A category filter must be one of the library's categories.
    """
    if category is not None and category not in self.CATEGORIES:
        return {"success": False, "error": f"Unknown category '{category}'"}
    needle = (keyword or "").strip().lower()
    found = [
        dict(t)
        for t in self.tools.values()
        if needle in t["name"].lower()
        and (category is None or t["category"] == category)
        and (not available_only or t["status"] == "available")
    ]
    return {"success": True, "data": found}


def send_tool_for_repair(self, tool_id: str) -> dict:
    """Take an available tool off the shelf and send it for repair.

    Args:
        tool_id (str): The tool to repair.

    Returns:
        dict: {"success": True, "message": ..., "data": <tool>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only available tools can be sent for repair.
    """
    tool = self.tools.get(tool_id)
    if tool is None:
        return {"success": False, "error": f"Tool {tool_id} not found"}
    if tool["status"] != "available":
        return {"success": False, "error": f"{tool['name']} is {tool['status']}, not on the shelf"}
    tool["status"] = "in_repair"
    tool["condition"] = "needs_repair"
    return {"success": True, "message": f"{tool['name']} sent for repair", "data": dict(tool)}
'''
