"""A reference's tool-call turns (DESIGN §3.4): independent reads share one message as parallel
calls, a read that needs an earlier result waits for it, and some turns carry a short note."""

from __future__ import annotations

from envmill.schemas.scenario import CertificationReport, ScenarioSpec, SolutionStep
from envmill.tasks.rollout.reference import reference_messages

KINDS = {"get_order": "query", "get_customer": "query", "cancel_order": "state_change"}
STEPS = [
    {"tool": "get_order", "arguments": {"order_id": "O-1"}},
    {"tool": "get_customer", "arguments": {"customer_id": "C-7"}},
    {"tool": "get_order", "arguments": {"order_id": "O-2"}},  # O-2 is in C-7's record
    {"tool": "cancel_order", "arguments": {"order_id": "O-2"}},
]
RESULTS = [
    {"success": True, "data": {"order_id": "O-1"}},
    {"success": True, "data": {"customer_id": "C-7", "orders": ["O-2"]}},
    {"success": True, "data": {"order_id": "O-2"}},
    {"success": True},
]


def _messages(scenario_id: str = "ab" * 8, kinds=KINDS) -> list[dict]:
    spec = ScenarioSpec(
        env_id="e1",
        task="Order O-1 arrived; please cancel the other order of customer C-7.",
        initial_state={"orders": {}},
        reference_solution=STEPS,
        checks=[],
    )
    report = CertificationReport(scenario_id=scenario_id, gates=[], step_results=RESULTS)
    return reference_messages(spec, report, kinds)


def test_independent_reads_go_out_together_and_a_dependent_read_waits():
    calls = [
        [c["function"]["name"] for c in m["tool_calls"]] for m in _messages() if m.get("tool_calls")
    ]
    assert calls == [["get_order", "get_customer"], ["get_order"], ["cancel_order"]]
    ids = [c["id"] for m in _messages() if m.get("tool_calls") for c in m["tool_calls"]]
    assert ids == ["call_1", "call_2", "call_3", "call_4"]


def test_without_tool_kinds_every_call_has_its_own_turn():
    turns = [m for m in _messages(kinds=None) if m.get("tool_calls")]
    assert [len(m["tool_calls"]) for m in turns] == [1, 1, 1, 1]


def test_some_turns_carry_a_note_and_none_is_a_question():
    notes = [
        m["content"]
        for i in range(40)
        for m in _messages(f"{i * 7919:08x}00000000")
        if m.get("tool_calls") and m["content"]
    ]
    turns = 40 * 3
    assert 0.15 * turns < len(notes) < 0.45 * turns
    assert not any(note.endswith("?") for note in notes)


def test_a_conversational_reference_asks_for_the_fact_it_chooses_by():
    """Two Oil Filters come back; the user knows which one they mean, and the reference asks
    before it restocks one (DESIGN §3.4), not after, and not never."""
    spec = ScenarioSpec(
        env_id="e1",
        mode="conversational",
        task="Please restock the part.",
        user_facts={"part name": "Oil Filter", "part you mean": "the one in category engine"},
        initial_state={"parts": {}},
        reference_solution=[
            {"tool": "search_parts", "arguments": {"name": "Oil Filter"}},
            {"tool": "restock_part", "arguments": {"part_id": "PRT-1"}},
        ],
        checks=[],
    )
    found = {
        "success": True,
        "data": [
            {"part_id": "PRT-1", "name": "Oil Filter", "category": "engine"},
            {"part_id": "PRT-8", "name": "Oil Filter", "category": "cooling"},
        ],
    }
    report = CertificationReport(scenario_id="ab" * 8, gates=[], step_results=[found, {}])
    messages = reference_messages(spec, report)
    said = [m["content"] for m in messages if m["role"] == "user"]
    restock = next(i for i, m in enumerate(messages) if "restock" in str(m.get("tool_calls")))
    search = next(i for i, m in enumerate(messages) if "search" in str(m.get("tool_calls")))
    asked = [i for i, m in enumerate(messages) if m["role"] == "user" and "engine" in m["content"]]
    assert asked and search < asked[0] < restock, said


