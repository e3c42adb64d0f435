"""The reference agent says a change in its tool's words, never its tool's name."""

from __future__ import annotations

import pytest

from envmill.schemas.scenario import SolutionStep
from envmill.tasks.certify.grounding import Sight
from envmill.tasks.rollout.saying import say_action, tool_clause


@pytest.mark.parametrize(
    ("tool", "description", "clause"),
    [
        ("hand_to_network", "Dispatch a booked shipment that holds a parcel. Only agents.",
         "dispatch a booked shipment"),
        ("record_leaver", "Record that an employee has left; their deductions end.",
         "record that an employee has left"),
        ("start_courier_shift", "Put a courier who is off shift back on the road.",
         "put a courier who is off shift back on the road"),
        ("cancel_order", "Cancels an order.", "cancel an order"),
        ("apply_coupon", "Applies a discount to a cart.", "apply a discount to a cart"),
        ("void_invoice", "This tool voids an invoice.", "void invoice"),  # not an instruction
        ("apply_discount", "Apply a 20% discount to an order.", "apply discount"),  # a figure
        ("cancel_order", "Cancel an order e.g. ORD-1 for the customer.", "cancel an order"),
        ("redirect_shipment", "Send a shipment that is not delivered yet to another city.",
         "redirect a shipment"),  # the tool's own verb where it names the same record
        ("make_deposit", "", "make deposit"),  # no description: the tool's words
        ("odd_tool", "Following the rules, do something long " + "very " * 20, "odd tool"),
    ],
)  # fmt: skip
def test_the_clause_is_the_descriptions_opening_instruction(tool, description, clause):
    assert tool_clause(tool, description) == clause


def _said(tool: str, description: str, arguments: dict, shown: list) -> str:
    sight = Sight()
    for value in shown:
        sight.read_value(value)
    return say_action(SolutionStep(tool=tool, arguments=arguments), description, sight, shown)


def test_records_the_agent_saw_replace_the_indefinite_nouns():
    shown = [{"data": {"employee_id": "EMP-3", "name": "Hannah Stewart"}}]
    said = _said(
        "record_leaver", "Record that an employee has left.", {"employee_id": "EMP-3"}, shown
    )
    assert said == "record that Hannah Stewart (EMP-3) has left"
    moved = _said(
        "move_money",
        "Move money from one active account to another.",
        {"account_id": "ACC-6", "to_account_id": "ACC-1", "amount": 40.0},
        [{"data": [{"account_id": "ACC-6"}, {"account_id": "ACC-1"}]}, {"amount": 40.0}],
    )
    assert moved == "move $40.00 from account ACC-6 to account ACC-1"


def test_an_unseen_id_is_not_said_and_a_setting_verb_says_the_new_value():
    unseen = _said("cancel_order", "Cancel an order.", {"order_id": "OR-9"}, [])
    assert unseen == "cancel an order"
    raised = _said(
        "raise_salary",
        "Raise an employee's annual salary.",
        {"employee_id": "EMP-1", "annual_salary": 80000.0},
        [{"data": {"employee_id": "EMP-1", "name": "Brandi Cooper"}}, {"v": 80000.0}],
    )
    assert raised == "raise Brandi Cooper's annual salary to $80,000.00"


def test_the_signed_in_person_is_you_and_a_noun_past_the_clause_is_read_on_to():
    session = {"data": {"acting_id": "PX-3", "role": "passenger"}}
    flights = {"data": [{"flight_id": "FL-8", "flight_number": "SK513"}]}
    booked = _said(
        "reserve_seats",
        "Book seats on a flight for a passenger; the price is the fare times the seats.",
        {"passenger_id": "PX-3", "flight_id": "FL-8", "seats": 1},
        [session, flights],
    )
    assert booked == "book seats on flight SK513 (FL-8) for you"
    appointment = _said(
        "book_appointment",
        "Book an appointment for a patient with a doctor at a future time.",
        {"doctor_id": "DR-4", "patient_id": "PT-6"},
        [{"data": [{"doctor_id": "DR-4", "name": "Pamela Shaw"}]}, {"patient_id": "PT-6"}],
    )
    assert appointment == "book an appointment for patient PT-6 with Pamela Shaw (DR-4)"


def test_a_new_record_is_named_by_the_name_it_is_given():
    said = _said(
        "join_coop",
        "Admit a farmer as a member of the cooperative.",
        {"name": "Ann Lee", "region": "valley"},
        [{"name": "Ann Lee", "region": "valley"}],
    )
    assert said == "admit a farmer, Ann Lee, as a member of the cooperative (valley region)"


