"""The reference's closing message (DESIGN §3.4): what the solution changed, concretely, and
never one stock line."""

from __future__ import annotations

import pytest

from envmill.tasks.rollout.closing import Done, _as_sentence, closing_message

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
    assert "ppointment A2" in said and "checked in" in said, said
    assert "nvoice INV3" in said and "created" in said and "for $64.00" in said, said
    assert "(" not in said
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
    assert (
        "Ann as member M9, cancelled" in said or "Ann is registered as member M9, cancelled" in said
    ), said


def test_dates_money_and_plurals_read_as_a_person_writes_them():
    slip = {"deductions": 500.0, "net_pay": 2000.0, "paid_on": None}
    done = {"deductions": 845.49, "net_pay": 1717.2, "paid_on": "2025-11-05"}
    said = closing_message({"payslips": {"PS5": slip}}, {"payslips": {"PS5": done}}, "s1")
    assert "ayslip PS5" in said and "deductions" in said and "$845.49" in said, said
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
    assert "ember M1" in said and "cancelled" in said, said
    assert "B1" not in said and "credits" not in said
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
    said = closing_message({"c": {"C1": claim}}, {"c": {"C1": moved}}, "s")
    assert "C1" in said and "approved" in said, said
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
    assert "laim C1 is" in said and "under review" in said, said
    assert ", and its adjuster is now Erin Ruiz" in said, said
    assert "2025" not in said and "A1" not in said
    gym = {"CL-7": {"class_id": "CL-7", "title": "Evening Stretch"}}
    member = {"member_id": "GM-5", "name": "Hunter Gomez", "email": "h@x.org", "status": "active"}
    booking = {"booking_id": "BK-9", "member_id": "GM-5", "class_id": "CL-7", "status": "booked"}
    said = closing_message(
        {"bookings": {}, "members": {}, "classes": gym},
        {"bookings": {"BK-9": booking}, "members": {"GM-5": member}, "classes": gym},
        "s",
    )
    assert said.index("Hunter Gomez") < said.index("ooking BK-9") and "member GM-5" in said
    assert "I've made booking BK-9 for Hunter Gomez, with class Evening Stretch" in said, said
    assert "h@x.org" not in said and "active" not in said


def test_a_change_that_reads_as_none_is_not_news():
    before = {"couriers": {"C1": {"earnings": 273.379, "status": "on_shift"}}}
    after = {"couriers": {"C1": {"earnings": 273.38, "status": "off_shift"}}}
    said = closing_message(before, after, "s")
    assert "off shift" in said and "273.38" not in said, said


def test_a_name_two_records_share_comes_with_its_id_and_people_come_first():
    """From the break-it review: "its adjuster is now Emma Nelson" with two Emma Nelsons says
    neither (now "Emma Nelson (A2)"; the bare id read as terse to raters), "Fine
    FN-8 is unpaid for Market Square Garage" (the fine is the driver's), a clock stamp."""
    two = {"A1": {"name": "Emma Nelson"}, "A2": {"name": "Emma Nelson"}}
    before = {"current_time": "2025-03-01T09:00:00", "claims": {"C1": {"adjuster_id": None}}}
    after = {**before, "claims": {"C1": {"adjuster_id": "A2"}}, "adjusters": two}
    said = closing_message({**before, "adjusters": two}, after, "s")
    assert "Emma Nelson (A2)" in said, said
    moved = {**two, "A2": {"name": "Emma Nelson", "phone": "555-0199"}}
    for pick in "abcdefgh":  # every way of saying a field's news
        said = closing_message({"adjusters": two}, {"adjusters": moved}, pick)
        assert "555-0199" in said and ")'s" not in said, said
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
    assert "ine F8 is unpaid for Ann Lee, with lot Market Square Garage" in said, said
    assert "2025" not in said and "1 Mar" not in said


