"""The `grounded` gate's rule (DESIGN §3.3): every argument of a reference step was visible to
the agent before that step, in any form it could convert; a guessed id is not."""

from __future__ import annotations

import json
from datetime import date

import pytest

from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.certify.grounding import Sight, ungrounded_reference, ungrounded_trajectory

STATE = {"current_time": "2025-12-20T09:00:00", "hospitals": {"HS-007": {"name": "St Mary"}}}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "book_bed",
            "description": "Book a bed in a ward.",
            "parameters": {
                "type": "object",
                "properties": {
                    "hospital_id": {"type": "string"},
                    "ward": {"type": "string", "enum": ["icu", "general"]},
                    "start": {"type": "string"},
                },
            },
        },
    }
]
FIND = {"tool": "find_hospital", "arguments": {"name": "St Mary"}}
FOUND = {"success": True, "data": [{"hospital_id": "HS-007", "name": "St Mary"}]}
BOOK = {"tool": "book_bed", "arguments": {"hospital_id": "HS-007", "ward": "icu"}}


def _spec(task: str, steps: list[dict], **more) -> ScenarioSpec:
    return ScenarioSpec(
        env_id="e1",
        task=task,
        initial_state=STATE,
        reference_solution=steps,
        checks=[],
        **more,
    )


def test_an_id_no_message_showed_is_ungrounded_and_named():
    spec = _spec("Book an ICU bed at St Mary.", [BOOK])
    unseen = ungrounded_reference(spec, [{"success": True}], TOOLS, "")
    assert [(u.step, u.argument, u.value) for u in unseen] == [(0, "hospital_id", "HS-007")]
    assert "step 1 (book_bed) passes hospital_id='HS-007'" in str(unseen[0])


def test_an_id_an_earlier_result_showed_and_an_enum_of_the_schema_are_grounded():
    spec = _spec("Book an ICU bed at St Mary.", [FIND, BOOK])
    assert ungrounded_reference(spec, [FOUND, {"success": True}], TOOLS, "") == []


def test_an_example_in_a_tool_description_grounds_nothing():
    """ "the hospital id, e.g. HS-007" is not a record the agent looked up; a reference that
    copies the example guesses."""
    described = json.loads(json.dumps(TOOLS))
    spec_of = described[0]["function"]
    spec_of["description"] = "Book a bed in a ward (e.g. at HS-007, 20% off on Mondays)."
    spec_of["parameters"]["properties"]["hospital_id"]["description"] = "e.g. HS-007"
    spec = _spec("Book an ICU bed at St Mary.", [BOOK])
    unseen = ungrounded_reference(spec, [{"success": True}], described, "")
    assert [(u.argument, u.value) for u in unseen] == [("hospital_id", "HS-007")]


def test_the_same_id_in_the_system_message_or_the_task_is_grounded():
    spec = _spec("Book an ICU bed at St Mary.", [BOOK])
    assert ungrounded_reference(spec, [{}], TOOLS, "You serve hospital HS-007.") == []
    spec = _spec("Book an ICU bed at hospital HS-007.", [BOOK])
    assert ungrounded_reference(spec, [{}], TOOLS, "") == []


@pytest.mark.parametrize(
    ("said", "value", "grounded"),
    [
        ("on 23 Dec 2025 at 2:30 pm", "2025-12-23T14:30:00", True),
        ("tomorrow at 14:30", "2025-12-21T14:30:00", True),
        ("on 23 Dec 2025 at 2:30 pm", "2025-12-23T15:30:00", False),
        ("two beds", 2, True),
        ("two beds", 3, False),
        ("$1,500.00", 1500.0, True),
        ("the patient is checked in", "checked_in", True),
        ("for Ana Ruiz", "Ana Ruiz", True),
        ("for Ana Ruiz", "Ana Rui", False),
        ("note that the patient arrived late", "patient arrived late today", True),
        ("note that the patient arrived late", "insurance claim rejected twice", False),
    ],
)
def test_a_value_said_in_another_form_is_grounded_a_guess_is_not(said, value, grounded):
    sight = Sight(today=date(2025, 12, 20))
    sight.read_text(f"Please book it {said}.")
    assert sight.sees(value) is grounded