def test_what_is_not_one_seen_value_is_not_said_back():
    """A list, a long note, a name the agent has not seen, a field named inside another word,
    and a record that only points at the one meant are never said."""
    items = _said(
        "update_order",
        "Update an order's items.",
        {"order_id": "O-1", "items": [{"sku": "SECRET", "qty": 9}]},
        [{"data": {"order_id": "O-1"}}],
    )
    assert "SECRET" not in items and "[" not in items
    dated = _said(
        "update_booking",
        "Update a booking's guest count.",
        {"booking_id": "B-1", "start_date": "2025-05-05", "guests": 5},
        [{"data": {"booking_id": "B-1"}}, {"start_date": "2025-05-05", "guests": 5}],
    )
    assert "count to 5 May" not in dated
    managed = _said(
        "assign_manager",
        "Assign a manager to an employee.",
        {"employee_id": "E-2", "manager_id": "E-1"},
        [{"data": [{"employee_id": "E-2", "name": "Bob", "manager_id": "E-1"}]}],
    )
    assert "Bob (E-1)" not in managed, managed


def test_a_given_value_takes_the_place_of_its_noun_and_a_new_account_is_for_its_holder_once():
    """Round 23: "create a city services account for Tracy Miller for a resident" and "a
    report of a problem at an address (…, address 115 Pruitt Fork, …)"."""
    sight = Sight()
    sight.hear("An account for Tracy Miller, south district; a trash request at 115 Pruitt Fork.")
    account = {"name": "Tracy Miller", "district": "south"}
    said = say_action(
        SolutionStep(tool="create_resident_account", arguments=account),
        "Create a city services account for a resident.",
        sight,
        [],
    )
    assert said == "create a city services account for Tracy Miller (south district)", said
    report = {"resident_id": "RES-9", "category": "trash", "address": "115 Pruitt Fork"}
    said = say_action(
        SolutionStep(tool="report_problem", arguments=report),
        "Log a resident's report of a problem at an address.",
        sight,
        [],
        records={"RES-9": {"name": "Tracy Miller"}},
    )
    assert said == "log a resident's report of a problem at 115 Pruitt Fork (trash category)", said


def test_a_record_the_clause_has_no_noun_for_follows_the_ones_it_has():
    """Round 27: "an order for a quantity of Linen Throw Pillow (PR-0006) (Jacqueline Krueger,
    CU-00011)"."""
    sight = Sight()
    sight.hear("3 Linen Throw Pillow PR-6 for Jacqueline Krueger, CU-11.")
    said = say_action(
        SolutionStep(tool="place_order", arguments={"customer_id": "CU-11", "product_id": "PR-6"}),
        "Place an order for a quantity of a product.",
        sight,
        [],
        records={"CU-11": {"name": "Jacqueline Krueger"}, "PR-6": {"name": "Linen Throw Pillow"}},
    )
    assert said == (
        "place an order for a quantity of Linen Throw Pillow (PR-6), for Jacqueline Krueger (CU-11)"
    ), said


def test_an_amount_worked_out_from_the_users_mark_is_said():
    """Round 28: "I'm ready to add Priya Patel's deposit to their retainer", no amount: the
    difference to the user's mark is grounded, so the confirmation says it."""
    sight = Sight()
    sight.hear("I'd like her retainer balance to be $1,000.")
    shown = [{"data": {"client_id": "CLT-5", "name": "Priya Patel", "retainer_balance": 913.31}}]
    for value in shown:
        sight.read_value(value)
    step = SolutionStep(tool="deposit_retainer", arguments={"client_id": "CLT-5", "amount": 86.69})
    said = say_action(step, "Add money to a client's retainer.", sight, shown)
    assert "$86.69" in said and "Priya Patel" in said, said
    guess = SolutionStep(tool="deposit_retainer", arguments={"client_id": "CLT-5", "amount": 12.5})
    assert "12.5" not in say_action(guess, "Add money to a client's retainer.", sight, shown)


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("cabin", "premium", "premium cabin"),  # round 28: never "(cabin premium)"
        ("priority", "high", "high priority"),
        ("mechanic", "Ana Silva", "mechanic Ana Silva"),  # a name stays after its noun
        ("make", "honda", "make honda"),  # not a noun that names a kind
        ("make", "Honda", "Honda"),  # a brand says what it is
        ("destination_city", "Plymouth", "destination city Plymouth"),
        ("nights", 5, "5 nights"),
        # round 31: "start time 8 May 2025 at 17:00, reason review of test results"
        ("start_time", "2025-05-08T17:00:00", "on 8 May 2025 at 17:00"),
        ("ends_on", "2025-06-03", "until 3 June 2025"),
        ("reason", "follow-up visit", "for a follow-up visit"),
        ("reason", "new symptoms", "for new symptoms"),
        ("reason", "review of test results", "for a review of test results"),
        ("leave_type", "sick", "sick leave"),
        ("kind", "court order", "court order"),
        ("owner_name", "Christopher Santana", "owner Christopher Santana"),
    ],
)
def test_a_detail_reads_as_people_write_it(name, value, said):
    from envmill.tasks.rollout.saying import _detail

    assert _detail(name, value) == said