def test_a_reply_that_quotes_a_fact_asks_for_it_first():
    """A conversational refusal that names the amount the user wants approved asks for it
    before it answers: the reply may use only what the conversation showed."""
    spec = ScenarioSpec(
        env_id="e1",
        mode="conversational",
        task="You are Ann. You want the agent to approve your claim.",
        user_facts={"claim id": "CLM-2", "approved amount": 6172.28},
        initial_state={"claims": {"CLM-2": {"amount_claimed": 4990.53}}},
        reference_solution=[{"tool": "get_claim", "arguments": {"claim_id": "CLM-2"}}],
        checks=[],
        reference_answer="I can't: the approved amount (6172.28) must be at most 4990.53.",
    )
    report = CertificationReport(
        scenario_id="cd" * 8, gates=[], step_results=[{"success": True, "data": {}}]
    )
    messages = reference_messages(spec, report, {"get_claim": "query"})
    said = [m["content"] for m in messages if m["role"] == "user"]
    assert any("$6,172.28" in text for text in said[1:])  # in dollars, as a person says it
    assert messages[-2]["role"] == "user" and "$6,172.28" in messages[-2]["content"]


def test_a_note_read_from_a_query_name_says_what_the_call_is_for():
    from envmill.tasks.rollout.reference import _read_note

    assert _read_note("list_member_loans") == "Let me look up the member loans."
    assert _read_note("check_in_booking") == "Let me look up the booking."
    assert _read_note("find_clients_by_name") == "Let me look up the client."  # one, by name
    assert _read_note("add_to_course") is None  # no object to name
    assert _read_note("cancel") is None


def test_a_confirmation_says_each_change_in_its_tools_words():
    """ "To confirm: I'll dispatch shipment SHP-6 …", never "hand to network SHP-6"."""
    spec = ScenarioSpec(
        env_id="e1",
        mode="conversational",
        task="Send my shipment off.",
        user_facts={"shipment id": "SHP-6"},
        initial_state={"shipments": {}},
        reference_solution=[
            {"tool": "get_shipment", "arguments": {"shipment_id": "SHP-6"}},
            {"tool": "hand_to_network", "arguments": {"shipment_id": "SHP-6"}},
        ],
        checks=[],
    )
    shipment = {"shipment_id": "SHP-6", "status": "booked"}
    results = [{"success": True, "data": shipment}, {"success": True, "data": shipment}]
    report = CertificationReport(scenario_id="cd" * 8, gates=[], step_results=results)
    kinds = {"get_shipment": "query", "hand_to_network": "state_change"}
    words = {"hand_to_network": "Dispatch a booked shipment that holds a parcel."}
    messages = reference_messages(spec, report, kinds, words)
    confirmation = next(m["content"] for m in messages if "go ahead" in (m["content"] or ""))
    assert "dispatch shipment SHP-6" in confirmation and "hand to network" not in confirmation


def test_a_read_that_shows_only_records_already_seen_is_left_out():
    """``get_course`` after ``search_courses`` returned the course whole teaches a wasted call;
    a read that shows the record changed since stays."""
    course = {"course_id": "CRS-2", "title": "Cell Biology", "status": "open"}
    spec = ScenarioSpec(
        env_id="e1",
        task="Please close Cell Biology, then tell me its status.",
        initial_state={"courses": {}},
        reference_solution=[
            {"tool": "search_courses", "arguments": {"title": "Cell Biology"}},
            {"tool": "get_course", "arguments": {"course_id": "CRS-2"}},
            {"tool": "close_course", "arguments": {"course_id": "CRS-2"}},
            {"tool": "get_course", "arguments": {"course_id": "CRS-2"}},
        ],
        checks=[],
        reference_answer="Cell Biology is closed now.",
    )
    closed = {**course, "status": "closed"}
    results = [
        {"success": True, "data": [course]},
        {"success": True, "data": course},
        {"success": True, "message": "Closed."},
        {"success": True, "data": closed},
    ]
    report = CertificationReport(scenario_id="cd" * 8, gates=[], step_results=results)
    kinds = {"search_courses": "query", "get_course": "query", "close_course": "state_change"}
    calls = [
        c["function"]["name"]
        for m in reference_messages(spec, report, kinds)
        for c in m.get("tool_calls") or []
    ]
    assert calls == ["search_courses", "close_course", "get_course"]


