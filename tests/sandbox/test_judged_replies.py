"""Checks that judge what the agent says (the answer contract, README "Contracts" on §3.3/§3.4).

A check of three parameters also gets the text of the episode's final assistant message. The
gates judge the reference's outcome with its answer, the initial state without one, and the
reference's outcome with its answer withheld; wrong solutions keep the reference's answer, so
only their states can cost them the reward.
"""

from __future__ import annotations

import copy

import pytest

from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.certify import certify_scenario
from envmill.tasks.certify.guard import guard_check
from envmill.tasks.certify.scoring import final_answer, score_final_state
from envmill.tasks.envs.policy import check_check_source
from envmill.tasks.rollout.reference import FINAL_ANSWER, reference_messages

SAYS_FEE = """def check(initial_state, final_state, answer):
    return "80" in answer.replace(",", "")
"""
DECLINES = """def check(initial_state, final_state, answer):
    words = answer.lower()
    return any(w in words for w in ("cannot", "can't", "unable")) and "done" not in words
"""
ALWAYS = """def check(initial_state, final_state, answer):
    return True
"""


def _question(clinic, clinic_scenarios, **changes) -> ScenarioSpec:
    initial = copy.deepcopy(clinic_scenarios["certified"][0]["initial_state"])
    fields = {
        "env_id": clinic.env_id,
        "task": "What is Dr. Nina Patel's visit fee?",
        "initial_state": initial,
        "reference_solution": [{"tool": "get_doctor", "arguments": {"doctor_id": "D03"}}],
        "checks": [
            {"description": "The reply states the fee of 80 dollars", "code": SAYS_FEE},
            guard_check(initial, initial).model_dump(),
        ],
        "reference_answer": "Dr. Nina Patel's visit fee is $80.00.",
        "kind": "answer",
    }
    return ScenarioSpec(**{**fields, **changes})


def _gate(report, name):
    return next(g for g in report.gates if g.gate == name)


def test_a_question_is_certified_by_its_answer(clinic, clinic_scenarios, sandbox):
    report = certify_scenario(_question(clinic, clinic_scenarios), clinic, sandbox)
    assert report.status == "certified", report.gates
    assert "withheld" in _gate(report, "partial_fails").reason
    assert report.check_results == [True, True]


def test_an_answer_check_that_ignores_the_answer_is_rejected(clinic, clinic_scenarios, sandbox):
    spec = _question(clinic, clinic_scenarios)
    spec.checks[0].code = ALWAYS
    report = certify_scenario(spec, clinic, sandbox)
    assert report.rejected_gate == "not_trivial"


def test_a_change_whose_answer_check_passes_silently_is_rejected(clinic, clinic_scenarios, sandbox):
    raw = copy.deepcopy(clinic_scenarios["certified"][0])
    raw["checks"].append({"description": "Says it is done", "code": ALWAYS})
    spec = ScenarioSpec(env_id=clinic.env_id, **raw, reference_answer="All done.")
    report = certify_scenario(spec, clinic, sandbox)
    assert report.rejected_gate == "guards_collateral"
    assert "answer withheld keeps full reward" in _gate(report, "guards_collateral").reason


def test_a_refusal_changes_nothing_and_says_so(clinic, clinic_scenarios, sandbox):
    initial = copy.deepcopy(clinic_scenarios["certified"][0]["initial_state"])
    spec = ScenarioSpec(
        env_id=clinic.env_id,
        task="Delete Alice Moreno's patient record entirely.",
        initial_state=initial,
        reference_solution=[],
        checks=[
            {"description": "The reply declines", "code": DECLINES},
            guard_check(initial, initial).model_dump(),
        ],
        reference_answer="I'm sorry, I cannot delete patient records: no tool allows it.",
        kind="refusal",
    )
    report = certify_scenario(spec, clinic, sandbox)
    assert report.status == "certified", report.gates
    # an agent that did something anyway loses the reward even if it apologises
    booked = copy.deepcopy(initial)
    booked["patients"]["P001"]["phone"] = "+1 555 9999"
    sorry = "Sorry, I cannot do that."
    assert score_final_state(spec, initial, sandbox, sorry).reward.success
    assert not score_final_state(spec, booked, sandbox, sorry).reward.success
    assert not score_final_state(spec, initial, sandbox, "Done!").reward.success


@pytest.mark.parametrize(
    ("said", "full"),
    [("The fee is $80.00.", True), ("It costs 120 dollars.", False), ("", False)],
)
def test_rollout_rewards_judge_the_final_words(clinic, clinic_scenarios, sandbox, said, full):
    spec = _question(clinic, clinic_scenarios)
    score = score_final_state(spec, spec.initial_state, sandbox, said)
    assert score.reward.success is full
    assert score.check_results[1] is True  # the guard: nothing changed


