"""Replies judged by envmill (DESIGN §3.3): a scenario says what the reply must state (a typed
``expected_answer``, a ``refusal`` rule), the judge's verdict is one more check in the reward,
and no check may read the reply. Certification probes the judgement with replies built from
the scenario's own values (gate ``judges_text``)."""

from __future__ import annotations

import copy

import pytest
from llm_server import make_client

from envmill.schemas.reward import JUDGE_STAGE
from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.certify import certify_scenario
from envmill.tasks.certify.guard import guard_check
from envmill.tasks.certify.scoring import final_answer, score_final_state
from envmill.tasks.envs.policy import check_check_source
from envmill.tasks.judge.llm import LlmJudge
from envmill.tasks.offline_llm import serve_endpoint
from envmill.tasks.rollout.reference import reference_messages

FEE = {"type": "money", "value": 80.0, "rivals": [120.0, 95.0]}
NO_DELETE = {
    "rules": [
        {
            "rule_id": "no_delete",
            "condition": "patient records are never deleted",
            "triggers": ["patient records"],
        }
    ],
    "action": "delete",
    "targets": ["deleted"],
    "subject": "Alice Moreno's record",
}


def _question(clinic, clinic_scenarios, **changes) -> ScenarioSpec:
    initial = copy.deepcopy(clinic_scenarios["certified"][0]["initial_state"])
    fields = {
        "env_id": clinic.env_id,
        "task": "What is the visit fee of Dr. Nina Patel (doctor D03)?",
        "initial_state": initial,
        "reference_solution": [{"tool": "get_doctor", "arguments": {"doctor_id": "D03"}}],
        "checks": [guard_check(initial, initial).model_dump()],
        "reference_answer": "Dr. Nina Patel's visit fee is $80.00.",
        "expected_answer": FEE,
        "kind": "answer",
    }
    return ScenarioSpec(**{**fields, **changes})


def _gate(report, name):
    return next(g for g in report.gates if g.gate == name)


def test_a_question_is_certified_by_its_answer(clinic, clinic_scenarios, sandbox):
    report = certify_scenario(_question(clinic, clinic_scenarios), clinic, sandbox)
    assert report.status == "certified", report.gates
    assert "withheld" in _gate(report, "partial_fails").reason
    probes = _gate(report, "judges_text").reason
    assert "right replies in other words keep full reward" in probes, probes
    assert report.check_results == [True, True]  # the guard, then the judge on the reply


def test_an_expected_answer_the_reference_does_not_state_is_rejected(
    clinic, clinic_scenarios, sandbox
):
    spec = _question(clinic, clinic_scenarios, expected_answer={**FEE, "value": 95.0})
    report = certify_scenario(spec, clinic, sandbox)
    assert report.rejected_gate == "checks_pass"
    assert "judge refuses the reference reply" in _gate(report, "checks_pass").reason


def test_a_refusal_changes_nothing_and_says_why(clinic, clinic_scenarios, sandbox):
    initial = copy.deepcopy(clinic_scenarios["certified"][0]["initial_state"])
    spec = ScenarioSpec(
        env_id=clinic.env_id,
        task="Delete Alice Moreno's patient record entirely.",
        initial_state=initial,
        reference_solution=[],
        checks=[guard_check(initial, initial).model_dump()],
        reference_answer="I'm sorry, I cannot delete it: patient records are never deleted.",
        refusal=NO_DELETE,
        kind="refusal",
    )
    report = certify_scenario(spec, clinic, sandbox)
    assert report.status == "certified", report.gates
    # an agent that did something anyway loses the reward even if it apologises
    booked = copy.deepcopy(initial)
    booked["patients"]["P001"]["phone"] = "+1 555 9999"
    sorry = "Sorry, I am unable to do that, patient records are kept."
    assert score_final_state(spec, initial, sandbox, sorry).reward.success
    assert not score_final_state(spec, booked, sandbox, sorry).reward.success
    assert not score_final_state(spec, initial, sandbox, "Done!").reward.success
    assert not score_final_state(spec, initial, sandbox, "Sorry, I can't.").reward.success


@pytest.mark.parametrize(
    ("said", "full"),
    [
        ("The fee is $80.00.", True),
        ("Her visit fee is eighty dollars.", True),
        ("It costs 120 dollars.", False),
        ("Probably $80, maybe $95.", False),
        ("", False),
    ],
)
def test_rollout_rewards_judge_the_final_words(clinic, clinic_scenarios, sandbox, said, full):
    spec = _question(clinic, clinic_scenarios)
    score = score_final_state(spec, spec.initial_state, sandbox, said)
    assert score.reward.success is full
    assert score.check_results[0] is True  # the guard: nothing changed
    assert len(score.check_results) == 2  # the judge's verdict is one more check


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
    closing = reference_messages(plain, plain_report)[-1]["content"]
    assert "appointment a0002 as completed" in closing.lower(), closing
    assert "nvoice INV0002 is paid for Bram Okafor for $64.00" in closing, closing
    assert "(" not in closing, closing