def _namesakes_conversation(kinds: dict[str, str] | None = None) -> list[dict]:
    spec = ScenarioSpec(
        env_id="e1",
        mode="conversational",
        task="You are front-desk staff. Cancel the member's class booking.",
        user_facts={
            "member name": "Ann Lee",
            "member you mean": "Ann Lee (whose phone is 555-0101)",
        },
        initial_state={"members": {}},
        reference_solution=[
            {"tool": "find_members", "arguments": {"name": "Ann Lee"}},
            {"tool": "cancel_booking", "arguments": {"member_id": "M-1", "booking_id": "B-4"}},
        ],
        checks=[],
    )
    found = {
        "success": True,
        "data": [
            {"member_id": "M-1", "name": "Ann Lee", "phone": "555-0101", "booking": "B-4"},
            {"member_id": "M-9", "name": "Ann Lee", "phone": "555-0199", "booking": "B-2"},
        ],
    }
    report = CertificationReport(scenario_id="ef" * 8, gates=[], step_results=[found, {}])
    return reference_messages(spec, report, kinds)


def test_asking_which_namesake_is_meant_lists_what_was_found():
    """ "Which one?" says what the agent is choosing between: each namesake by the detail the
    user's answer picks by, and the simulated user still recognises the question."""
    from envmill.tasks.offline_llm.simulated_user import _WHICH

    asked = next(m["content"] for m in _namesakes_conversation() if "Which" in (m["content"] or ""))
    assert "one on 555-0101 and one on 555-0199" in asked
    assert _WHICH.search(asked)["noun"] == "member"


def test_a_conversational_reference_confirms_before_it_cancels_and_a_task_does_not():
    messages = _namesakes_conversation({"find_members": "query", "cancel_booking": "change"})
    cancel = next(i for i, m in enumerate(messages) if "cancel_booking" in str(m.get("tool_calls")))
    question, answer = messages[cancel - 2]["content"], messages[cancel - 1]["content"]
    assert "cancel booking B-4" in question and question.endswith("?"), question
    assert answer == "Yes, please go ahead."
    one_shot = [m["content"] for m in _messages() if m["role"] == "assistant" and m["content"]]
    assert not any("go ahead?" in text or "confirm" in text for text in one_shot)


def _cancel_then_find(found_customer: dict) -> list[str]:
    order = {"order_id": "O-2", "customer_id": "C-7", "status": "cancelled"}
    spec = ScenarioSpec(
        env_id="e1",
        mode="conversational",
        task="You are Ann Lee. Cancel an order, then change your email.",
        user_facts={"order id": "O-2", "customer name": "Ann Lee", "email": "ann@new.org"},
        initial_state={
            "orders": {"O-2": {**order, "status": "pending"}},
            "customers": {"C-7": {"customer_id": "C-7", "name": "Ann Lee", "email": "a@x.org"}},
        },
        reference_solution=[
            {"tool": "cancel_order", "arguments": {"order_id": "O-2"}},
            {"tool": "search_customers", "arguments": {"name": "Ann Lee"}},
            {"tool": "set_email", "arguments": {"customer_id": "C-7", "email": "ann@new.org"}},
        ],
        checks=[],
    )
    results = [
        {"success": True, "data": order},
        {"success": True, "data": [found_customer]},
        {"success": True, "data": {**found_customer, "email": "ann@new.org"}},
    ]
    kinds = {"cancel_order": "change", "search_customers": "query", "set_email": "change"}
    report = CertificationReport(scenario_id="ab" * 8, gates=[], step_results=results)
    messages = reference_messages(spec, report, kinds)
    return [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]


def test_the_reference_finds_the_customer_before_it_cancels_their_order():
    """A read the change did not touch goes first, as a person looks someone up before acting;
    a read that shows what a change made stays after it."""
    customer = {"customer_id": "C-7", "name": "Ann Lee", "email": "a@x.org"}
    assert _cancel_then_find(customer) == ["search_customers", "cancel_order", "set_email"]
    changed = {**customer, "email": "other@x.org"}  # not as it was at the start: it stays
    assert _cancel_then_find(changed) == ["cancel_order", "search_customers", "set_email"]