def test_a_status_is_said_with_the_verb_a_person_uses():
    """From the rating: "Order O1 is now returned", "Leave request L2 is now approved" read as a
    field dump; a person says what they did, or that they marked what happened."""
    order = {"orders": {"O1": {"status": "pending"}}}
    done = [
        closing_message(order, {"orders": {"O1": {"status": "cancelled"}}}, f"s{i}")
        for i in range(8)
    ]
    assert all("cancelled" in said and "O1" in said for said in done)
    assert any("I've cancelled order O1" in said for said in done), done
    marked = closing_message(order, {"orders": {"O1": {"status": "delivered"}}}, "s")
    assert "delivered" in marked and "I've delivered" not in marked, marked
    held = closing_message(order, {"orders": {"O1": {"status": "on_hold"}}}, "s")
    assert "on hold" in held and "I've on" not in held, held


def test_a_new_record_s_values_are_worked_into_the_sentence():
    """From the rating: "(check-in date 3 Aug 2025, nights 3)", "(credits 55, price $43.03)";
    a value still at nothing ("tip $0.00") is no news."""
    guests = {"G1": {"name": "Pam Salas", "email": "p@x.org"}}
    stay = {"guest_id": "G1", "status": "booked", "check_in": "2025-08-03", "nights": 3}
    said = closing_message(
        {"guests": guests, "reservations": {}},
        {"guests": guests, "reservations": {"R9": stay}},
        "s",
    )
    assert "eservation R9 is booked for Pam Salas on 3 Aug 2025 for 3 nights" in said, said
    buy = {"status": "completed", "credits": 55, "price": 43.03, "tip": 0.0, "cabin": "premium"}
    said = closing_message({"purchases": {}}, {"purchases": {"P4": buy}}, "s")
    assert "(" not in said and "for $43.03" in said and "55 credits" in said, said
    assert "tip" not in said and "$0.00" not in said
    seats = {"status": "confirmed", "cabin": "premium", "seats": 2}
    said = closing_message({"bookings": {}}, {"bookings": {"B2": seats}}, "s")
    assert "a premium cabin and 2 seats" in said, said


def test_a_counter_beside_other_news_is_not_reported():
    """From the rating: "… capacity is now 65, and its enrolment count is now 2; enrolment E6
    is now dropped": the count is the system's."""
    before = {
        "courses": {"C1": {"capacity": 60, "enrolled": 3}},
        "enrolments": {"E6": {"status": "enrolled"}},
    }
    after = {
        "courses": {"C1": {"capacity": 65, "enrolled": 2}},
        "enrolments": {"E6": {"status": "dropped"}},
    }
    said = closing_message(before, after, "s")
    assert "65" in said and "dropped" in said and "nrolment E6" in said, said
    assert "count" not in said and " 2" not in said, said
    pause = closing_message(
        {"m": {"M1": {"status": "active", "pauses": 0}}},
        {"m": {"M1": {"status": "paused", "pauses": 1}}},
        "s",
    )
    assert "paused" in pause and "pauses" not in pause, pause
    alone = closing_message({"b": {"B1": {"copies": 3}}}, {"b": {"B1": {"copies": 4}}}, "s")
    assert "4" in alone, alone  # the only change is the news itself


def test_money_the_change_moved_on_another_record_is_named():
    """From the rating: "Order O1 is now returned" left out the refund to the customer's store
    credit; the amount is said only when a result showed it."""
    before = {
        "customers": {"C3": {"name": "Kevin Ball", "email": "k@x.org", "store_credit": 93.15}},
        "orders": {"O1": {"status": "delivered", "total": 220.4, "customer_id": "C3"}},
    }
    after = {
        "customers": {"C3": {"name": "Kevin Ball", "email": "k@x.org", "store_credit": 313.55}},
        "orders": {"O1": {"status": "returned", "total": 220.4, "customer_id": "C3"}},
    }
    result = {"data": {"order_id": "O1", "status": "returned"}}
    shown = [[{"order_id": "O1"}, result]]
    said = closing_message(before, after, "s", shown)  # no message told of the refund: unknown
    assert "returned" in said and "store credit" not in said, said
    result["message"] = "Return of order O1 accepted; refund credited."
    said = closing_message(before, after, "s", shown)
    assert "returned" in said and "store credit went up" in said, said
    assert "by $220.40" not in said and "Kevin Ball" not in said, said  # no result named him
    shown[0][1]["data"]["customer"] = "Kevin Ball"
    assert "Kevin Ball's store credit" in closing_message(before, after, "s", shown)
    listed = [[{}, {"data": [{"order_id": "O1", "total": 220.4}]}], *shown]
    assert "store credit went up by $220.40" in closing_message(before, after, "s", listed)
    assert "313.55" not in closing_message(before, after, "s", listed)