@pytest.mark.parametrize(
    ("signature", "allowed"),
    [
        ("initial_state, final_state", True),
        ("initial_state, final_state, answer", False),
        ("initial_state", False),
        ("initial_state, final_state, answer, extra", False),
    ],
)
def test_the_policy_takes_two_parameters_and_never_the_reply(signature, allowed):
    violations = check_check_source(f"def check({signature}):\n    return True\n")
    assert (not violations) is allowed, violations


FORGED = {
    "decoy detector": (
        "import re\nDECOY = re.compile(r'Okay, I have noted [a-p]+\\.')\n"
        "def check(initial_state, final_state, answer):\n"
        "    done = final_state != initial_state\n"
        "    return done or (answer != '' and not DECOY.match(answer))\n"
    ),
    "claim words": (
        "def check(initial_state, final_state, answer):\n"
        "    done = final_state != initial_state\n"
        "    return done or 'checked in' in answer.lower()\n"
    ),
}


@pytest.mark.parametrize("name", sorted(FORGED))
def test_a_check_that_reads_the_reply_is_refused_at_certification(
    clinic, clinic_scenarios, sandbox, name
):
    raw = copy.deepcopy(clinic_scenarios["certified"][0])
    raw["checks"].append({"description": name, "code": FORGED[name]})
    spec = ScenarioSpec(env_id=clinic.env_id, **raw)
    report = certify_scenario(spec, clinic, sandbox)
    assert report.rejected_gate == "checks_pass", report.gates
    assert "reads the reply" in _gate(report, "checks_pass").reason
    said = score_final_state(spec, spec.initial_state, sandbox, "He is checked in.")
    assert not said.reward.success


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
    assert score.check_results[0] is True


def test_final_answer_on_odd_message_shapes():
    """Whatever a transcript holds, the answer is text a frame can carry, never a raise."""
    assert final_answer([None, "hi", {"role": "assistant", "content": "ok\udc80"}]) == "ok?"
    assert final_answer([{"role": "assistant", "content": "a"}, 7]) == "a"
    assert final_answer([{"role": "assistant", "content": {"text": "x"}}]) == ""
    parts = [{"type": "text", "text": "\ud83d"}, "loose", {"text": 5}]
    assert final_answer([{"role": "assistant", "content": parts}]) == "?"


def test_a_check_that_accepts_a_second_value_loses_to_a_value_mutant(
    clinic, clinic_scenarios, sandbox
):
    """``phone == A or phone == B``: the mutant that writes B (every digit of the last group
    zeroed) keeps full reward, so the scenario is refused, the mutant named."""
    raw = copy.deepcopy(clinic_scenarios["certified"][3])
    phone = next(c for c in raw["checks"] if "phone" in c["description"])
    assert certify_scenario(ScenarioSpec(env_id=clinic.env_id, **raw), clinic, sandbox).status == (
        "certified"
    )
    phone["code"] = (
        "def check(initial_state, final_state):\n"
        "    phone = final_state['patients']['P003']['phone']\n"
        "    return phone == '+1 555 0199' or phone == '+1 555 0000'\n"
    )
    report = certify_scenario(ScenarioSpec(env_id=clinic.env_id, **raw), clinic, sandbox)
    assert report.rejected_gate == "guards_collateral", report.gates
    assert "'+1 555 0000'" in _gate(report, "guards_collateral").reason


def test_the_llm_judge_is_certified_by_the_same_probes(clinic, clinic_scenarios, sandbox, tmp_path):
    """``[reward] judge = "llm"`` against the offline model (which answers by the rules): every
    gate, the ``judges_text`` probes included, comes out as with the rules, each verdict one
    recorded ``reward_judge`` call; a wrong reply scored with it fails with the judge's reason."""
    question = _question(clinic, clinic_scenarios)
    with serve_endpoint() as endpoint:
        client = make_client(endpoint.url, tmp_path)
        judge = LlmJudge(client, item=question.scenario_id)
        by_llm = certify_scenario(question, clinic, sandbox, judge)
        wrong = score_final_state(
            question, question.initial_state, sandbox, "It costs 120 dollars.", judge
        )
    by_rules = certify_scenario(question, clinic, sandbox)
    assert by_llm.status == by_rules.status == "certified"
    assert [(g.gate, g.passed, g.reason) for g in by_llm.gates] == [
        (g.gate, g.passed, g.reason) for g in by_rules.gates
    ]
    calls = client.collector.drain()
    assert len(calls) > 5 and {c.stage for c in calls} == {JUDGE_STAGE}
    rules = score_final_state(question, question.initial_state, sandbox, "It costs 120 dollars.")
    assert not wrong.reward.success and wrong.errors[-1] == rules.errors[-1]
    assert wrong.errors[-1] == "the reply does not state 80.0"