def test_a_confirmation_never_names_a_namesake_the_user_has_not_chosen_yet():
    """Two changes, the second for one of two same-named customers: the confirmation before the
    first names only the first; the second waits until the user says which one."""
    spec = ScenarioSpec(
        env_id="e1",
        mode="conversational",
        task="Close the event, then refund a customer's tickets.",
        user_facts={
            "event id": "EV-4",
            "customer name": "Jo Gale",
            "customer you mean": "Jo Gale (whose email is jo@b.org)",
        },
        initial_state={"customers": {}},
        reference_solution=[
            {"tool": "find_customers", "arguments": {"name": "Jo Gale"}},
            {"tool": "close_event", "arguments": {"event_id": "EV-4"}},
            {"tool": "refund_customer", "arguments": {"customer_id": "CS-6"}},
        ],
        checks=[],
    )
    found = {
        "success": True,
        "data": [
            {"customer_id": "CS-6", "name": "Jo Gale", "email": "jo@b.org"},
            {"customer_id": "CS-2", "name": "Jo Gale", "email": "jo@a.org"},
        ],
    }
    results = [found, {"success": True}, {"success": True}]
    report = CertificationReport(scenario_id="ab" * 8, gates=[], step_results=results)
    kinds = {"find_customers": "query", "close_event": "state_change"}
    kinds["refund_customer"] = "state_change"
    words = {"close_event": "Close an event.", "refund_customer": "Refund a customer."}
    messages = reference_messages(spec, report, kinds, words)
    texts = [m["content"] or "" for m in messages if m["role"] == "assistant"]
    confirmation = next(t for t in texts if "go ahead" in t)
    assert "EV-4" in confirmation and "CS-6" not in confirmation and "Jo Gale" not in confirmation
    asked = next(i for i, t in enumerate(texts) if "Which one" in t)
    assert asked > texts.index(confirmation)


def test_the_closing_says_a_new_record_by_the_change_that_made_it():
    """The record a change made is said by that change, done, in its tool's words, with the
    reference and the price its result returned ("I've sold 1 ticket …; it's ticket TK-9")."""
    event = {"event_id": "EV-1", "name": "Modern Dance Festival", "price": 42.0}
    ticket = {"ticket_id": "TK-9", "event_id": "EV-1", "quantity": 1, "total": 42.0}
    spec = ScenarioSpec(
        env_id="e1",
        task="Sell one ticket for event EV-1.",
        initial_state={"events": {"EV-1": event}, "tickets": {}},
        reference_solution=[
            {"tool": "get_event", "arguments": {"event_id": "EV-1"}},
            {"tool": "sell_ticket", "arguments": {"event_id": "EV-1", "quantity": 1}},
        ],
        checks=[],
    )
    final = {"events": {"EV-1": event}, "tickets": {"TK-9": ticket}}
    results = [{"success": True, "data": event}, {"success": True, "data": ticket}]
    report = CertificationReport(
        scenario_id="cd" * 8, gates=[], step_results=results, final_state=final
    )
    kinds = {"get_event": "query", "sell_ticket": "state_change"}
    words = {"sell_ticket": "Sell tickets for an event to the signed-in customer."}
    closing = reference_messages(spec, report, kinds, words)[-1]["content"]
    assert "I've sold 1 ticket for Modern Dance Festival" in closing, closing
    assert closing.count("TK-9") == 1 and closing.count("$42.00") == 1, closing


def test_several_changes_are_confirmed_one_after_another_not_in_one_run_on_clause():
    """Round 24: "Before I register a new patient, Jack Hogan (…) and book an appointment for
    the new patient with …, can you confirm that's what you want?"."""
    from envmill.schemas.scenario import SolutionStep
    from envmill.tasks.rollout.reference import confirm_question

    steps = [SolutionStep(tool=t, arguments={}) for t in ("register", "book")]
    words = {"register": "register a new patient, Jack Hogan", "book": "book an appointment"}
    asked = [confirm_question(steps, lambda s: words[s.tool], turn) for turn in range(2)]
    assert asked[0] == (
        "Here's what I'll do: first register a new patient, Jack Hogan; then book an "
        "appointment. Shall I go ahead?"
    )
    assert asked[1].startswith("To confirm, I'll register") and ", and then book" in asked[1]
    one = confirm_question(steps[:1], lambda s: words[s.tool], 1)
    assert (
        one == "Before I register a new patient, Jack Hogan, can you confirm that's what you want?"
    )


def test_a_read_of_who_is_signed_in_goes_without_a_note():
    """Round 25: "Let me look that up." before a session check; round 28: "Let me check who
    is signed in." read as narrating the agent's own business."""
    from envmill.schemas.scenario import SolutionStep
    from envmill.tasks.rollout.reference import _note

    session = SolutionStep(tool="get_signed_in_user", arguments={})
    kinds = {"get_signed_in_user": "query"}
    notes = {_note(pick, session, kinds, None, first=True) for pick in range(60)}
    assert notes == {None}, notes
    other = SolutionStep(tool="get_booking", arguments={"booking_id": "B-1"})
    assert {_note(p, other, {"get_booking": "query"}, None, first=True) for p in range(60)} - {
        None
    }  # other reads still have some