def test_a_count_is_said_on_its_noun_and_a_digit_inside_a_flight_number_is_not_it():
    session = {"data": {"acting_id": "PX-3", "role": "passenger"}}
    flights = {"data": [{"flight_id": "FL-8", "flight_number": "SK330"}]}
    booked = _said(
        "reserve_seats",
        "Book seats on a flight for a passenger.",
        {"passenger_id": "PX-3", "flight_id": "FL-8", "cabin": "premium", "seats": 3},
        [session, flights, {"cabin": "premium", "seats": 3}],
    )
    assert booked == "book 3 seats on flight SK330 (FL-8) for you in the premium cabin"


def test_the_signed_in_person_as_the_object_of_the_verb_is_you():
    session = {"data": {"acting_id": "CR-3", "role": "courier"}}
    off = _said(
        "end_shift", "Take an available courier off shift.", {"courier_id": "CR-3"}, [session]
    )
    assert off == "take you off shift"
    other = _said(
        "end_shift",
        "Take an available courier off shift.",
        {"courier_id": "CR-4"},
        [session, {"data": {"courier_id": "CR-4"}}],
    )
    assert other == "take courier CR-4 off shift"
    moved = _said(
        "change_sender_address",
        "Change the address a sender ships from.",
        {"sender_id": "CR-3", "address": "1 Elm St"},
        [session, {"address": "1 Elm St"}],
    )
    assert not moved.startswith("change the address you ships")


def test_a_quantity_is_said_in_units_and_a_monthly_fee_by_the_month():
    """Round 34: "placed an order for Oak Wall Shelf (PR-4), for you (quantity 4)" and "sold a
    membership plan to you (monthly fee $44.99, plus plan)"."""
    shown = [{"data": {"product_id": "PR-4", "name": "Oak Wall Shelf"}}, {"quantity": 4}]
    ordered = _said(
        "place_order", "Place an order for a product.", {"product_id": "PR-4", "quantity": 4}, shown
    )
    assert ordered == "place an order for 4 units of Oak Wall Shelf (PR-4)", ordered
    fee = {"plan": "plus", "monthly_fee": 44.99}
    sold = _said("sell_membership", "Sell a membership plan.", fee, [fee])
    assert "$44.99 a month" in sold and "monthly fee" not in sold, sold


def test_values_go_on_the_sentence_not_in_a_bracket_or_after_a_colon():
    """Rounds 38–39: "add funds to your wallet ($400.00)", "open a new empty account for
    Margaret Mcmillan (C-7): savings account", "sell tickets for X, for you (2 units)"."""
    session = {"data": {"acting_id": "CS-6", "role": "customer"}}
    wallet = _said(
        "top_up_wallet",
        "Add funds to a customer's wallet.",
        {"customer_id": "CS-6", "amount": 400.0},
        [session, {"amount": 400.0}],
    )
    assert wallet == "add $400.00 to your wallet", wallet
    taken = {"account_id": "ACC-1", "amount": 376.29}
    cash = _said("withdraw", "Pay out cash from an active account.", taken, [{"data": taken}])
    assert cash == "pay out $376.29 in cash from account ACC-1", cash
    people = {"data": {"customer_id": "C-7", "name": "Margaret Mcmillan"}}
    opened = _said(
        "open_account",
        "Open a new empty account for a customer.",
        {"customer_id": "C-7", "account_type": "savings"},
        [people, {"account_type": "savings"}],
    )
    assert opened == "open a new empty savings account for Margaret Mcmillan (C-7)", opened
    event = {"data": {"event_id": "EV-3", "title": "Poetry and Strings"}}
    sold = _said(
        "sell_tickets",
        "Sell tickets for an event to a customer.",
        {"event_id": "EV-3", "customer_id": "CS-6", "quantity": 2},
        [session, event, {"quantity": 2}],
    )
    assert sold == "sell 2 tickets for Poetry and Strings (EV-3) to you", sold
    pledge = _said(
        "pledge", "Record your pledge to a campaign.", {"amount": 2000.0}, [{"amount": 2000.0}]
    )
    assert pledge == "record your $2,000.00 pledge to a campaign", pledge
    paid = _said(
        "pay", "Record an instalment paid on a policy.", {"amount": 80.0}, [{"amount": 80.0}]
    )
    assert paid == "record an $80.00 instalment paid on a policy", paid
    fee = _said("hand_over", "Hand an order to a courier.", {"fee": 6.0}, [{"fee": 6.0}])
    assert fee == "hand an order to a courier with a fee of $6.00", fee


