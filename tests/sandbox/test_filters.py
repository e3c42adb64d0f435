"""Trajectory filters (issue 14): one verdict per filter with a reason; the reference passes all.

Conversations are built by hand from small builders; the last part runs real reference
trajectories of the procedural pipeline and of the hand-written clinic through every filter.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from envmill.schemas.rollout import FILTERS, STOP_MARKER, FilterSettings
from envmill.schemas.scenario import GATES, CertificationReport, GateResult, ScenarioSpec
from envmill.schemas.trajectory import TrajectoryRecord
from envmill.tasks.rollout import judge_trajectory, reference_trajectory
from envmill.tasks.rollout.values import KnownValues, extract_values
from envmill.warehouse.rows import verdict_row
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import query

TOOLS = {"find_booking", "cancel_booking", "check_in"}
CHANGES = {"cancel_booking", "check_in"}
TASK = (
    "Hi, I have a request about a booking. Please cancel the booking I made last week, and"
    " make sure nothing else on my account changes."
)  # 25 words
FACTS = {"booking id": "BK-1042", "email": "ana@example.com"}


# --- builders ------------------------------------------------------------------------------


def scenario(mode: str = "conversational", task: str = TASK, facts: dict | None = None, **kw):
    return ScenarioSpec(
        env_id="e" * 16,
        mode=mode,
        task=task,
        user_facts=FACTS if facts is None else facts,
        initial_state={},
        reference_solution=kw.get("solution", [{"tool": "cancel_booking", "arguments": {}}]),
        checks=[{"description": "Has cancelled", "code": "def check(i, f):\n    return True\n"}],
    )


def system() -> dict:
    return {"role": "system", "content": "Booking desk. Current date and time: 2025-03-10 09:00."}


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def say(text: str) -> dict:
    return {"role": "assistant", "content": text}


def call(call_id: str, name: str, **arguments: Any) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [tool_call(call_id, name, arguments)],
    }


def tool_call(call_id: str, name: str, arguments: Any) -> dict:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def result(call_id: str, success: bool = True, **data: Any) -> dict:
    body = {"success": success, "data": data} if success else {"success": False, "error": "no"}
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(body, sort_keys=True)}


def conversation() -> list[dict]:
    """A good conversational episode: ask, answer, look up, change, final answer."""
    return [
        system(),
        user(TASK),
        say("Could you tell me the booking id?"),
        user("Sure, it's BK-1042."),
        call("call_1", "find_booking", booking_id="BK-1042"),
        result("call_1", booking_id="BK-1042", price=98.22, starts_at="2025-03-14T09:00:00"),
        call("call_2", "cancel_booking", booking_id="BK-1042"),
        result("call_2", booking_id="BK-1042", status="cancelled"),
        say("Done: booking BK-1042 is cancelled."),
    ]


def trajectory(messages: list[dict] | None = None, **fields: Any) -> TrajectoryRecord:
    base = {
        "trajectory_id": "0123456789abcdef",
        "scenario_id": "f" * 16,
        "env_id": "e" * 16,
        "policy": "test-model",
        "messages": conversation() if messages is None else messages,
        "check_results": [True, True],
        "reward": 1.0,
        "success": True,
        "steps": 2,
        "termination": "finished",
    }
    return TrajectoryRecord(**base | fields)


def judge(traj: TrajectoryRecord, spec: ScenarioSpec | None = None, **settings: Any) -> dict:
    verdicts = judge_trajectory(
        traj,
        spec or scenario(),
        tool_names=TOOLS,
        state_changing_tools=CHANGES,
        settings=FilterSettings(**settings),
    )
    return {v.filter: v for v in verdicts}


def with_message(index: int, message: dict, messages: list[dict] | None = None) -> list[dict]:
    messages = copy.deepcopy(conversation() if messages is None else messages)
    messages[index] = message
    return messages


# --- every filter, one verdict each ------------------------------------------------------------


def test_one_verdict_per_filter_in_order_all_kept_with_reasons():
    verdicts = judge_trajectory(
        trajectory(),
        scenario(),
        tool_names=TOOLS,
        state_changing_tools=CHANGES,
        settings=FilterSettings(),
    )
    assert [v.filter for v in verdicts] == list(FILTERS)
    assert all(v.kept and v.reason and v.details["code"] == "ok" for v in verdicts)
    assert {v.trajectory_id for v in verdicts} == {"0123456789abcdef"}
    json.dumps([v.details for v in verdicts])  # a JSON column


# --- reward --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reward", "success", "settings", "code"),
    [
        (1.0, True, {}, "ok"),
        (0.5, False, {"min_reward": 0.5, "require_success": False}, "ok"),  # boundary
        (1 - 0.9, False, {"min_reward": 0.1, "require_success": False}, "ok"),  # float rounding
        (0.49, False, {"min_reward": 0.5, "require_success": False}, "low_reward"),
        (0.5, False, {"min_reward": 0.5}, "not_success"),
        (0.0, False, {"min_reward": 0.0, "require_success": False}, "ok"),
        (0.99, False, {}, "low_reward"),
    ],
)
def test_reward(reward, success, settings, code):
    checks = [success]
    verdict = judge(trajectory(reward=reward, success=success, check_results=checks), **settings)[
        "reward"
    ]
    assert (verdict.kept, verdict.details["code"]) == (code == "ok", code), verdict.reason
    assert verdict.details["reward"] == reward
    if code == "low_reward":
        assert "below min_reward" in verdict.reason


# --- length --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "code"),
    [
        ({"min_steps": 2}, "ok"),  # exactly min_steps
        ({"min_steps": 3}, "too_few_steps"),
        ({"max_steps": 2}, "ok"),  # exactly max_steps
        ({"max_steps": 1}, "too_many_steps"),
        ({"max_messages": 9}, "ok"),  # exactly max_messages
        ({"max_messages": 8}, "too_many_messages"),
    ],
)
def test_length_boundaries(settings, code):
    verdict = judge(trajectory(), **settings)["length"]
    assert (verdict.kept, verdict.details["code"]) == (code == "ok", code), verdict.reason
    assert verdict.details | {"code": code} == {"code": code, "steps": 2, "messages": 9}


def test_length_counts_the_tool_calls_in_the_messages():
    messages = [system(), user("Hello."), say("Hello! How can I help?")]
    verdict = judge(trajectory(messages, steps=5))["length"]  # a policy turn is not a call
    assert not verdict.kept and verdict.details["code"] == "too_few_steps"
    assert verdict.reason == "0 tool calls, fewer than min_steps 1"
    assert judge(trajectory(messages, steps=5), min_steps=0)["length"].kept


# --- format ------------------------------------------------------------------------------------


def _parallel() -> list[dict]:
    both = say("Checking both.")
    both["tool_calls"] = [
        tool_call("a", "find_booking", {"booking_id": "BK-1042"}),
        tool_call("b", "check_in", {"booking_id": "BK-1042"}),
    ]
    return [system(), user(TASK), both, result("b"), result("a"), say("All done.")]


MALFORMED = {
    "no_system": (lambda m: m[1:], "no_system", 0),
    "no_user": (lambda m: [m[0], *m[2:]], "no_user", 1),
    "bad_role": (lambda m: with_message(2, {"role": "function", "content": "x"}, m), "bad_role", 2),
    "late_system": (lambda m: with_message(2, system(), m), "misplaced_system", 2),
    "empty_assistant": (lambda m: with_message(2, say(""), m), "empty_assistant", 2),
    "empty_tool_calls": (
        lambda m: with_message(2, {"role": "assistant", "content": None, "tool_calls": []}, m),
        "empty_assistant",
        2,
    ),
    "empty_user": (lambda m: with_message(3, user("  "), m), "empty_message", 3),
    "content_parts": (
        lambda m: with_message(2, {"role": "assistant", "content": [{"text": "x"}]}, m),
        "bad_content",
        2,
    ),
    "no_call_id": (
        lambda m: with_message(4, call("", "find_booking", booking_id="BK-1042"), m),
        "bad_tool_call",
        4,
    ),
    "not_function": (
        lambda m: _edit_call(m, 4, lambda c: c.update(type="code")),
        "bad_tool_call",
        4,
    ),
    "unknown_tool": (
        lambda m: with_message(6, call("call_2", "delete_everything"), m),
        "unknown_tool",
        6,
    ),
    "arguments_not_json": (
        lambda m: _edit_call(m, 6, lambda c: c["function"].update(arguments="{booking_id: 1")),
        "bad_arguments",
        6,
    ),
    "arguments_a_list": (
        lambda m: _edit_call(m, 6, lambda c: c["function"].update(arguments="[1]")),
        "bad_arguments",
        6,
    ),
    "arguments_not_a_string": (
        lambda m: _edit_call(m, 6, lambda c: c["function"].update(arguments={"a": 1})),
        "bad_arguments",
        6,
    ),
    "duplicate_id": (
        lambda m: [*m[:6], call("call_1", "cancel_booking"), result("call_1"), m[8]],
        "duplicate_tool_call_id",
        6,
    ),
    "unanswered_before_assistant": (lambda m: [*m[:5], *m[6:]], "unanswered_tool_call", 4),
    "unanswered_before_user": (
        lambda m: [*m[:5], user("Hello?"), *m[5:]],
        "unanswered_tool_call",
        4,
    ),
    "unanswered_at_the_end": (lambda m: m[:7], "unanswered_tool_call", 6),
    "answers_nothing": (lambda m: [*m[:3], result("call_9"), *m[3:]], "orphan_tool_message", 3),
    "answered_twice": (lambda m: [*m[:6], result("call_1"), *m[6:]], "orphan_tool_message", 6),
    "ends_with_tool": (lambda m: m[:8], "bad_ending", 7),
    "ends_with_user": (lambda m: [*m, user("And one more thing.")], "bad_ending", 9),
    "stop_marker_early": (
        lambda m: with_message(3, user(f"BK-1042 {STOP_MARKER}"), m),
        "misplaced_stop",
        3,
    ),
}


def _edit_call(messages: list[dict], index: int, edit) -> list[dict]:
    messages = copy.deepcopy(messages)
    edit(messages[index]["tool_calls"][0])
    return messages


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_each_malformed_conversation_is_caught_at_its_message(case):
    make, code, index = MALFORMED[case]
    verdict = judge(trajectory(make(conversation())))["format"]
    assert not verdict.kept, case
    assert verdict.details == {"code": code, "index": index}, verdict.reason
    assert str(index) in verdict.reason


def test_parallel_calls_answered_in_any_order_are_well_formed():
    assert judge(trajectory(_parallel()))["format"].kept


def test_a_conversation_the_user_stopped_may_end_with_the_user():
    messages = [*conversation(), user(STOP_MARKER)]
    assert judge(trajectory(messages, termination="user_stop"))["format"].kept
    stopped = judge(trajectory(messages, termination="finished"))["format"]
    assert stopped.details == {"code": "bad_ending", "index": 9}


# --- user_sanity ---------------------------------------------------------------------------


def sanity(messages: list[dict] | None = None, spec=None, settings=None, **fields) -> Any:
    return judge(trajectory(messages, **fields), spec, **(settings or {}))["user_sanity"]


def test_a_non_conversational_episode_has_no_simulated_user():
    verdict = sanity(
        with_message(3, user("My card is 4111-1111-1111-1111.")), scenario("non_conversational")
    )
    assert verdict.kept and verdict.reason == "no simulated user"


def test_the_opening_may_state_the_request_even_word_for_word():
    for opening in (TASK, f"Hello! {TASK} Thanks a lot.", "I want to cancel a booking."):
        assert sanity(with_message(1, user(opening))).kept, opening


def test_a_later_message_reciting_the_task_is_a_paste():
    verdict = sanity(with_message(3, user(f"BK-1042. {TASK}")))
    assert not verdict.kept and verdict.details["code"] == "pasted_task"
    assert verdict.details["index"] == 3
    assert (verdict.details["source"], verdict.details["run"]) == ("task", 25)


@pytest.mark.parametrize(("run", "pasted"), [(20, True), (19, False)])
def test_paste_share_boundary(run, pasted):
    """25 task words at paste_share 0.8 need 20 in a row."""
    words = TASK.split()
    said = f"BK-1042, and {' '.join(words[:run])}"
    verdict = sanity(with_message(3, user(said)))
    assert verdict.kept is not pasted, verdict.reason
    assert sanity(with_message(3, user(said)), settings={"paste_share": 1.0}).kept


@pytest.mark.parametrize(("length", "checked"), [(12, True), (11, False)])
def test_a_short_task_is_never_a_paste(length, checked):
    task = " ".join(f"word{i}" for i in range(length))
    verdict = sanity(with_message(3, user(f"BK-1042 {task}")), scenario(task=task))
    assert verdict.kept is not checked, verdict.reason


def test_an_instruction_to_the_user_pasted_as_the_opening_is_caught():
    task = (
        "You are Ana Silva. You booked a table for Friday but cannot make it, and want the"
        " booking cancelled without any fee, keeping your loyalty points."
    )
    spec = scenario(task=task, facts=FACTS | {"name": "Ana Silva"})
    pasted = sanity(with_message(1, user(task)), spec)
    assert not pasted.kept and pasted.details["index"] == 1
    own_words = (
        "I booked a table for Friday but cannot make it, and want the booking cancelled"
        " without any fee, keeping my loyalty points."
    )  # what the reference opening (opening.opening_message) says
    assert sanity(with_message(1, user(own_words)), spec).kept


def test_reciting_a_narrative_fact_is_a_paste_unless_it_is_an_argument():
    story = "Please cancel booking BK-1042 that I made last week and refund it to ana@example.com."
    spec = scenario(facts=FACTS | {"full request": story})
    verdict = sanity(with_message(1, user(story)), spec)
    assert not verdict.kept and verdict.details["source"] == "user_facts.full request"
    used = [{"tool": "cancel_booking", "arguments": {"note": story}}]
    assert sanity(with_message(1, user(story)), scenario(facts={"note": story}, solution=used)).kept


def test_naming_which_namesake_in_the_facts_words_is_an_answer_not_a_paste():
    """ "Which one?" is answered by what tells them apart, as the fact says it."""
    which = "Karen Melton (the one whose date of birth is 4 Apr 1957 in Springfield)"
    said = "I mean Karen Melton, the one whose date of birth is 4 Apr 1957 in Springfield."
    spec = scenario(facts=FACTS | {"patient you mean": which})
    assert sanity(with_message(3, user(said)), spec).kept
    story = scenario(facts=FACTS | {"patient story": which})  # the same words, not asked for
    assert not sanity(with_message(3, user(said)), story).kept


@pytest.mark.parametrize(
    ("said", "source"),
    [
        ('{"booking id": "BK-1042"}', "json"),
        ("- booking id: BK-1042\n- email: ana@example.com\n- name: Ana", "facts_list"),
        ("What you want done: cancel BK-1042", "prompt"),
    ],
)
def test_the_facts_as_data_or_the_prompt_recited_is_a_paste(said, source):
    spec = scenario(facts=FACTS | {"name": "Ana"})
    verdict = sanity(with_message(3, user(said)), spec)
    assert not verdict.kept and verdict.details["source"] == source, verdict.reason


def test_two_labelled_answers_are_speech_not_a_recited_list():
    said = "Booking id: BK-1042\nEmail: ana@example.com"
    assert sanity(with_message(3, user(said))).kept


STOPPED_BEFORE_CHANGE = {
    "no call at all": [system(), user(TASK), say("Which booking?"), user(STOP_MARKER)],
    "only a query": [*conversation()[:6], say("Found it."), user(STOP_MARKER)],
    "a failed change": [
        *conversation()[:6],
        call("call_2", "cancel_booking", booking_id="BK-1042"),
        result("call_2", success=False),
        say("I could not cancel it."),
        user(STOP_MARKER),
    ],
}


@pytest.mark.parametrize("case", sorted(STOPPED_BEFORE_CHANGE))
def test_a_user_who_stops_before_a_change_stopped_early(case):
    messages = STOPPED_BEFORE_CHANGE[case]
    verdict = sanity(messages, termination="user_stop")
    assert not verdict.kept and verdict.details["code"] == "early_stop", verdict.reason
    assert verdict.details["index"] == len(messages) - 1
    assert sanity(messages, termination="finished").details["code"] != "early_stop"


@pytest.mark.parametrize("case", sorted(STOPPED_BEFORE_CHANGE))
def test_a_question_or_refusal_is_done_without_a_change(case):
    """A reference that changes nothing (a question, a refusal) makes a stop before any change
    the right ending, not an early one."""
    question = scenario(solution=[{"tool": "get_booking", "arguments": {}}])
    verdict = sanity(STOPPED_BEFORE_CHANGE[case], question, termination="user_stop")
    assert verdict.details.get("code") != "early_stop", verdict.reason


def test_a_user_who_stops_after_a_change_is_fine():
    assert sanity([*conversation(), user(STOP_MARKER)], termination="user_stop").kept


@pytest.mark.parametrize(
    ("said", "kind"),
    [
        ("It's BK-2077.", "id"),
        ("Write to bob@example.org.", "email"),
        ("Call me on +1 555 0142.", "phone"),
        ("It was on 2025-04-02.", "date"),
        ("It was on April 2nd.", "date"),
        ("It starts at 4pm.", "time"),
        ("Refund $45.50 please.", "number"),
        ("We were 12 guests.", "number"),
        ("It's under the name of Maria Lopez.", "name"),
    ],
)
def test_a_value_from_nowhere_is_invented(said, kind):
    verdict = sanity(with_message(3, user(f"BK-1042. {said}")))
    assert not verdict.kept and verdict.details["code"] == "invented_requirement"
    assert verdict.details["index"] == 3
    assert [v["kind"] for v in verdict.details["values"]] == [kind], verdict.details


@pytest.mark.parametrize(
    "said",
    [
        "Sure, it's bk-1042, and my e-mail is ANA@example.com.",  # facts, any case
        "The one on March 14th at 9am, 98.22 dollars.",  # the tool result, said differently
        "Yes, the one on 14 Mar 2025 at 09:00.",
        "I have 2 questions and 1 more thing.",  # small numbers are not values
        "Thanks, Dr. Lee said BK-1042 is fine.",  # "Lee" said by the agent before
    ],
)
def test_values_from_the_task_facts_or_conversation_are_not_invented(said):
    messages = [*conversation()[:8], say("Dr. Lee asked me to confirm."), user(said), say("Ok.")]
    assert sanity(messages).kept, sanity(messages).reason


def test_a_value_is_invented_when_said_before_the_agent_says_it():
    messages = [*conversation()[:3], user("BK-1042, and I'm in room 314."), say("Room 314, ok.")]
    verdict = sanity([*messages, *conversation()[4:]])
    assert verdict.details["values"] == [{"index": 3, "kind": "number", "value": "314"}]


def test_every_problem_is_listed_and_the_first_names_the_verdict():
    messages = [system(), user(TASK), say("Which booking?"), user(f"{TASK} BK-9999"), say("Ok.")]
    verdict = sanity([*messages, user(STOP_MARKER)], termination="user_stop")
    assert verdict.details["codes"] == ["pasted_task", "early_stop", "invented_requirement"]
    assert verdict.details["code"] == "pasted_task"
    assert "also early_stop, invented_requirement" in verdict.reason


def test_one_value_written_many_ways_is_known_by_one_key():
    known = KnownValues()
    known.add('{"starts_at":"2025-11-10T11:00:00","phone":"(864) 220-8653","fee":1200.0}')
    for said in ("November 10th", "10 Nov 2025", "Nov. 10, 2025", "10/11/2025", "11am", "11:00"):
        assert all(known.knows(v) for v in extract_values(f"on {said}")), said
    for said in ("864-220-8653", "+1 864 220 8653", "$1,200.00", "1200"):
        assert all(known.knows(v) for v in extract_values(f"it is {said}")), said
    for said in ("11 Nov", "10 Nov 2024", "3pm", "864-220-8654", "$1,201"):
        assert not any(known.knows(v) for v in extract_values(f"on {said}")), said


def test_a_surname_with_a_capital_inside_is_one_name():
    """ "Samantha McCall" read as "Samantha Mc", a name in neither task nor facts: the user
    sanity filter dropped a reference whose user only gave their name."""
    known = KnownValues()
    known.add("Samantha McCall; Rita O'Connor")
    said = extract_values("It's Samantha McCall, and Rita O'Connor is her manager.")
    assert [v.text for v in said] == ["Samantha McCall", "Rita O'Connor"]
    assert all(known.knows(v) for v in said)
    assert not known.knows(extract_values("It's Samantha McCarthy.")[0])


# --- verdicts as rows ----------------------------------------------------------------------


def test_verdicts_are_rows_that_sql_groups_by_filter_and_code(tmp_path):
    dropped = trajectory(trajectory_id="fedcba9876543210", reward=0.5, success=False)
    verdicts = [v for t in (trajectory(), dropped) for v in judge(t).values()]
    warehouse = Warehouse(tmp_path / "data")
    warehouse.write("verdicts", [verdict_row(v, "run-1") for v in verdicts], key="k")
    sql = (
        "SELECT filter, json_extract_string(details_json, '$.code') AS code, count(*) AS n,"
        " round(100 * count(*) / sum(count(*)) OVER (PARTITION BY filter), 1) AS pct"
        " FROM verdicts GROUP BY filter, code ORDER BY filter, n DESC"
    )  # the README's query
    rows = query(warehouse.root, sql).to_pylist()
    assert {(r["filter"], r["code"], r["pct"]) for r in rows if r["filter"] == "reward"} == {
        ("reward", "ok", 50.0),
        ("reward", "low_reward", 50.0),
    }
    assert {r["filter"] for r in rows} == set(FILTERS)


# --- real reference trajectories pass every filter ---------------------------------------------


def _report(spec: ScenarioSpec, env, sandbox) -> CertificationReport:
    with sandbox.episode(env.source, env.class_name, spec.initial_state) as episode:
        outcomes = [episode.call(s.tool, s.arguments) for s in spec.reference_solution]
    return CertificationReport(
        scenario_id=spec.scenario_id,
        gates=[GateResult(gate=gate, passed=True) for gate in GATES],
        step_results=[outcome.result for outcome in outcomes],
        check_results=[True] * len(spec.checks),
    )


def _assert_all_kept(traj: TrajectoryRecord, spec: ScenarioSpec, tools, kinds) -> None:
    verdicts = judge_trajectory(
        traj,
        spec,
        tool_names={t.function.name for t in tools},
        state_changing_tools={name for name, kind in kinds.items() if kind == "state_change"},
        settings=FilterSettings(),
    )
    assert [(v.filter, v.reason) for v in verdicts if not v.kept] == [], traj.messages


def test_reference_trajectories_of_the_procedural_pipeline_pass_every_filter(sandbox):
    from envmill.schemas.settings import EnvmillSettings
    from envmill.tasks.pipeline import plan_batches, synthesize_batch
    from tests.conftest import TEST_LIMITS

    settings = EnvmillSettings(
        envs=3, scenarios_per_env=4, seed=7, domains=["clinic", "airline", "banking"],
        sandbox=TEST_LIMITS,
    )  # fmt: skip
    (batch,) = plan_batches(settings)
    output = synthesize_batch(batch, settings, sandbox)
    envs = {env.env_id: env for env in output.environments}
    scenarios = {s.scenario_id: s for s in output.scenarios}
    modes = []
    for traj in output.trajectories:
        spec, env = scenarios[traj.scenario_id], envs[traj.env_id]
        _assert_all_kept(traj, spec, env.tools, env.tool_kinds)
        modes.append(spec.mode)
    assert {"conversational", "non_conversational"} <= set(modes), modes


def test_reference_trajectories_of_the_hand_written_clinic_pass_every_filter(
    clinic, clinic_scenarios, sandbox
):
    specs = [ScenarioSpec(env_id=clinic.env_id, **raw) for raw in clinic_scenarios["certified"]]
    assert {"conversational", "non_conversational"} == {s.mode for s in specs}
    for spec in specs:
        traj = reference_trajectory(spec, _report(spec, clinic, sandbox), introduction="Clinic.")
        _assert_all_kept(traj, spec, clinic.tools, clinic.tool_kinds)