def test_namesakes_are_told_apart_by_the_field_the_user_names():
    """Round 28: listed by department ("one whose department is marketing"), though the user
    picks by job title ("the one whose job title is Head of Marketing")."""
    from envmill.tasks.rollout.reference import _telling_field

    chosen = {"employee_id": "E-6", "department": "marketing", "job_title": "Head of Marketing"}
    other = {"employee_id": "E-2", "department": "operations", "job_title": "Analyst"}
    which = "Jennifer Mccall (whose job title is Head of Marketing)"
    assert _telling_field(which, chosen, [chosen, other]) == "job_title"


def test_a_reply_that_quotes_an_amount_the_user_holds_asks_for_it_first():
    """Round 31: a refusal said "The approved amount is $3,392.11" though the user had only
    given the claim id; the amount, written with its thousands grouped, was not found in it."""
    from envmill.tasks.core.facts import FactLedger, flatten_facts
    from envmill.tasks.rollout.reference import _unsaid_in

    ledger = FactLedger(flatten_facts({"claim id": "CLM-9", "approved amount": 3392.11}))
    ledger.hear("It's CLM-9.")
    reply = "The approved amount is $3,392.11, while the claimed amount is $2,937.03."
    assert [key for key, _ in _unsaid_in(ledger, reply)] == ["approved amount"]
    ledger.hear("It's $3,392.11.", [fact for fact in ledger.facts if fact.value == 3392.11])
    assert _unsaid_in(ledger, reply) == []


def test_a_reply_that_quotes_an_amount_in_cents_asks_for_it_first():
    """Round 77: "The amount is $22.50, while your unpaid fines are $17.13" to a member who had
    only said "I need to pay my fine": 22.5 written as 22.50 was not found in the reply. The
    user then gives it as a person does, in dollars."""
    from envmill.tasks.core.facts import FactLedger, ask_and_answer, flatten_facts
    from envmill.tasks.rollout.reference import _unsaid_in

    ledger = FactLedger(flatten_facts({"amount": 22.5}))
    reply = "The amount is $22.50, while your unpaid fines are $17.13."
    quoted = _unsaid_in(ledger, reply)
    assert [key for key, _ in quoted] == ["amount"]
    assert "$22.50" in ask_and_answer(quoted, 0, after_results=True)[1]


def test_a_note_before_a_change_says_now_once():
    """Round 31: "I'll end membership MS-00003 now now." (the tool's words end in "now")."""
    from envmill.schemas.scenario import SolutionStep
    from envmill.tasks.rollout.reference import _note

    step = SolutionStep(tool="terminate_membership", arguments={"membership_id": "MS-3"})
    kinds = {"terminate_membership": "state_change"}
    notes = {_note(p, step, kinds, "end membership MS-3 now", first=True) for p in range(60)}
    assert "I'll end membership MS-3 now." in notes and not any("now now" in n for n in notes if n)


def test_a_change_note_never_ends_on_a_bracketed_detail_nor_says_next_first():
    """Round 38: "I'll open a new account for Ann (C-7): checking account now."; and "Next,
    I'll …" before any change was made."""
    from envmill.tasks.rollout.reference import _note

    step = SolutionStep(tool="open_account", arguments={})
    kinds = {"open_account": "state_change"}
    detailed = "open a new account for Ann Lee (C-7): checking account"
    said = {_note(i, step, kinds, detailed, first=False) for i in range(200)} - {None}
    assert said == {f"Next, I'll {detailed}."}, said
    assert {_note(i, step, kinds, detailed, first=True) for i in range(200)} == {None}
    plain = {_note(i, step, kinds, "cancel booking BK-9", first=True) for i in range(200)}
    assert plain - {None} == {"I'll cancel booking BK-9 now."}, plain


def test_a_value_that_replaces_one_the_agent_saw_is_asked_as_new():
    """Round 45: "Could you give me the email, please?" did not say the old one or the new."""
    from envmill.tasks.core.facts import Fact
    from envmill.tasks.rollout.reference import _as_new_values

    step = SolutionStep(tool="update_email", arguments={"customer_id": "CU-1", "email": "b@x.org"})
    seen = [{"data": {"customer_id": "CU-1", "email": "a@x.org", "name": "Ann"}, "success": True}]
    email = ("email", Fact("email", "email", "b@x.org"))
    (asked,) = _as_new_values([email], step, seen)
    assert asked[1].noun == "new email"
    assert _as_new_values([email], step, []) == [email]  # nothing seen: just "the email"
    other = [{"data": {"customer_id": "CU-2", "email": "c@x.org"}, "success": True}]
    assert _as_new_values([email], step, other) == [email]  # another record's email
    same = [{"data": {"customer_id": "CU-1", "email": "b@x.org"}, "success": True}]
    assert _as_new_values([email], step, same) == [email]  # not a change of it
    # round 49: a payment's amount is not the pledge's "new amount"
    pay = SolutionStep(tool="record_payment", arguments={"pledge_id": "PLG-1", "amount": 1500})
    pledge = [{"data": {"pledge_id": "PLG-1", "amount": 2000}, "success": True}]
    amount = ("amount", Fact("amount", "amount", 1500))
    assert _as_new_values([amount], pay, pledge) == [amount]


