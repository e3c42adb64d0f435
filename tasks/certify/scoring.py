"""An episode's score: every check on (initial state, final state), the judge's verdict on the
final reply where the scenario expects one, the verdict on the tool results it obtained where
the scenario expects some (``tasks.judge.results``), then the one reward function.

Rollouts and the RL interface end here. The checks run as certification runs them (policy first,
then a host of their own, each evaluation in a fresh namespace), so an agent's episode is judged
by exactly the rules that certified its scenario.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.certify.evidence import check_rows, policy_checked
from envmill.tasks.certify.reward import Reward, score_checks
from envmill.tasks.judge import ReplyJudge, Verdict, judge_reply, judge_results
from envmill.tasks.sandbox import Sandbox


@dataclass(frozen=True)
class EpisodeScore:
    """Per-check results (in the scenario's order), the reward, why a check failed, and the
    judge's verdict on the reply (None: the scenario expects none) and on the results obtained
    (None: it expects none)."""

    check_results: list[bool]
    reward: Reward
    errors: list[str | None]
    verdict: Verdict | None = None
    results_verdict: Verdict | None = None


def score_final_state(
    scenario: ScenarioSpec,
    final_state: dict[str, Any],
    sandbox: Sandbox,
    answer: str = "",
    judge: ReplyJudge = judge_reply,
    obtained: Sequence[Sequence[Any]] = (),
) -> EpisodeScore:
    """Run every check of ``scenario`` on (its initial state, ``final_state``), then judge
    ``answer`` (the text of the episode's final assistant message, see :func:`final_answer`)
    where the scenario expects a reply, then ``obtained`` (per user message, the tool results
    the agent got while answering it) where it expects results: each verdict follows the checks
    in that order. ``judge`` is envmill's rules unless the run asked for the LLM judge
    (``[reward] judge = "llm"``).

    A check that raised, returned a non-bool, ran out of time or was refused counts False.
    """
    sources, refused = policy_checked(scenario)
    pairs = [(scenario.initial_state, final_state)]
    rows, _ = check_rows(sandbox, sources, refused, pairs, 0, 1, probe=False)
    cells = [row[0] for row in rows]
    results = [cell.value is True for cell in cells]
    errors = [cell.error for cell in cells]
    verdict = judge(scenario, final_state, plain_text(answer))
    if verdict is not None:
        results.append(verdict.passed)
        errors.append(None if verdict.passed else verdict.reason)
    held = judge_results(scenario.expected_results, obtained)
    if held is not None:
        results.append(held.passed)
        errors.append(None if held.passed else held.reason)
    return EpisodeScore(results, score_checks(results), errors, verdict, held)


def final_answer(messages: list[dict[str, Any]]) -> str:
    """The text of the conversation's last assistant message ("" when it has none): what checks
    of the answer judge. Text parts of a list-valued content are joined."""
    said = (m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "assistant")
    last = next(said, None)
    content = (last or {}).get("content")
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        content = "".join(part for part in parts if isinstance(part, str))
    return plain_text(content)


def plain_text(answer: Any) -> str:
    """``answer`` as text every channel can carry: not text is "", and a lone surrogate (a
    model's ``\\ud800`` escape decodes to one; UTF-8 cannot encode it, so the sandbox's frame
    would raise) becomes "?". What a check sees is what could have been written down."""
    if not isinstance(answer, str):
        return ""
    return answer.encode("utf-8", "replace").decode("utf-8")