def test_what_a_message_told_of_other_records_is_said():
    """Round 74: "I've cancelled Genetics (CRS-0003)." hid that the student enrolled in it was
    dropped, although the tool's message said so; without the message the agent cannot know."""
    before = {
        "courses": {"C3": {"title": "Genetics", "status": "open", "enrolled": 1}},
        "enrolments": {"E1": {"course_id": "C3", "status": "enrolled"}},
    }
    after = {
        "courses": {"C3": {"title": "Genetics", "status": "cancelled", "enrolled": 0}},
        "enrolments": {"E1": {"course_id": "C3", "status": "dropped"}},
    }
    result = {"data": {"course_id": "C3", "title": "Genetics", "status": "cancelled"}}
    shown = [[{"course_id": "C3"}, result]]
    assert "dropped" not in closing_message(before, after, "s", shown)
    result["message"] = "Course C3 cancelled; enrolled students dropped."
    said = closing_message(before, after, "s", shown)
    assert "cancelled" in said and "The enrolled students were dropped." in said, said


def test_only_what_a_hidden_change_did_is_said_from_a_message():
    """A breaker's: a read's message ("membership is suspended"), an argument named message
    ("Welcome back; your old bookings are gone") and a clause no change bears out are no news."""
    before = {"members": {"M1": {"name": "Ann Lee", "status": "suspended"}},
              "bookings": {"B1": {"member_id": "M1", "status": "held"}}}  # fmt: skip
    after = {"members": {"M1": {"name": "Ann Lee", "status": "active"}},
             "bookings": {"B1": {"member_id": "M1", "status": "confirmed"}}}  # fmt: skip
    read = [{"member_id": "M1"}, {"message": "Found; membership is suspended"}, False]
    told = {"member_id": "M1", "message": "Welcome back; your old bookings are gone"}
    change = [told, {"data": {"member_id": "M1"}, "message": "M1 reinstated; fees waived"}, True]
    said = closing_message(before, after, "s", [read, change])
    assert "suspended" not in said and "gone" not in said and "waived" not in said, said
    change[1]["message"] = "M1 reinstated; bookings confirmed"
    assert "The bookings were confirmed." in closing_message(before, after, "s", [read, change])


@pytest.mark.parametrize(
    ("clause", "sentence"),
    [
        ("request sent back", "the request was sent back"),
        ("its days returned to the allowance", "its days were returned to the allowance"),
        ("its tickets are void", "its tickets are void"),
        ("host", None),
        ("not shipped", None),
        ("reason: policy expired", None),
        ("membership is suspended", None),
    ],
)
def test_a_message_clause_reads_as_a_sentence(clause, sentence):
    assert _as_sentence(clause.split()) == sentence


def test_an_act_says_the_new_date_it_moved_but_not_the_clocks():
    """Round 76: "I've extended loan LN-00003." left out until when; a time the act stamped
    now ("its delivery time is now …") is the clock's, and a date the act said is said once."""
    before = {"loans": {"L3": {"due_on": "2025-02-23", "done_at": None}}, "current_time": "x"}
    after = {
        "loans": {"L3": {"due_on": "2025-03-13", "done_at": "2025-02-20T09:00:00"}},
        "current_time": "2025-02-20T09:00:00",
    }
    extended = [Done("extended loan L3", frozenset({"L3"}))]
    said = closing_message(before, after, "s", done=extended)
    assert said.endswith("I've extended loan L3, and its due date is now 13 Mar 2025."), said
    moved = [Done("moved loan L3 to 13 March 2025", frozenset({"L3"}))]
    assert "due date" not in closing_message(before, after, "s", done=moved)