def test_a_count_goes_before_the_words_that_qualify_its_noun():
    """Round 37: "credited extra leave 9 days"."""
    from envmill.tasks.rollout.saying import _counted

    said = _counted("credit extra leave days to Gregory Harris (EMP-7)", [("days", 9)])
    assert said == "credit 9 extra leave days to Gregory Harris (EMP-7)", said
    assert (
        _counted("add more seats to a course", [("seats", 30)]) == "add 30 more seats to a course"
    )
    # a compound noun keeps its words together (round 37's breaker: "a pack of booking 50
    # credits")
    said = _counted("sell a pack of booking credits", [("credits", 50)])
    assert said == "sell a pack of 50 booking credits", said


def test_a_sum_takes_the_article_it_is_read_out_with():
    from envmill.tasks.core.facts import a_or_an as a_sum

    assert [a_sum(s) for s in ("$80.00", "$11.50", "$18,000.00", "$1,100.00", "$300.00")] == [
        "an",
        "an",
        "an",
        "a",
        "a",
    ]


def test_the_signed_in_persons_field_is_yours_not_of_you():
    """Round 39: "I'm ready to change the email address of you to …"."""
    from envmill.tasks.rollout.saying import YOU, _put_record

    said = _put_record("change the email address of a customer", "customer_id", "CU-1", YOU)
    assert said == "change your email address", said
    assert _put_record("place an order for a customer", "customer_id", "CU-1", YOU) == (
        "place an order for you"
    )


def test_two_values_with_one_with():
    """Round 44: "issued a one-year policy … with an annual premium of $1,080.00 with a
    coverage limit of $60,000.00"."""
    from envmill.tasks.rollout.saying import _one_with

    said = _one_with(["with an annual premium of $1,080.00", "with a coverage limit of $60,000.00"])
    assert said == ["with an annual premium of $1,080.00 and a coverage limit of $60,000.00"]
    assert _one_with(["on 3 May 2025", "with a fee of $6.00"]) == [
        "on 3 May 2025",
        "with a fee of $6.00",
    ]


def test_a_record_with_no_name_is_said_with_what_it_is():
    """Rounds 44 to 48: "I've dropped enrolment EN-9" and "I've withdrawn application APP-2"
    named nothing the user knows the record by; a call that sets a value says it as it is."""
    from envmill.tasks.rollout.saying import say_action

    record = {"leave_request_id": "LR-2", "leave_type": "vacation", "start_date": "2025-08-01"}
    shown = [{"data": record}]
    sight = Sight()
    for value in shown:
        sight.read_value(value)
    step = SolutionStep(tool="withdraw_leave", arguments={"leave_request_id": "LR-2"})
    said = say_action(
        step, "Withdraw a pending leave request.", sight, shown, records={"LR-2": record}
    )
    assert said == "withdraw leave request LR-2 (vacation, from 1 August 2025)", said
    unseen = say_action(
        step, "Withdraw a pending leave request.", Sight(), [], records={"LR-2": record}
    )
    assert "(" not in unseen  # nothing the agent saw: nothing said of it
    moved = SolutionStep(
        tool="set_leave_type", arguments={"leave_request_id": "LR-2", "leave_type": "sick"}
    )
    assert "vacation" not in say_action(
        moved, "Change the type of a leave request.", sight, shown, records={"LR-2": record}
    )


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("doc_type", "proof of address", "proof of address document"),
        ("method", "direct debit", "by direct debit"),
        ("mileage", 178695, "178,695 miles"),
        ("product", "home", "home"),
        ("department", "finance", "finance department"),
    ],
)
def test_a_detail_reads_as_a_person_writes_it(name, value, said):
    """Round 49: "(document type proof of address)", "(mileage 178695)", "(product home)"."""
    from envmill.tasks.rollout.saying import _detail

    assert _detail(name, value) == said


