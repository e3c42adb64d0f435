"""The simulated user's instruction holds what the user knows, in words, as τ-bench's do; the
agent's opening never shows it."""

from __future__ import annotations

import random

from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.backends.procedural.manifest import ToolManifest
from envmill.tasks.backends.procedural.phrasing.persona import as_yourself, what_you_know
from envmill.tasks.backends.procedural.phrasing.task import create_goal
from envmill.tasks.backends.procedural.scenarios.chains import ChainStep
from envmill.tasks.core.opening import opening_message


def test_the_user_knows_their_details_in_words():
    facts = {
        "weight kg": 3091.71,
        "price per kg": 5.45,
        "starts at": "2025-08-23T17:00:00",
        "member you mean": "Leslie Sloan (whose visits are 103)",
    }
    said = what_you_know(facts)
    assert "weight in kg: 3091.71" in said
    assert "price per kg: $5.45" in said
    assert "start time: 23 Aug 2025 at 17:00" in said
    assert "you mean the one whose visits are 103." in said
    assert "2025-08-23T" not in said and "weight kg" not in said


def test_the_opening_leaves_the_details_out():
    task = (
        "You are Gina Gray. You work on the marketing desk. You want the agent to suspend the "
        "farmer. " + what_you_know({"farmer name": "Karen Jones", "sale id": "SL-4"})
    )
    spec = ScenarioSpec(
        env_id="e", backend="procedural", mode="conversational", task=task,
        user_facts={"farmer name": "Karen Jones", "sale id": "SL-4"}, initial_state={},
        reference_solution=[], checks=[],
    )  # fmt: skip
    opening = opening_message(spec)
    assert opening.endswith("I work on the marketing desk. Please suspend the farmer."), opening


def test_a_signed_in_user_is_you_not_the_sender():
    request = (
        "You want the agent to check the credit of the sender: if it is less than $320, you want "
        "the agent to top up the sender; if not, you want the agent to change the sender's address."
    )
    said = as_yourself(request, "sender")
    assert "sender" not in said
    assert "check your credit" in said and "top you up" in said and "change your address" in said
    assert as_yourself(request, None) == request  # about someone else: unchanged


def test_no_detail_reaches_the_opening_whatever_its_punctuation():
    """A value with "." or "?" ("Apt. 270", "U.S. Bank", "ann.Lee@x.com") must not split the
    details line and leave its tail in the agent's first message."""
    facts = {"address": "5 Elm Rd Apt. 270", "bank": "U.S. Bank?", "email": "ann.Lee@x.com"}
    facts["member you mean"] = "Ann Lee (whose address is 5 Elm Rd Apt. 270)"
    task = "You are Ann Lee (a member). You want the agent to open an account. "
    spec = ScenarioSpec(
        env_id="e", backend="procedural", mode="conversational", task=task + what_you_know(facts),
        user_facts=facts, initial_state={}, reference_solution=[], checks=[],
    )  # fmt: skip
    assert opening_message(spec).endswith("Please open an account.")


def test_a_goal_the_user_does_is_never_asked_of_the_agent():
    tool = ToolManifest(tool="enroll_in_course", kind="state_change", entity="enrolment")
    step = ChainStep(manifest=tool, arguments={}, mentions=[], changes=[])
    goals = {create_goal(step, random.Random(seed)).body for seed in range(30)}
    assert "please enroll in a course" not in goals
    assert "I'd like to enroll in a course" in goals


def test_every_tool_staff_may_use_has_words_staff_can_say():
    """Round 28: "please sign up, with the name set to Maurice Montoya and with the email set
    to …" from a box office whose account tool had only a customer's "I'd like an account"."""
    import yaml

    from envmill.tasks.backends.procedural.catalog import CATALOG_DIR
    from envmill.tasks.backends.procedural.phrasing.task import FIRST_PERSON, as_relayed

    missing = []
    for path in sorted(CATALOG_DIR.glob("*.yaml")):
        domain = yaml.safe_load(path.read_text())
        if not domain.get("roles"):
            continue
        for entity in domain["entities"].values():
            for tool in entity.get("operations") or []:
                phrases = tool.get("phrases") or []
                relayed = [p for p in phrases if not FIRST_PERSON.search(p) or as_relayed(p)]
                if phrases and not relayed:
                    missing.append(f"{path.stem}.{tool['name']}")
    assert missing == [], missing