def test_a_conversational_reference_asks_for_the_fact_it_chooses_by():
    """The agent chooses the hospital by its name, which only the user knows: the reference asks
    for it first, so the search by name is grounded; a fact too long to ask for is not."""
    facts = {"hospital you mean": "the one called St Mary"}
    spec = _spec("I need a bed.", [FIND, BOOK], mode="conversational", user_facts=facts)
    assert ungrounded_reference(spec, [FOUND, {}], TOOLS, "") == []
    narrative = {"full request": "Book an ICU bed at St Mary " + "please " * 20}
    spec = _spec("I need a bed.", [FIND, BOOK], mode="conversational", user_facts=narrative)
    assert [u.value for u in ungrounded_reference(spec, [FOUND, {}], TOOLS, "")] == ["St Mary"]


def test_a_stored_trajectory_is_measured_by_the_same_rule():
    call = {"id": "c1", "type": "function", "function": {"name": "book_bed", "arguments": ""}}
    call["function"]["arguments"] = json.dumps({"hospital_id": "HS-007", "ward": "icu"})
    messages = [
        {"role": "system", "content": "Current date: 2025-12-20 (Saturday)."},
        {"role": "user", "content": "Book an ICU bed at St Mary."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    assert [u.value for u in ungrounded_trajectory(messages, TOOLS)] == ["HS-007"]
    shown = {"role": "tool", "tool_call_id": "c0", "content": json.dumps(FOUND)}
    assert ungrounded_trajectory([*messages[:2], shown, messages[2]], TOOLS) == []


def test_a_number_inside_a_compound_word_the_user_said_is_seen():
    """ "the 60-credit pack for $115" gave 60 (a certified scenario was rejected for it)."""
    from envmill.tasks.certify.grounding import Sight

    sight = Sight()
    sight.hear("I'm running low; I'd like the 60-credit pack for $115.")
    assert sight.unseen({"credits": 60}) == []
    assert sight.unseen({"credits": 61}) == [("credits", 61)]


def test_a_count_of_one_said_as_a_or_one_is_grounded_for_that_noun_only():
    """ "reserve a seat" says seats=1 (round 53); it says nothing of nights, and no count of
    two."""
    sight = Sight()
    sight.hear("I need to reserve a seat on the flight to ATL.")
    assert sight.grounds("seats", 1)
    assert not sight.grounds("seats", 2)
    assert not sight.grounds("nights", 1)
    bought = Sight()
    bought.hear("I need to buy a ticket for Future of AI Talk.")
    assert bought.grounds("quantity", 1) and not bought.grounds("quantity", 2)
    # only the user's words, and only the noun itself (a breaker's): the rules' "A seat costs
    # the fare" and a user's "a credit purchase" say no count
    rules = Sight()
    rules.read_text("A seat costs the flight's fare in economy.")
    rules.hear("I'd like a credit purchase, please.")
    assert not rules.grounds("seats", 1) and not rules.grounds("credits", 1)


def test_a_number_the_rules_spell_out_grounds_no_argument():
    """ "One reservation covers at most one room" put 1 among the seen values of 16 of 24
    domains (a breaker's); digits the system message shows (its date) still count."""
    spec = _spec("Book an ICU bed at St Mary for one night.", [FIND, BOOK])
    spec.reference_solution[1].arguments["nights"] = 2
    system = "One booking covers at most one ward. Current date: 2025-12-20."
    unseen = ungrounded_reference(spec, [FOUND, {"success": True}], TOOLS, system)
    assert [(u.argument, u.value) for u in unseen] == [("nights", 2)]
    spec.reference_solution[1].arguments["nights"] = 1  # the user's "one night" says it
    assert ungrounded_reference(spec, [FOUND, {"success": True}], TOOLS, system) == []
    spec = _spec("Book an ICU bed at St Mary.", [FIND, BOOK])
    spec.reference_solution[1].arguments["nights"] = 1
    unseen = ungrounded_reference(spec, [FOUND, {"success": True}], TOOLS, system)
    assert [(u.argument, u.value) for u in unseen] == [("nights", 1)]


def test_a_schema_naming_a_month_is_read_on_each_scenario_s_day():
    """The schemas are read once per environment, but a day said by its month ("March
    fifth") is the one nearest the scenario's day (a breaker's: the memo read it without one)."""
    from datetime import date

    from envmill.tasks.certify.grounding import schema_sight

    tool = {
        "type": "function",
        "function": {
            "name": "opening",
            "description": "Shut on March fifth.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    first = schema_sight(date(2025, 2, 1), [tool])
    later = schema_sight(date(2026, 2, 1), [tool])
    assert "2025-03-05" in first.dates and "2026-03-05" in later.dates
    assert later.today == date(2026, 2, 1)


def test_a_schema_s_relative_day_is_read_on_each_scenario_s_day_and_the_rest_once():
    """A tool read once is read again only in its texts that say a day relative to today:
    "tomorrow" is the day after each scenario's own day, and nothing of one day stays."""
    from datetime import date

    from envmill.tasks.certify.grounding import schema_sight

    tools = [
        {
            "type": "function",
            "function": {
                "name": "book",
                "description": "Book a slot; the earliest is tomorrow. Rooms: Cedar or Pine.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    first = schema_sight(date(2025, 2, 1), tools)
    later = schema_sight(date(2026, 7, 9), tools)
    again = schema_sight(date(2025, 2, 1), tools)
    assert "2025-02-02" in first.dates and "2026-07-10" in later.dates
    assert "2025-02-02" not in later.dates and "2026-07-10" not in again.dates
    assert first.dates == again.dates and "cedar" in " ".join(later.texts)


def test_a_relative_day_the_reading_finds_is_read_on_the_day_whatever_the_other_tools_say():
    """A breaker's: "delivery_tomorrow" reads as "delivery tomorrow", a day relative to today,
    though its JSON holds no day word; it was read on the day only when another tool's did."""
    from datetime import date

    from envmill.tasks.certify.grounding import schema_sight

    def tool(name: str, description: str) -> dict:
        parameters = {"type": "object", "properties": {}}
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters},
        }

    ships = tool("ship", "Ships the parcel for delivery_tomorrow.")
    alone = schema_sight(date(2026, 3, 10), [ships])
    beside = schema_sight(date(2026, 3, 10), [tool("slots", "Lists the slots open today."), ships])
    assert "2026-03-11" in alone.dates and "2026-03-11" in beside.dates


def test_a_later_user_message_grounds_only_the_steps_after_it_was_sent():
    """A value a later message says is visible from that message's ``first_step`` on, not
    before: the reference cannot use it in reply to an earlier message."""
    steps = [FIND, BOOK]
    later = [{"content": "Book an ICU bed at HS-007.", "first_step": 1}]
    sent_in_time = _spec("Find St Mary for me.", steps, turns=later)
    results = [{"success": True, "data": []}, {"success": True}]
    assert ungrounded_reference(sent_in_time, results, TOOLS, "") == []
    too_late = [{"content": "Book an ICU bed at HS-007.", "first_step": 2}]
    early = _spec("Find St Mary for me.", steps, turns=too_late)
    unseen = ungrounded_reference(early, results, TOOLS, "")
    assert [(u.step, u.argument, u.value) for u in unseen] == [(1, "hospital_id", "HS-007")]


def test_reorderings_stay_within_one_user_message():
    from envmill.schemas.scenario import SolutionStep
    from envmill.tasks.certify.mutants import ReferenceRun, plan_reorders

    solution = [SolutionStep(tool=f"change_{i}") for i in range(3)]
    run = ReferenceRun(solution, [{"n": i} for i in range(4)], [], changed_at=[0, 1, 2])
    everywhere = plan_reorders(run)
    assert len(everywhere) == 3
    by_message = plan_reorders(run, lambda step: 0 if step < 2 else 1)
    assert [p.label for p in by_message] == ["steps 1 and 2 swapped"]
