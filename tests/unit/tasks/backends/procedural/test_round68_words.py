"""What rounds 65 to 69 quoted, no longer produced: a bare order where the catalog has one with
its reason ("Please process a return for …: no reason is given"), a $1 payment off a $6.74
fine, "I'm here for booking DB-00002" (which names no request), "end session PS-6 as the car
leaves (4 hours)", "the one whose city is Dylanmouth", one ownership refusal word for word in
two items and a Finance Director paid $1,500 a month."""

from __future__ import annotations

import random

from faker import Faker

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.manifest import ArgManifest, RecordRead, ToolManifest
from envmill.tasks.backends.procedural.phrasing.task import _choose_template
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ArgumentDrawer, ChainStep
from envmill.tasks.core.instructions import tool_clause


def test_a_request_takes_the_phrase_with_a_reason_where_there_is_one():
    manifest = ToolManifest(
        tool="return_order",
        kind="state_change",
        entity="order",
        phrases=[
            "Please process a return for order {order_id}.",
            "Order {order_id} arrived damaged; the customer wants to send it back.",
        ],
    )
    order = ArgMention("order_id", "OR-1", "entity_id", "order")
    step = ChainStep(manifest, {"order_id": "OR-1"}, [order], [])
    chosen = {_choose_template(step, random.Random(seed), False, "staff") for seed in range(20)}
    assert chosen == {"Order {order_id} arrived damaged; the customer wants to send it back."}
    plain = {_choose_template(step, random.Random(n), False, "staff", True) for n in range(20)}
    assert "Please process a return for order {order_id}." in plain  # a branch is one order


def test_a_small_balance_is_paid_whole():
    compiled = compile_environment(load_domain("library"), 0)
    drawer = ArgumentDrawer(compiled, random.Random(1), Faker())
    cap = RecordRead(arg="member_id", attrs=["members"], fields=["fines_due"])
    arg = ArgManifest(name="amount", source="float", minimum=1, maximum=200, at_most=[cap])
    state = {"current_time": "2025-06-10T10:00:00", "members": {"MB-1": {"fines_due": 6.74}}}
    drawn = [drawer.draw_value(arg, state, {"member_id": "MB-1"}) for _ in range(50)]
    assert 6.74 in drawn and not [v for v in drawn if v < 6.74]


def test_the_catalog_phrases_the_raters_quoted_are_gone():
    coworking = compile_environment(load_domain("coworking"), 0)
    phrases = [p for t in coworking.tools for p in t.phrases]
    assert "I'm here for booking {booking_id}." not in phrases
    assert any(p.startswith("I'm at the space for booking") for p in phrases)
    parking = compile_environment(load_domain("parking"), 0)
    end = next(t for t in parking.tools if "hours" in {a.name for a in t.args})
    assert tool_clause(end.tool, end.doc) == "end a parking session"


def test_namesakes_are_told_apart_by_place_and_job_as_people_say_it():
    from envmill.tasks.core.field_words import said_apart

    assert said_apart("city", "Dylanmouth", "Dylanmouth") == "in Dylanmouth"
    assert said_apart("specialty", "general", "general") is None  # not "the one in general"
    assert said_apart("region", "valley", "valley") == "in the valley region"  # not "in valley"
    assert said_apart("job_title", "Coordinator", "Coordinator") == "who works as a Coordinator"
    assert said_apart("job_title", "Engineer", "Engineer") == "who works as an Engineer"
    assert said_apart("title", "Intro to Programming", "Intro to Programming") is None


def test_ownership_refusals_are_worded_more_than_one_way():
    from envmill.tasks.backends.procedural.scenarios.refusals import _not_yours

    said = set()
    for rid in ("PLG-00001", "BKG-00002", "BKG-00003", "PLG-00004"):
        mention = ArgMention("pledge_id", rid, "entity_id", "pledge")
        error = (
            "Permission denied: donor DN-2 may act only on their own records; "
            "this one belongs to donor DN-1."
        )
        found = _not_yours(error, [mention])
        if found is not None:
            said.add(found[0].replace(rid, "X"))
    assert len(said) >= 2, said
    assert all("permission" in reason for reason in said)  # the judge reads the reason


def test_a_payslip_pays_a_share_of_the_salary():
    compiled = compile_environment(load_domain("payroll"), 0)
    tool = next(t for t in compiled.tools if "gross_pay" in {a.name for a in t.args})
    gross = next(a for a in tool.args if a.name == "gross_pay")
    drawer = ArgumentDrawer(compiled, random.Random(2), Faker())
    state = {
        "current_time": "2025-06-10T10:00:00",
        "employees": {"E-1": {"annual_salary": 185000.0}},
        "pay_runs": {"R-1": {"period": "monthly"}, "R-2": {"period": "weekly"}},
    }
    chosen = {"employee_id": "E-1", "pay_run_id": "R-1"}
    drawn = [drawer.draw_value(gross, state, chosen) for _ in range(40)]
    assert all(185000 / 13 <= value <= 185000 / 11 for value in drawn), drawn  # round 69: $8,000
    chosen = {"employee_id": "E-1", "pay_run_id": "R-2"}
    drawn = [drawer.draw_value(gross, state, chosen) for _ in range(40)]
    assert all(185000 / 56 <= value <= 185000 / 48 for value in drawn), drawn


def test_a_request_asked_as_a_question_is_an_act_the_user_wants():
    from envmill.tasks.backends.procedural.phrasing.persona import in_second_person

    said = in_second_person(
        "I've caught up on loan L-2; can you put it back in good standing?", frozenset()
    )
    assert (
        said == "You've caught up on loan L-2; you want the agent to put it back in good standing."
    )
    asked = in_second_person("What's the gross pay of payslip PS-1?", frozenset())
    assert asked == "You want to know the gross pay of payslip PS-1."  # not "know this: What's"


def test_a_record_that_is_over_is_asked_only_where_it_stands():
    """Round 72: "the total of my ticket … I'm planning my spending" of a used ticket."""
    from envmill.tasks.backends.procedural.scenarios.questions import _worth_asking

    ticket = {"status": "used", "total": 140.0, "quantity": 4}
    names = ["quantity", "status", "total"]
    now = "2025-06-10T10:00:00"
    assert _worth_asking(names, ticket, now, random.Random(1), usual=False) == ["status"]
    assert "total" in _worth_asking(names, ticket, now, random.Random(1), usual=True)


def test_a_record_named_by_number_first_is_no_order_and_can_i_is_a_want():
    """Breaker: "You want the agent to pay run RUN-0005 was set up by mistake"."""
    from envmill.tasks.backends.procedural.phrasing.persona import in_second_person

    verbs = frozenset({"pay", "cancel", "buy"})
    said = in_second_person("Pay run RUN-0005 was set up by mistake; cancel it.", verbs)
    assert said == "Pay run RUN-0005 was set up by mistake; you want the agent to cancel it."
    wanted = in_second_person("I need more data; can I buy a top-up?", verbs)
    assert wanted == "You need more data; you want to buy a top-up."