def test_staff_name_the_record_they_mean_as_a_person_would():
    """Round 34: "Please change the email of a member" held back the one detail a colleague
    gives; round 36: "cancel event Future of AI Talk" lacked its article."""
    import random

    from envmill.tasks.backends.procedural.phrasing.persona import names_the_record

    rng, people = random.Random(0), {"member"}
    said = names_the_record(
        "Please change the email of a member.",
        {"member name": "Tyler Maddox", "email": "t@x.org"},
        rng,
        staff=True,
        people=people,
    )
    assert said == "Please change the email of member Tyler Maddox.", said
    course = names_the_record(
        "Please cancel a course.",
        {"course title": "Cell Biology", "reason": "low uptake"},
        rng,
        staff=True,
    )
    assert course == "Please cancel the Cell Biology course.", course
    facts = {"booking id": "BKG-9", "reason": "trip called off"}
    booking = names_the_record("Please cancel a booking.", facts, rng, staff=True)
    assert booking == "Please cancel booking BKG-9.", booking
    # nothing left to ask: the record stays for the agent to ask about
    alone = names_the_record("Please cancel a booking.", {"booking id": "BKG-9"}, rng, staff=True)
    assert alone == "Please cancel a booking.", alone
    mine = [
        names_the_record("I'd like to cancel a booking.", facts, random.Random(i))
        for i in range(10)
    ]
    assert set(mine) == {"I'd like to cancel a booking."}  # a customer says which when asked
    # the record a step makes is not the one named, nor is anything once the goal names one
    hire = "Please add an employee to Payments, and then file a leave request."
    facts = {"employee name": "Sabrina Harris", "team name": "Payments", "days": 5}
    assert names_the_record(hire, facts, rng, staff=True, people=people) == hire
    hire = "Please add an employee, and then file a leave request."
    assert names_the_record(hire, facts, rng, staff=True, people=people) == hire


def test_a_record_the_request_names_is_not_made_indefinite_later():
    """Round 56's sample: "Buyers complained about Melissa Williams's last lots; please suspend
    a farmer for now": she was named, so "the farmer" stays."""
    from envmill.tasks.backends.procedural.phrasing.persona import (
        _named,
        first_mention_indefinite,
    )

    request = "Buyers complained about Melissa Williams's last lots; suspend the farmer for now."
    facts = {"farmer name": "Melissa Williams", "farmer you mean": "Melissa Williams (…)"}
    nouns = {"farmer", "lot"} - _named(request, facts)
    assert first_mention_indefinite(request, nouns) == request
    assert "a farmer" in first_mention_indefinite(request, {"farmer"})  # unnamed: indefinite


def test_a_conditional_goal_names_the_record_it_reads():
    """Round 55's sample: "The retainer balance of a client is meant to stay at $800" withheld
    whose; a goal names the client it is about."""
    from envmill.tasks.backends.procedural.phrasing.task import condition_subject
    from envmill.tasks.backends.procedural.scenarios.chains import ArgMention

    client = ArgMention(
        "client_id", "CLT-4", "entity_id", "client", "Lakeside Medical", "name", by_label=True
    )
    said = condition_subject(
        ArgMention(**{**client.__dict__, "described": "Lakeside Medical"}),
        "retainer balance",
        vague=True,
    )
    assert said == "Lakeside Medical's retainer balance"
    assert condition_subject(client, "retainer balance", vague=True) == (
        "the retainer balance of the client"
    )