def test_most_replies_carry_no_stock_opener_or_closer():
    before = {"o": {"O1": {"status": "open"}}}
    after = {"o": {"O1": {"status": "closed"}}}
    replies = [closing_message(before, after, f"seed{i}") for i in range(60)]
    plain = [r for r in replies if r[:1] in "IO"]  # "I've closed …", "O1 …"
    assert len(plain) > len(replies) / 2
    assert sum("Let me know" in r or "Happy to" in r for r in replies) < len(replies) / 3


def test_a_record_is_named_only_by_what_the_agent_was_shown():
    """Closing a trip frees its vehicle; the result showed the vehicle's id, not its plate, so
    the reply names it by id (a plate no result held would be made up). A vehicle the result
    only points at is not news: no result said it is free."""
    before = {
        "trips": {"TR1": {"status": "ongoing", "vehicle_id": "VEH-1"}},
        "vehicles": {"VEH-1": {"plate": "YXP 196", "status": "on_trip"}},
    }
    after = {
        "trips": {"TR1": {"status": "completed", "vehicle_id": "VEH-1"}},
        "vehicles": {"VEH-1": {"plate": "YXP 196", "status": "available"}},
    }
    pointing = {"data": {"trip_id": "TR1", "status": "completed", "vehicle_id": "VEH-1"}}
    said = closing_message(before, after, "s1", [[{"trip_id": "TR1"}, pointing]])
    assert "TR1" in said and "VEH-1" not in said, said
    vehicle = {"vehicle_id": "VEH-1", "status": "available"}
    result = {"data": {"trip_id": "TR1", "status": "completed", "vehicle": vehicle}}
    said = closing_message(before, after, "s1", [[{"trip_id": "TR1"}, result]])
    assert "YXP 196" not in said and "VEH-1" in said, said
    vehicle["plate"] = "YXP 196"
    assert "YXP 196" in closing_message(before, after, "s1", [[{"trip_id": "TR1"}, result]])


def test_the_signed_in_person_is_told_of_their_own_record_as_you():
    """After a session read shows who is signed in, the reply talks to them: "your address",
    "booking BK-9 for you"; before it, it names them as anyone else."""
    before = {
        "acting_id": "C-3",
        "customers": {"C-3": {"name": "Debra Moss", "email": "d@x.org", "address": "1 Old Rd"}},
        "bookings": {},
    }
    after = {**before, "customers": {"C-3": {**before["customers"]["C-3"], "address": "2 New St"}}}
    after["bookings"] = {"BK-9": {"booking_id": "BK-9", "customer_id": "C-3", "status": "booked"}}
    session = [{}, {"data": {"acting_id": "C-3", "role": "customer"}}]
    change = [{"customer_id": "C-3", "address": "2 New St"}, {"data": after["customers"]["C-3"]}]
    booked = [{"customer_id": "C-3"}, {"data": after["bookings"]["BK-9"]}]
    said = closing_message(before, after, "s1", [session, change, booked])
    assert "your address" in said.lower() and "for you" in said and "Debra Moss" not in said, said
    unseen = closing_message(before, after, "s1", [change, booked])
    assert "your" not in unseen and "Debra Moss" in unseen, unseen


def test_a_new_record_is_said_by_the_change_that_made_it():
    """From the rating: "Ticket TK-10 is valid for Kim Serrano for $42.00, with event Modern
    Dance Festival" read as a template. Said by its making, the reply names the reference and
    the price the tool worked out, once each, in any of its forms; its usual status goes
    without saying."""
    ticket = {"event_id": "EV-1", "status": "valid", "quantity": 1, "total": 42.0}
    done = {"TK-10": "sold 1 ticket for Modern Dance Festival to Kim Serrano"}
    replies = {
        closing_message({"tickets": {}}, {"tickets": {"TK-10": ticket}}, f"s{i}", made_by=done)
        for i in range(20)
    }
    assert len(replies) > 2
    for said in replies:
        assert "I've sold 1 ticket for Modern Dance Festival to Kim Serrano" in said, said
        assert said.count("TK-10") == 1 and said.count("$42.00") == 1, said
        assert "with event" not in said and "valid" not in said, said  # the sale says it
    lot = {"crop": "carrots", "status": "available", "price_per_kg": 1.5}
    done = {"LOT-7": "taken in a lot of carrots as lot LOT-7 ($1.50 a kg)"}
    said = closing_message({"lots": {}}, {"lots": {"LOT-7": lot}}, "s", made_by=done)
    assert said.count("LOT-7") == 1 and "as the crop" not in said, said