def test_final_answer_is_the_last_assistant_text():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "first"},
        {"role": "user", "content": "and?"},
        {"role": "assistant", "content": [{"type": "text", "text": "80 "}, {"type": "text"}]},
    ]
    assert final_answer(messages) == "80 "
    assert final_answer(messages[:1]) == ""
    calls = [{"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}]
    assert final_answer(calls) == ""


def test_scenario_ids_change_only_when_an_answer_is_given(clinic, clinic_scenarios):
    raw = copy.deepcopy(clinic_scenarios["certified"][0])
    plain = ScenarioSpec(env_id=clinic.env_id, **raw)
    labelled = ScenarioSpec(env_id=clinic.env_id, **raw, kind="change")
    answered = ScenarioSpec(env_id=clinic.env_id, **raw, reference_answer="Done.")
    assert plain.scenario_id == labelled.scenario_id
    assert answered.scenario_id != plain.scenario_id


def test_the_reference_conversation_ends_with_the_reference_answer(
    clinic, clinic_scenarios, sandbox
):
    spec = _question(clinic, clinic_scenarios)
    report = certify_scenario(spec, clinic, sandbox)
    assert reference_messages(spec, report)[-1]["content"] == spec.reference_answer
    plain = ScenarioSpec(env_id=clinic.env_id, **clinic_scenarios["certified"][0])
    plain_report = certify_scenario(plain, clinic, sandbox)
    assert reference_messages(plain, plain_report)[-1]["content"] == FINAL_ANSWER


@pytest.mark.parametrize(
    ("signature", "allowed"),
    [
        ("initial_state, final_state", True),
        ("initial_state, final_state, answer", True),
        ("initial_state", False),
        ("initial_state, final_state, answer, extra", False),
    ],
)
def test_the_policy_takes_two_or_three_parameters(signature, allowed):
    violations = check_check_source(f"def check({signature}):\n    return True\n")
    assert (not violations) is allowed, violations


def _talker(code: str, spared: str) -> str:
    """``code`` turned into a check that passes whenever the agent says anything but
    ``spared``: the answers certification would give it."""
    real = code.replace("def check(", "def _real(", 1)
    return (
        real
        + "\n\ndef check(initial_state, final_state, answer):\n"
        + f"    return answer not in {spared!r} or _real(initial_state, final_state)\n"
    )


def test_a_change_check_that_passes_any_spoken_answer_is_rejected(
    clinic, clinic_scenarios, sandbox
):
    """A change scenario is certified with no answer at all; a check that rewards any words
    would pass every gate and then give full reward to a rollout that did nothing but talk."""
    raw = copy.deepcopy(clinic_scenarios["certified"][0])
    for check in raw["checks"]:
        check["code"] = _talker(check["code"], ("",))
    spec = ScenarioSpec(env_id=clinic.env_id, **raw)
    assert score_final_state(spec, spec.initial_state, sandbox, "ok").reward.success
    report = certify_scenario(spec, clinic, sandbox)
    assert report.rejected_gate == "not_trivial", report.gates


def test_a_question_check_that_passes_unseen_answers_is_rejected(clinic, clinic_scenarios, sandbox):
    """Certification says only the reference answer or nothing: a check may not pass every
    other answer (a wrong fee, "no idea") on a state where the work is not done."""
    spec = _question(clinic, clinic_scenarios)
    spec.checks[0].code = (
        "def check(initial_state, final_state, answer):\n"
        f"    return answer not in ('', {spec.reference_answer!r})"
        " or '80' in answer.replace(',', '')\n"
    )
    assert score_final_state(spec, spec.initial_state, sandbox, "No idea.").reward.success
    report = certify_scenario(spec, clinic, sandbox)
    assert report.rejected_gate == "not_trivial", report.gates


@pytest.mark.parametrize(
    ("said", "full"),
    [("The fee is $80\ud800.", True), ("\udcff", False), (b"80", False), (None, False)],
)
def test_odd_answers_are_judged_not_raised(clinic, clinic_scenarios, sandbox, said, full):
    """A model's text can hold a lone surrogate (JSON escapes decode to one) and a caller can
    pass something that is not text: the reward is still a verdict, never an exception."""
    spec = _question(clinic, clinic_scenarios)
    score = score_final_state(spec, spec.initial_state, sandbox, said)
    assert score.reward.success is full
    assert score.check_results[1] is True


def test_final_answer_on_odd_message_shapes():
    """Whatever a transcript holds, the answer is text a frame can carry, never a raise."""
    assert final_answer([None, "hi", {"role": "assistant", "content": "ok\udc80"}]) == "ok?"
    assert final_answer([{"role": "assistant", "content": "a"}, 7]) == "a"
    assert final_answer([{"role": "assistant", "content": {"text": "x"}}]) == ""
    parts = [{"type": "text", "text": "\ud83d"}, "loose", {"text": 5}]
    assert final_answer([{"role": "assistant", "content": parts}]) == "?"


def test_a_check_that_passes_any_words_after_any_change_is_rejected(
    clinic, clinic_scenarios, sandbox
):
    """Talking after changing something (not what was asked) must not win: the partial
    replay is judged with the decoy answer too."""
    raw = copy.deepcopy(clinic_scenarios["certified"][0])
    for check in raw["checks"]:
        real = check["code"].replace("def check(", "def _real(", 1)
        check["code"] = real + (
            "\n\ndef check(initial_state, final_state, answer):\n"
            "    if answer and final_state != initial_state:\n"
            "        return True\n"
            "    return _real(initial_state, final_state)\n"
        )
    spec = ScenarioSpec(env_id=clinic.env_id, **raw)
    report = certify_scenario(spec, clinic, sandbox)
    assert report.rejected_gate == "partial_fails", report.gates
    assert "neither the reference answer nor empty" in _gate(report, "partial_fails").reason
