"""The optional LLM judge (issue 31, item 6): its prompt carries one typed case, the offline
model reads that case back and answers by envmill's rules, and a reply the judge cannot make
JSON of is a failed verdict, never a crash."""

from __future__ import annotations

import json

import pytest
from llm_server import make_client

from envmill.schemas.answers import ExpectedAnswer, Refusal, RefusalRule
from envmill.schemas.reward import JUDGE_STAGE
from envmill.schemas.scenario import ScenarioContent
from envmill.tasks.judge import JudgeCase, judge_reply
from envmill.tasks.judge.llm import LlmJudge, judge_prompt
from envmill.tasks.offline_llm import Fault, serve_endpoint
from envmill.tasks.offline_llm.responders import ChatRequest
from envmill.tasks.offline_llm.reward import respond_reward_judge

STATE = {
    "current_time": "2025-09-16T09:00:00",
    "sessions": {
        "PS-1": {"plate": "KX-1234", "status": "ended"},
        "PS-2": {"plate": "KX-1234", "status": "ended"},
    },
    "reservations": {"R-7": {"status": "checked_in", "guest": "Ana Ruiz"}},
}
ASKED = ScenarioContent(
    env_id="parking",
    task="How many parking sessions does plate KX-1234 have?",
    initial_state=STATE,
    reference_solution=[],
    checks=[],
    expected_answer=ExpectedAnswer(type="count", value=2, rivals=[1, 3]),
)
RULE = RefusalRule(
    rule_id="no_cancel_checked_in",
    condition="a reservation that is checked in cannot be cancelled",
    triggers=["checked_in"],
    allowed=["booked"],
)
REFUSED = ScenarioContent(
    env_id="hotel",
    task="Cancel reservation R-7.",
    initial_state=STATE,
    reference_solution=[],
    checks=[],
    refusal=Refusal(rules=[RULE], action="cancel", targets=["cancelled"], subject="reservation"),
)
CASES = [
    (ASKED, "Plate KX-1234 has two parking sessions."),
    (ASKED, "It has three sessions."),
    (ASKED, "Maybe two or three."),
    (REFUSED, "I can't cancel R-7: the guest has already checked in."),
    (REFUSED, "Sorry, only a supervisor may approve that."),
]


def _offline_verdict(scenario: ScenarioContent, reply: str) -> dict:
    prompt = judge_prompt(JudgeCase.of(scenario, scenario.initial_state, reply))
    request = ChatRequest(body={"messages": prompt.messages}, stage=JUDGE_STAGE)
    return json.loads(respond_reward_judge(request).content or "")


@pytest.mark.parametrize(("scenario", "reply"), CASES)
def test_the_prompt_carries_the_case_and_the_offline_model_answers_by_the_rules(scenario, reply):
    prompt = judge_prompt(JudgeCase.of(scenario, scenario.initial_state, reply))
    text = "\n".join(m["content"] for m in prompt.messages)
    assert reply in text and scenario.task in text and "KX-1234" in text
    rules = judge_reply(scenario, scenario.initial_state, reply)
    assert rules is not None
    answered = _offline_verdict(scenario, reply)
    assert answered["passed"] is rules.passed and answered["reason"]


def test_the_prompt_names_the_rule_or_the_typed_answer():
    asked = judge_prompt(JudgeCase.of(ASKED, STATE, "two")).messages
    refused = judge_prompt(JudgeCase.of(REFUSED, STATE, "no")).messages
    assert '"expected_answer":{' in asked[-1]["content"] and "refusal" not in asked[-1]["content"]
    assert (
        RULE.condition in refused[-1]["content"]
        and '"triggers":["checked_in"]' in (refused[-1]["content"])
    )


def test_the_llm_judge_asks_once_per_case_and_a_rerun_is_served_from_the_cache(tmp_path):
    with serve_endpoint() as endpoint:
        client = make_client(endpoint.url, tmp_path)
        judge = LlmJudge(client, item="episode-1")
        for scenario, reply in CASES:
            verdict = judge(scenario, scenario.initial_state, reply)
            rules = judge_reply(scenario, scenario.initial_state, reply)
            assert verdict is not None and rules is not None
            assert (verdict.passed, verdict.reason) == (rules.passed, rules.reason)
        asked = endpoint.stats()["requests"]
        again = [judge(s, s.initial_state, r) for s, r in CASES]
        assert endpoint.stats()["requests"] == asked == len(CASES)
    records = client.collector.drain()
    assert [r.stage for r in records] == [JUDGE_STAGE] * 2 * len(CASES)
    assert [r.cache_hit for r in records] == [False] * len(CASES) + [True] * len(CASES)
    assert all(r.item == "episode-1" for r in records)
    assert [v.passed for v in again if v] == [True, False, False, True, False]


def test_a_judge_that_never_answers_in_json_fails_the_reply_and_says_why(tmp_path):
    with serve_endpoint() as endpoint:
        endpoint.add_faults(Fault("truncated", stage=JUDGE_STAGE, count=None))
        client = make_client(endpoint.url, tmp_path)
        verdict = LlmJudge(client)(ASKED, STATE, "Plate KX-1234 has two parking sessions.")
    assert verdict is not None and not verdict.passed
    assert verdict.reason.startswith("the LLM judge's reply was malformed")


def test_a_scenario_that_expects_nothing_said_is_not_sent_to_the_judge(tmp_path):
    plain = ASKED.model_copy(update={"expected_answer": None})
    client = make_client("http://127.0.0.1:9", tmp_path)  # never called
    assert LlmJudge(client)(plain, STATE, "hello") is None