def test_records_are_said_in_the_order_the_calls_made_them():
    """Round 34: "I've started a parking session for vehicle 1NOP672 …. I've registered a
    vehicle …" reported the second call first (the state lists sessions before vehicles)."""
    after = {
        "sessions": {"PS-7": {"vehicle_id": "VH-5", "status": "active"}},
        "vehicles": {"VH-5": {"plate": "1NOP672", "status": "active"}},
    }
    made = {"VH-5": "registered vehicle 1NOP672", "PS-7": "started a session for 1NOP672"}
    order = {"VH-5": 0, "PS-7": 1}  # the calls that made them
    said = closing_message({"sessions": {}, "vehicles": {}}, after, "s", made_by=made, order=order)
    assert said.index("registered vehicle") < said.index("started a session"), said


def test_a_status_the_user_asked_for_in_other_words_is_said():
    """Round 37's breaker: "Please cancel flight SK216" → "I've grounded flight SK216." alone
    hid that the flight is cancelled; "voided …, and it has been cancelled" says it twice."""
    before = {"flights": {"FL-7": {"flight_number": "SK216", "status": "scheduled"}}}
    after = {"flights": {"FL-7": {"flight_number": "SK216", "status": "cancelled"}}}
    done = [Done("grounded flight SK216 (FL-7)", frozenset({"FL-7"}))]
    asked = closing_message(before, after, "s", said="Please cancel flight SK216.", done=done)
    assert "grounded flight SK216 (FL-7), so it has been cancelled" in asked, asked
    voided = closing_message(before, after, "s", said="Please void flight SK216.", done=done)
    assert "cancelled" not in voided, voided


def test_a_plural_field_agrees_with_its_verb_even_with_a_phrase_after_it():
    """Round 24: "its running hours since the last service is now 0"."""
    from envmill.tasks.rollout.closing import _plural_field

    assert _plural_field("running hours since the last service")
    assert _plural_field("spots left") and _plural_field("days of leave")
    assert not _plural_field("price per kg") and not _plural_field("status")


def test_a_user_who_said_who_they_are_is_told_about_their_own_record_as_you():
    """Round 25: the farmer who said "I'm Laura Molina" read "… their phone … Laura Molina"."""
    farmers = {"FRM-5": {"name": "Laura Molina", "phone": "555-0101", "region": "east"}}
    moved = {"farmers": {"FRM-5": {**farmers["FRM-5"], "phone": "555-0199"}}}
    before = {"farmers": farmers}
    mine = closing_message(before, moved, "s2", said="Hi, I'm Laura Molina; my phone changed.")
    assert "your phone" in mine.lower() or "you" in mine.lower().split(), mine
    theirs = closing_message(before, moved, "s2", said="Laura Molina's phone changed.")
    assert "Laura Molina" in theirs and "your" not in theirs.lower(), theirs


def test_a_cascade_no_result_showed_is_not_reported():
    """Round 28: "Courier Mark Thomas is now available … Order ORD-5 is now marked delivered"
    after a call that completed the delivery and showed neither the courier nor the order."""
    from envmill.tasks.rollout.closing import closing_message

    delivery = {"delivery_id": "D-4", "courier_id": "CR-9", "order_id": "O-5", "status": "en_route"}
    initial = {
        "couriers": {"CR-9": {"courier_id": "CR-9", "name": "Mark Thomas", "status": "busy"}},
        "deliveries": {"D-4": delivery},
        "orders": {"O-5": {"order_id": "O-5", "status": "on_the_way"}},
    }
    final = {
        "couriers": {"CR-9": {**initial["couriers"]["CR-9"], "status": "available"}},
        "deliveries": {"D-4": {**delivery, "status": "delivered"}},
        "orders": {"O-5": {"order_id": "O-5", "status": "delivered"}},
    }
    shown = [
        [{"courier_id": "CR-9"}, {"data": [delivery]}],  # a read that names the courier
        [{"delivery_id": "D-4"}, {"data": final["deliveries"]["D-4"], "message": "Completed."}],
    ]
    said = closing_message(initial, final, "seed", shown=shown)
    assert "D-4" in said and "delivered" in said, said
    assert "available" not in said and "O-5" not in said, said