def test_a_bookings_price_is_said_before_the_yes_only_when_the_new_record_holds_it():
    """Rounds 44 and 49: a yes to a purchase whose price was never said. The event read shows
    $45.00 a ticket; the ticket made holds $90.00 for two."""
    from envmill.tasks.rollout.saying import cost_before_yes

    book = SolutionStep(tool="book_tickets", arguments={"event_id": "EV-5", "quantity": 2})
    seen = [{"data": {"event_id": "EV-5", "name": "Jazz Night", "price": 45.0}}]
    made = {"data": {"ticket_id": "TK-9", "event_id": "EV-5", "total": 90.0}}
    known = {"EV-5"}
    assert cost_before_yes([(book, made)], seen, known) == "The total will be $90.00 (2 × $45.00). "
    surcharged = {"data": {"ticket_id": "TK-9", "event_id": "EV-5", "total": 112.5}}
    assert cost_before_yes([(book, surcharged)], seen, known) == ""  # never misquoted
    assert cost_before_yes([(book, made)], [], known) == ""  # no price seen: nothing to say
    updated = {"data": {"ticket_id": "TK-9", "event_id": "EV-5", "total": 90.0}}
    assert cost_before_yes([(book, updated)], seen, known | {"TK-9"}) == ""  # not a new record


def test_a_cabins_multiplier_the_tool_states_is_said_with_the_price():
    """Round 53: $742.50 of business seats booked with no price before the yes; the booking
    tool's description says "times 2.5 in business"."""
    from envmill.tasks.rollout.saying import cost_before_yes

    book = SolutionStep(
        tool="reserve_seats", arguments={"flight_id": "FL-1", "cabin": "business", "seats": 3}
    )
    seen = [{"data": {"flight_id": "FL-1", "fare": 99.0}}]
    made = {"data": {"booking_id": "BKG-11", "flight_id": "FL-1", "price": 742.5}}
    doc = "Book seats; the price is the fare times the seats, times 1.6 in premium and times"
    doc += " 2.5 in business. Bookings close 5 hours before departure."
    said = cost_before_yes([(book, made)], seen, {"FL-1"}, {"reserve_seats": doc})
    assert said == "The price will be $742.50 (3 × $99.00 × 2.5). "
    assert cost_before_yes([(book, made)], seen, {"FL-1"}) == ""  # no stated multiplier
    other = {"reserve_seats": "Book seats; the price is the fare times 1.6 in premium."}
    assert cost_before_yes([(book, made)], seen, {"FL-1"}, other) == ""  # not this one
    # a number that is no multiplier is never one (a breaker's "$109.00 × 5")
    five = {"reserve_seats": "Book seats at the fare. Bookings close 5 hours before departure."}
    fare = [{"data": {"flight_id": "FL-1", "fare": 109.0}}]
    made = {"data": {"booking_id": "BKG-11", "flight_id": "FL-1", "price": 545.0}}
    assert cost_before_yes([(book, made)], fare, {"FL-1"}, five) == ""


def test_a_kind_of_one_word_goes_before_the_noun_the_clause_acts_on():
    """Round 53: "issued a one-year policy … (auto)"."""
    from envmill.tasks.rollout.saying import _kind_before_noun

    assert _kind_before_noun("issue a one-year policy to Ann", "auto") == (
        "issue a one-year auto policy to Ann"
    )
    assert _kind_before_noun("book an order", "express") == "book an express order"
    assert _kind_before_noun("record it", "auto") is None  # no noun to put it before
    # a noun of several words is left alone (a breaker's "a strawberries graded harvest lot")
    assert _kind_before_noun("take in a graded harvest lot from Ann", "strawberries") is None


def test_a_kind_of_several_words_goes_before_its_noun():
    """Round 50: "attach a supporting document to application APP-4 waiting for a decision
    (proof of address document)"."""
    step = SolutionStep(
        tool="upload_document",
        arguments={"application_id": "APP-4", "doc_type": "proof of address"},
    )
    sight = Sight()
    sight.hear("APP-4 proof of address")
    said = say_action(step, "Attach a document to an application.", sight, [])
    assert said == "attach a proof of address document to application APP-4"


