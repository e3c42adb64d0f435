"""The reference's closing message (DESIGN §3.4): what the solution changed, concretely, and
never one stock line."""

from __future__ import annotations

from envmill.tasks.rollout.closing import closing_message

INITIAL = {
    "current_time": "2025-03-10T09:00:00",
    "next_invoice": 3,
    "appointments": {"A2": {"status": "scheduled", "reason": "check-up"}},
    "invoices": {},
}
FINAL = {
    "current_time": "2025-03-10T09:05:00",
    "next_invoice": 4,
    "appointments": {"A2": {"status": "checked_in", "reason": "check-up"}},
    "invoices": {"INV3": {"invoice_id": "INV3", "appointment_id": "A2", "amount": 64.0}},
}


def test_it_names_each_changed_and_created_record_with_its_new_values():
    said = closing_message(INITIAL, FINAL, "s1")
    assert "ppointment A2 is now checked in" in said
    assert "invoice INV3 is created (amount $64.00)" in said, said
    assert "next invoice" not in said and "current time" not in said and "?" not in said


def test_the_wording_varies_with_the_seed_and_with_the_content():
    seeds = {closing_message(INITIAL, FINAL, f"s{i}") for i in range(12)}
    assert len(seeds) >= 4
    removed = {**INITIAL, "appointments": {}}
    assert "ppointment A2 is removed" in closing_message(INITIAL, removed, "s1")
    assert "Nothing needed to change" in closing_message(INITIAL, INITIAL, "s1")


def test_odd_values_read_as_a_person_reports_them():
    keyed = closing_message({"stock": {"apple": 5}}, {"stock": {"apple": 0}}, "s1")
    assert "tock apple is now 0" in keyed
    order = {"status": "open", "note": "gift", "total": 1.0}
    changed = {**order, "note": None, "total": 0.1 + 0.2}
    said = closing_message({"orders": {"O1": order}}, {"orders": {"O1": changed}}, "s1")
    assert "note of order O1 is now cleared" in said and "its total is now $0.30" in said
    assert "000" not in said


def test_a_record_made_and_then_changed_says_where_it_ended():
    made = {
        "name": "Ann",
        "email": "a@x.org",
        "phone": "555",
        "plan": "plus",
        "status": "cancelled",
    }
    said = closing_message({"members": {}}, {"members": {"M9": made}}, "s1")
    assert "Ann is registered as member M9, cancelled" in said, said


def test_dates_money_and_plurals_read_as_a_person_writes_them():
    slip = {"deductions": 500.0, "net_pay": 2000.0, "paid_on": None}
    done = {"deductions": 845.49, "net_pay": 1717.2, "paid_on": "2025-11-05"}
    said = closing_message({"payslips": {"PS5": slip}}, {"payslips": {"PS5": done}}, "s1")
    assert "deductions of payslip PS5 are now $845.49" in said, said
    assert "$845.49, its net pay is now $1,717.20, and" in said
    assert "and its payment date is now 5 Nov 2025" in said
    booked = {"visits": {"V1": {"status": "scheduled", "starts_at": "2025-11-05T10:45:00"}}}
    assert "5 Nov 2025 at 10:45" in closing_message({"visits": {}}, booked, "s2")


def test_it_reports_only_what_the_agent_could_know():
    """Ending a membership cancels its bookings too; the agent was shown the membership only,
    so the reply says nothing of the bookings (a claim no tool backed)."""
    before = {
        "members": {"M1": {"status": "active", "credits": 10}},
        "bookings": {"B1": {"status": "booked", "member_id": "M1"}},
    }
    after = {
        "members": {"M1": {"status": "cancelled", "credits": 0}},
        "bookings": {"B1": {"status": "cancelled", "member_id": "M1"}},
    }
    shown = [[{"member_id": "M1"}, {"success": True, "message": "Membership ended."}]]
    said = closing_message(before, after, "s1", shown)
    assert "ember M1 is now cancelled" in said and "B1" not in said and "credits" not in said
    with_credits = [[{"member_id": "M1"}, {"data": {"member_id": "M1", "credits": 0}}]]
    assert "credits" in closing_message(before, after, "s1", with_credits)
    assert "B1" in closing_message(before, after, "s1")  # nothing said of what was shown