def test_a_record_that_names_another_is_not_that_record_and_a_read_names_no_change():
    """From a review: an invoice's status beside its order id read as the order's; a change
    whose result carries no message still names the record it changed."""
    from envmill.tasks.rollout.closing import _a_change, _is_record

    order = {"order_id": "O-5", "amount": 40.0, "status": "pending"}
    invoice = {"invoice_id": "INV-2", "order_id": "O-5", "amount": 40.0, "status": "cancelled"}
    assert not _is_record(invoice, order, "O-5")
    assert _is_record({"order_id": "O-5", "status": "cancelled"}, order, "O-5")
    assert _a_change([{"tool_id": "T-1"}, {"data": {"status": "lent"}}, True])
    assert not _a_change([{"tool_id": "T-1"}, {"data": {}}, False])
    assert _a_change([{"tool_id": "T-1"}, {"data": {}, "message": "Lent."}])  # as tools say


def test_a_change_is_said_as_done_not_as_the_fields_it_moved():
    """From the rating (round 30): "Class Gentle Stretch has been cancelled, and its spots left
    are now 18" and "its copies total are now 8" read as a database diff. Said by the change
    the agent made, the reply names the action, adds where the record stands only when the
    action does not say it, and leaves the counters the system moved to the system."""
    before = {"classes": {"CL-3": {"name": "Gentle Stretch", "status": "scheduled", "spots": 17}}}
    after = {"classes": {"CL-3": {"name": "Gentle Stretch", "status": "cancelled", "spots": 18}}}
    shown = [[{"class_id": "CL-3"}, {"data": {"class_id": "CL-3", "status": "cancelled"}}, True]]
    done = [Done("cancelled Gentle Stretch (CL-3)", frozenset({"CL-3"}))]
    for seed in ("a", "b", "c", "d"):
        said = closing_message(before, after, seed, shown, done=done)
        assert "I've cancelled Gentle Stretch (CL-3)" in said, said
        assert "spots" not in said and "has been cancelled" not in said, said
    before["classes"]["CL-3"]["status"], after["classes"]["CL-3"]["status"] = "paused", "open"
    done = [Done("resumed Gentle Stretch (CL-3)", frozenset({"CL-3"}))]
    said = closing_message(before, after, "a", shown, done=done)
    # the act says where it stands: no "and it is open" after it (round 34: "I've voided
    # shipment SHP-3, and it has been cancelled" read as saying it twice)
    assert said.startswith("I've resumed Gentle Stretch (CL-3)") and "it is open" not in said, said


def test_money_a_change_moved_is_said_once_after_it():
    """The balance the user will ask about next follows the action, in the voice the reply
    takes ("your wallet balance"); a value the action already says is not said twice, and a
    transfer that names both accounts says nothing more of the second one."""
    before = {"customers": {"C1": {"name": "Ann Lee", "email": "a@x.org", "wallet_balance": 71.13}}}
    after = {"customers": {"C1": {"name": "Ann Lee", "email": "a@x.org", "wallet_balance": 471.13}}}
    shown = [
        [{"customer_id": "C1"}, {"data": {"customer_id": "C1", "wallet_balance": 471.13}}, True]
    ]
    done = [Done("added funds to Ann Lee's wallet ($400.00)", frozenset({"C1"}))]
    said = closing_message(before, after, "a", shown, done=done)
    assert said.startswith(
        "I've added funds to Ann Lee's wallet ($400.00), and their wallet balance is now $471.13"
    ), said
    done = [Done("changed Ann Lee's wallet to $471.13", frozenset({"C1"}))]
    assert closing_message(before, after, "a", shown, done=done).count("$471.13") == 1
    accounts = {"A4": {"balance": 500.0}, "A1": {"balance": 10.0}}
    moved = {"A4": {"balance": 100.0}, "A1": {"balance": 410.0}}
    result = {"data": {"account_id": "A4", "balance": 100.0}, "message": "Transferred 400.0"}
    shown = [[{"from_id": "A4", "to_id": "A1"}, result, True]]
    done = [Done("moved $400.00 from account A4 to account A1", frozenset({"A4", "A1"}))]
    said = closing_message({"accounts": accounts}, {"accounts": moved}, "a", shown, done=done)
    assert "I've moved $400.00 from account A4 to account A1" in said, said
    assert "account A4's balance is now $100.00" in said, said  # not "its": which one?
    assert "as a result" not in said and "A1's balance" not in said, said