def test_a_nightly_rate_is_quoted_only_when_it_is_the_one_booked_and_still_current():
    """A breaker: two rooms of one hotel read gave the other room's rate; a rate changed
    earlier in the same yes was quoted as it had been; $45.0049 said as "$45.00 … $90.01"."""
    from envmill.tasks.rollout.saying import cost_before_yes

    book = SolutionStep(
        tool="reserve_room", arguments={"room_id": "RM-1", "hotel_id": "H-1", "nights": 3}
    )
    made = {"data": {"reservation_id": "RSV-9", "room_id": "RM-1"}}
    one = [{"data": {"room_id": "RM-1", "hotel_id": "H-1", "nightly_rate": 109.0}}]
    assert cost_before_yes([(book, made)], one, {"RM-1", "H-1"}) == (
        "The nightly rate is $109.00, so 3 nights come to $327.00. "
    )
    two = [*one, {"data": {"room_id": "RM-2", "hotel_id": "H-1", "nightly_rate": 45.0}}]
    assert cost_before_yes([(book, made)], two, {"RM-1", "RM-2", "H-1"}) == ""
    reprice = SolutionStep(tool="set_room_rate", arguments={"room_id": "RM-1", "rate": 200.0})
    repriced = {"data": {"room_id": "RM-1", "nightly_rate": 200.0}}
    assert cost_before_yes([(reprice, repriced), (book, made)], one, {"RM-1", "H-1"}) == ""
    tickets = SolutionStep(tool="book_tickets", arguments={"event_id": "EV-5", "quantity": 2})
    odd = [{"data": {"event_id": "EV-5", "price": 45.0049}}]
    ticket = {"data": {"ticket_id": "TK-9", "event_id": "EV-5", "total": 90.0098}}
    assert "2 × $45.00" not in cost_before_yes([(tickets, ticket)], odd, {"EV-5"})


def test_a_count_goes_before_the_plural_the_verb_acts_on():
    """A default run: "added newly purchased copies of 9 units of An Atlas of Small Things"."""
    from envmill.tasks.rollout.saying import _units_in_place

    clause = "add newly purchased copies of An Atlas of Small Things to the shelves"
    said, left = _units_in_place(clause, ["9 units"])
    assert said == "add 9 newly purchased copies of An Atlas of Small Things to the shelves"
    assert left == []
    assert _units_in_place("sell tickets for Jazz Night", ["1 unit"])[0] == (
        "sell 1 ticket for Jazz Night"
    )
    for clause in (  # no plain plural the verb acts on (a breaker's "cancel 1 a member' …")
        "update the address of Ann",
        "set the status of Ann",
        "cancel a member's bookings",
        "correct an item's count upwards",
        "adjust the bus fares",
    ):
        assert not _units_in_place(clause, ["2 units"])[0].startswith(clause.split()[0] + " 2")


def test_a_members_membership_is_said_as_theirs():
    """Round 57: "I've resumed a paused membership (Jane Calderon, CW-0003)"."""
    from envmill.tasks.rollout.saying import _held

    said = _held("resume a paused membership", "member_id", "CW-0003", "Jane Calderon")
    assert said == "resume Jane Calderon's paused membership"
    assert _held("resume a paused membership", "member_id", "CW-3", None) == (
        "resume member CW-3's paused membership"
    )
    assert _held("suspend a member", "member_id", "CW-3", None) is None  # no "-ship" to hold
    from envmill.tasks.rollout.saying import YOU

    assert _held("pause an active membership", "member_id", "CW-3", YOU) == (
        "pause your active membership"
    )


def test_a_name_the_user_gave_as_theirs_is_not_read_back_to_them():
    """A breaker's: "My name is Benjamin Cole" → "(plate 5VWX906, owner Benjamin Cole, …)"."""
    step = SolutionStep(
        tool="register_vehicle",
        arguments={"plate": "5VWX906", "owner_name": "Benjamin Cole", "make": "Toyota"},
    )
    sight = Sight()
    sight.hear("I'd like to register my Toyota, plate 5VWX906. My name is Benjamin Cole.")
    said = say_action(step, "Register a vehicle.", sight, [])
    assert "Benjamin Cole" not in said and "5VWX906" in said, said
    other = Sight()
    other.hear("Please register a Toyota, plate 5VWX906, for Benjamin Cole.")
    assert "Benjamin Cole" in say_action(step, "Register a vehicle.", other, [])