def test_counts_are_not_money_and_odd_values_read_plainly():
    """From the break-it review: "$23.00" of leave, "$-12.50", a status lost past three fields,
    "is now ." and raw ISO or code values."""
    before = {"e": {"E1": {"leave_balance": 19, "heart_rate": 60, "net_pay": 10.0}}}
    after = {"e": {"E1": {"leave_balance": 23, "heart_rate": 72, "net_pay": -12.5}}}
    said = closing_message(before, after, "s")
    assert "$23" not in said and "$72" not in said and "-$12.50" in said, said
    claim = {"a": 1, "b": 2, "c": 3, "d": 4, "status": "open"}
    moved = {"a": 9, "b": 8, "c": 7, "d": 6, "status": "approved"}
    assert "C1 is now approved" in closing_message({"c": {"C1": claim}}, {"c": {"C1": moved}}, "s")
    cleared = closing_message({"o": {"O1": {"status": "x"}}}, {"o": {"O1": {"status": ""}}}, "s")
    assert "now ." not in cleared and "cleared" in cleared
    odd = {"due": "2025-11-05T10:45:00Z", "seen": "2025-11-06 09:30"}
    said = closing_message({"p": {"P1": {}}}, {"p": {"P1": odd}}, "s")
    assert "5 Nov 2025 at 10:45" in said and "6 Nov 2025 at 09:30" in said, said
    said = closing_message({"p": {"P1": {}}}, {"p": {"P1": {"status": "IN_TRANSIT"}}}, "s")
    assert "in transit" in said, said


def test_links_read_as_names_and_new_records_as_a_person_reports_them():
    """From the rating: "its adjuster id is now ADJ-001", "its decision time is now …" beside
    a new status, and a new booking that never names its member or class."""
    adjuster = {"A1": {"adjuster_id": "A1", "name": "Erin Ruiz"}}
    claim = {"status": "open", "adjuster_id": None, "decided_at": None}
    moved = {"status": "under_review", "adjuster_id": "A1", "decided_at": "2025-01-01T10:00:00"}
    said = closing_message(
        {"claims": {"C1": claim}, "adjusters": adjuster},
        {"claims": {"C1": moved}, "adjusters": adjuster},
        "s",
    )
    assert "laim C1 is now under review, and its adjuster is now Erin Ruiz" in said, said
    assert "2025" not in said and "A1" not in said
    gym = {"CL-7": {"class_id": "CL-7", "title": "Evening Stretch"}}
    member = {"member_id": "GM-5", "name": "Hunter Gomez", "email": "h@x.org", "status": "active"}
    booking = {"booking_id": "BK-9", "member_id": "GM-5", "class_id": "CL-7", "status": "booked"}
    said = closing_message(
        {"bookings": {}, "members": {}, "classes": gym},
        {"bookings": {"BK-9": booking}, "members": {"GM-5": member}, "classes": gym},
        "s",
    )
    assert said.index("Hunter Gomez is registered as member GM-5") < said.index("booking BK-9")
    assert "booking BK-9 is booked for Hunter Gomez (class Evening Stretch)" in said, said
    assert "h@x.org" not in said and "active" not in said


def test_a_change_that_reads_as_none_is_not_news():
    before = {"couriers": {"C1": {"earnings": 273.379, "status": "on_shift"}}}
    after = {"couriers": {"C1": {"earnings": 273.38, "status": "off_shift"}}}
    said = closing_message(before, after, "s")
    assert "off shift" in said and "273.38" not in said, said


def test_a_name_two_records_share_is_not_used_and_people_come_first():
    """From the break-it review: "its adjuster is now Emma Nelson" with two Emma Nelsons, "Fine
    FN-8 is unpaid for Market Square Garage" (the fine is the driver's), a clock stamp."""
    two = {"A1": {"name": "Emma Nelson"}, "A2": {"name": "Emma Nelson"}}
    before = {"current_time": "2025-03-01T09:00:00", "claims": {"C1": {"adjuster_id": None}}}
    after = {**before, "claims": {"C1": {"adjuster_id": "A2"}}, "adjusters": two}
    said = closing_message({**before, "adjusters": two}, after, "s")
    assert "A2" in said and "Emma Nelson" not in said, said
    lots = {"L4": {"name": "Market Square Garage"}}
    people = {"D1": {"name": "Ann Lee", "phone": "555-0101"}}
    fine = {
        "lot_id": "L4",
        "driver_id": "D1",
        "status": "unpaid",
        "issued_at": before["current_time"],
    }
    said = closing_message(
        {**before, "lots": lots, "drivers": people, "fines": {}},
        {**before, "lots": lots, "drivers": people, "fines": {"F8": fine}},
        "s",
    )
    assert "ine F8 is unpaid for Ann Lee (lot Market Square Garage)" in said, said
    assert "2025" not in said and "1 Mar" not in said