def test_a_record_two_changes_named_is_said_by_its_own_fields():
    """Round 31's breaker: "I've checked a patient in …, and it is marked as completed" (a
    later call completed it) and a phone change beside a check-in went unsaid. Which change
    moved what is not known, so such a record is said as before; a person is never "it"; an
    amount that fell
    to nothing is not what something "came to"."""
    before = {"patients": {"P1": {"name": "Ann Lee", "phone": "555", "status": "waiting"}}}
    after = {"patients": {"P1": {"name": "Ann Lee", "phone": "777", "status": "completed"}}}
    shown = [[{"patient_id": "P1"}, {"data": {"patient_id": "P1", "phone": "777"}}, True]]
    done = [
        Done("checked Ann Lee (P1) in", frozenset({"P1"})),
        Done("changed Ann Lee's phone number to 777", frozenset({"P1"})),
    ]
    said = closing_message(before, after, "a", shown, done=done)
    assert "777" in said and "checked Ann Lee (P1) in, and" not in said, said
    adjusters = {"ADJ-1": {"name": "Amanda Mullins", "email": "a@x.org", "status": "available"}}
    away = {"ADJ-1": {**adjusters["ADJ-1"], "status": "unavailable"}}
    done = [Done("taken Amanda Mullins off the rota", frozenset({"ADJ-1"}))]
    shown = [[{"adjuster_id": "ADJ-1"}, {"data": away["ADJ-1"] | {"adjuster_id": "ADJ-1"}}, True]]
    said = closing_message({"adjusters": adjusters}, {"adjusters": away}, "a", shown, done=done)
    assert "taken Amanda Mullins off the rota" in said and "it is" not in said, said
    matter = {"M3": {"name": "Harmon Trust", "unbilled_amount": 3598.13}}
    billed = {"M3": {"name": "Harmon Trust", "unbilled_amount": 0.0}}
    shown = [[{"matter_id": "M3"}, {"data": {"matter_id": "M3", "unbilled_amount": 0.0}}, True]]
    done = [Done("invoiced all unbilled time of Harmon Trust (M3)", frozenset({"M3"}))]
    said = closing_message({"matters": matter}, {"matters": billed}, "a", shown, done=done)
    assert "came to" not in said and "$0.00" in said, said


def test_a_flag_is_said_as_what_the_record_is_now_marked_as():
    """Round 40: "the customer approval of work order WO-00004 is now set"."""
    before = {"work_orders": {"WO-4": {"customer_approved": False, "estimate": 85.0}}}
    after = {"work_orders": {"WO-4": {"customer_approved": True, "estimate": 85.0}}}
    said = closing_message(before, after, "s1")
    assert "ork order WO-4 is now marked as customer approved" in said, said
    assert "is now set" not in said, said


def test_a_name_is_known_by_the_same_rule_with_or_without_its_literal_test():
    """Names are tested for their literal before the whole-word pattern runs (a breaker's:
    the shortcut must not change an answer, an empty name included)."""
    from envmill.tasks.rollout.closing import _known

    names = {"K-1": "", "K-2": "Ana Ruiz (K-2)", "K-3": "Ana", "K-4": "Bo Li"}
    known = _known(names, [], "Booked for Ana Ruiz; Anabel is next.")
    assert known == {"K-1": "", "K-2": "Ana Ruiz (K-2)", "K-3": "Ana"}
