"""envmill's judge of what the agent says (DESIGN §3.3): one place, used by certification,
reference trajectories, rollouts, filters and the RL interface.

A scenario that asks for information carries an ``expected_answer``; one whose request a rule
forbids carries a ``refusal``. The judge reads the episode's final reply against it and returns a
verdict that counts as one more check in the reward. No scenario-written code reads the reply.
"""

from __future__ import annotations

from typing import Any, Protocol

from envmill.schemas.scenario import ScenarioContent
from envmill.tasks.judge.answers import judge_answer
from envmill.tasks.judge.case import JudgeCase
from envmill.tasks.judge.refusals import judge_refusal
from envmill.tasks.judge.results import judge_results, results_by_message
from envmill.tasks.judge.setting import Setting, flat_values, setting_of
from envmill.tasks.judge.verdict import Verdict

__all__ = [
    "JudgeCase",
    "ReplyJudge",
    "Setting",
    "Verdict",
    "judge_case",
    "judge_reply",
    "judge_results",
    "judges_reply",
    "results_by_message",
    "setting_of",
]


class ReplyJudge(Protocol):
    """Anything that judges a reply as :func:`judge_reply` does (the rules, an LLM judge)."""

    def __call__(
        self, scenario: ScenarioContent, final_state: dict[str, Any], reply: str
    ) -> Verdict | None: ...


def judges_reply(scenario: ScenarioContent) -> bool:
    """Whether the scenario's reward includes a verdict on the reply."""
    return scenario.expected_answer is not None or scenario.refusal is not None


def judge_reply(
    scenario: ScenarioContent, final_state: dict[str, Any], reply: str
) -> Verdict | None:
    """The verdict on ``reply`` as the episode's last words; None when the scenario expects
    nothing said (its checks alone judge it)."""
    if not judges_reply(scenario):
        return None
    return judge_case(JudgeCase.of(scenario, final_state, reply))


def judge_case(case: JudgeCase) -> Verdict | None:
    """envmill's rules on one case (what the offline model answers the LLM judge's stage with)."""
    said = " ".join([case.question, *map(str, flat_values(case.user_facts))])  # the request
    setting = setting_of(said, case.records, case.final_state)
    if case.expected_answer is not None:
        return judge_answer(case.expected_answer, case.reply, setting)
    if case.refusal is not None:
        return judge_refusal(case.refusal, case.reply, setting)
    return None