def test_a_new_guests_details_are_asked_before_the_room_found_for_them():
    """Round 59: "reserve a room for a new guest" asked "the room number?" first, because the
    room's read goes ahead of the guest's registration. The read still goes first; the
    questions keep the order the request has (the guest, then the room), and every fact is
    asked before the yes."""
    room = {"room_id": "RM-4", "number": "306", "status": "clean"}
    guest = {"guest_id": "GST-1", "name": "Jared Reynolds", "email": "jr@example.net"}
    spec = ScenarioSpec(
        env_id="e1",
        mode="conversational",
        task="You are Julian. You want the agent to reserve a room for a new guest.",
        user_facts={
            "name": "Jared Reynolds",
            "email": "jr@example.net",
            "room number": "306",
            "nights": 5,
        },
        initial_state={"guests": {}, "rooms": {"RM-4": room}, "reservations": {}},
        reference_solution=[
            {
                "tool": "register_guest",
                "arguments": {"name": guest["name"], "email": guest["email"]},
            },
            {"tool": "find_room", "arguments": {"number": "306"}},
            {
                "tool": "book_room",
                "arguments": {"guest_id": "GST-1", "room_id": "RM-4", "nights": 5},
            },
        ],
        checks=[],
    )
    reservation = {"reservation_id": "RSV-1", "guest_id": "GST-1", "room_id": "RM-4", "nights": 5}
    results = [
        {"success": True, "data": guest},
        {"success": True, "data": [room]},
        {"success": True, "data": reservation},
    ]
    final = {"guests": {"GST-1": guest}, "rooms": spec.initial_state["rooms"]}
    final["reservations"] = {"RSV-1": reservation}
    report = CertificationReport(
        scenario_id="ef" * 8, gates=[], step_results=results, final_state=final
    )
    kinds = {"register_guest": "state_change", "find_room": "query", "book_room": "state_change"}
    messages = reference_messages(spec, report, kinds)
    answers = [i for i, m in enumerate(messages) if m["role"] == "user"][1:]
    said = [messages[i]["content"] for i in answers]
    name = next(i for i in answers if "Jared Reynolds" in messages[i]["content"])
    number = next(i for i in answers if "306" in messages[i]["content"])
    yes = next(i for i in answers if "go ahead" in messages[i]["content"].lower())
    register = next(
        i for i, m in enumerate(messages) if "register_guest" in str(m.get("tool_calls"))
    )
    assert name <= number < yes < register, said


def test_facts_that_fit_one_question_are_asked_in_one():
    """Round 64: "name, email, phone and address?" then "the account type?" took two turns
    where one would do; seven fields in one question still read as a form (round 24)."""
    from envmill.tasks.core.facts import Fact, FactLedger
    from envmill.tasks.rollout.reference import MAX_ASKED, _fewest_questions

    facts = [Fact(f"f{i}", f"field {i}", i) for i in range(8)]
    ledger = FactLedger(facts)
    ledger.revealed.add("f4")  # told already: not asked again
    pairs = [("", fact) for fact in facts]
    groups = [pairs[:4], pairs[4:5], pairs[5:6], pairs[6:]]
    asked = [[fact.key for _, fact in group] for group in _fewest_questions(groups, ledger)]
    assert asked == [["f0", "f1", "f2", "f3", "f5"], ["f6", "f7"]]
    assert all(len(group) <= MAX_ASKED for group in asked)
    # a fact two changes need is asked once, not in each group nor twice in one
    shared = [pairs[:4], [pairs[0], pairs[6]], [pairs[6], pairs[6], pairs[7]]]
    asked = [[fact.key for _, fact in group] for group in _fewest_questions(shared, ledger)]
    assert asked == [["f0", "f1", "f2", "f3", "f6"], ["f7"]]
