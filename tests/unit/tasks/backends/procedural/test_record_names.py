"""A record a request names by its label, as people say it (round 24: "How many attended
bookings does gym class Endurance Ride have?", "the price of menu item Beef Pho")."""

from __future__ import annotations

import pytest

from envmill.tasks.backends.procedural.scenarios.subjects import named_by_label


@pytest.mark.parametrize(
    ("noun", "label", "said"),
    [
        ("gym class", "Endurance Ride", "the Endurance Ride class"),
        ("machine", "Packaging Line", "the Packaging Line machine"),
        ("menu item", "Beef Pho", "Beef Pho"),  # a generic kind adds nothing
        ("desk", "Hot Desk 7", "Hot Desk 7"),  # the name already says the kind
        ("book", "The Hidden Life of Cells", "The Hidden Life of Cells"),  # never "the The"
        ("flight", "SK331", "flight SK331"),  # a code after its kind
        ("customer", "Jane Doe", "Jane Doe"),  # a person by name
        ("courier", "John Green", "courier John Green"),  # never "the John Green courier"
        ("doctor", "Laurie Harper", "Dr. Laurie Harper"),  # not a patient of that name
        ("pet", "Biscuit", "Biscuit"),
    ],
)
def test_a_record_is_named_as_people_name_it(noun, label, said):
    assert named_by_label(noun, label) == said


def test_a_described_record_takes_the_place_of_its_indefinite_noun_in_a_goal():
    """Round 24: "enroll a student in a course for Kathryn Anderson's most recent course"."""
    import random

    from envmill.tasks.backends.procedural.manifest import ToolManifest
    from envmill.tasks.backends.procedural.phrasing.task import create_goal
    from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ChainStep

    tool = ToolManifest(tool="enroll_in_course", kind="state_change", entity="enrolment")
    latest = "Kathryn Anderson's latest course"
    mentions = [
        ArgMention("student_id", "ST-4", "entity_id", "student"),
        ArgMention("course_id", "CRS-3", "entity_id", "course", described=latest),
    ]
    goal = create_goal(ChainStep(tool, {}, mentions, []), random.Random(1), "staff").body
    assert goal.endswith("enroll a student in Kathryn Anderson's latest course"), goal


def test_an_appointment_is_booked_with_the_doctor_a_goal_describes():
    """Round 39: "book an appointment for the dermatologist"."""
    import random

    from envmill.tasks.backends.procedural.manifest import ToolManifest
    from envmill.tasks.backends.procedural.phrasing.task import create_goal
    from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ChainStep

    tool = ToolManifest(tool="book_appointment", kind="state_change", entity="appointment")
    mentions = [
        ArgMention("doctor_id", "DR-6", "entity_id", "doctor", described="the dermatologist")
    ]
    goal = create_goal(ChainStep(tool, {}, mentions, []), random.Random(1), "self").body
    assert goal.endswith("book an appointment with the dermatologist"), goal


def test_a_label_that_is_a_line_of_text_keeps_its_kind_before_it():
    said = named_by_label("ticket", "Data import stuck at 90 percent")
    assert said == "ticket Data import stuck at 90 percent"


def test_two_requests_joined_ask_please_once():
    """Round 25: "Please mark a doctor as on leave, and then cancel an appointment, please."."""
    import random

    from envmill.tasks.backends.procedural.phrasing.task import Clause, compose_clauses

    clauses = [Clause("please mark a doctor as on leave"), Clause("cancel an appointment, please")]
    said = {compose_clauses(clauses, random.Random(seed)) for seed in range(20)}
    assert all(s.lower().count("please") == 1 for s in said), said


def test_a_namesake_told_apart_by_a_place_is_the_one_in_it():
    """Round 25: "I mean Cameron Munoz, the one with the east region"."""
    from types import SimpleNamespace

    from envmill.tasks.backends.procedural.scenarios.namesakes import _hint_key

    kinds = {
        "region": SimpleNamespace(values=["east", "west"]),
        "plan": SimpleNamespace(values=["team"]),
    }
    spec = SimpleNamespace(entities={"driver": SimpleNamespace(fields=kinds)})
    compiled = SimpleNamespace(spec=spec)
    assert _hint_key(compiled, "driver", "region", "east") == "disambiguation_place"
    assert _hint_key(compiled, "driver", "plan", "team") == "disambiguation_enum"


def test_a_record_named_with_the_is_mine_and_yours_without_it():
    """From a review: "I count 1 completed top ups for your the 6014 2291 0043 card"."""
    from envmill.tasks.backends.procedural.scenarios.questions import Question

    asked = Question(
        "How many top ups does the 6014 card have?",
        [],
        "The 6014 card has 1 top up; I count 1 for the 6014 card.",
        None,
        subject="the 6014 card",
    ).in_first_person()
    assert asked.text == "How many top ups does my 6014 card have?"
    assert asked.answer == "Your 6014 card has 1 top up; I count 1 for your 6014 card."


def test_an_order_whose_verb_is_the_name_after_it_says_please():
    """Round 28: "Mark Mark Thomas's delivery en route as delivered"."""
    from envmill.tasks.backends.procedural.phrasing.task import fill_template
    from envmill.tasks.backends.procedural.scenarios.chains import ArgMention

    mark = ArgMention("courier_id", "CR-9", "entity_id", "courier", "Mark Thomas", "name",
                      by_label=True)  # fmt: skip
    said = fill_template("Mark {courier_id.label}'s delivery as delivered.", [mark], False)
    assert said == "Please mark Mark Thomas's delivery as delivered.", said


def test_a_titled_or_coded_staff_label_gets_no_second_title_and_a_greeting_keeps_verbs_low():
    """From a review: "Dr. Dr. Ann Lee", "Dr. DR-001", "Hey, Register Julie Hunter …"."""
    import random

    from envmill.tasks.backends.procedural.phrasing.openers import open_request
    from envmill.tasks.backends.procedural.phrasing.persona import COMMON_VERBS, in_second_person

    assert named_by_label("doctor", "Dr. Ann Lee") == "Dr. Ann Lee"
    assert named_by_label("doctor", "DR-001") == "doctor DR-001"
    asked = in_second_person("What is the room of Dr. Chase Young?", COMMON_VERBS)
    assert asked == "You want to know the room of Dr. Chase Young.", asked
    said = [open_request("Register Julie Hunter as a patient.", random.Random(i)) for i in range(9)]
    assert not any(", Register" in s for s in said), said
    lot = [open_request("Airport Lot is shut; close it.", random.Random(i)) for i in range(9)]
    assert not any("airport Lot" in s for s in lot), lot
