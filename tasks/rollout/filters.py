"""Trajectory filters: one verdict per filter, each with a reason and details a query groups by.

Like datatrove's filters, every check returns a verdict rather than dropping silently: a
``VerdictRecord`` per name in ``FILTERS`` (``reward``, ``length``, ``format``, ``user_sanity``),
``kept`` or not, a one-line ``reason`` naming the problem (or why it is kept) and ``details`` with
a ``code`` (``ok`` when kept) and the numbers behind it. Pure functions: no I/O.

- ``reward``: reward at least ``min_reward`` and, with ``require_success``, every check held.
- ``length``: tool calls made (counted in the messages) within [``min_steps``, ``max_steps``] and
  at most ``max_messages`` messages.
- ``format``: the conversation is well-formed Chat Completions (``chat_format.py``).
- ``user_sanity``: the simulated user speaks like a person (``user_sanity.py``); a
  non-conversational episode has no simulated user and is kept.
"""

from __future__ import annotations

from typing import Any

from envmill.schemas.rollout import FILTERS, FilterSettings, VerdictRecord
from envmill.schemas.scenario import ScenarioSpec
from envmill.schemas.trajectory import TrajectoryRecord
from envmill.tasks.rollout.chat_format import find_format_problem
from envmill.tasks.rollout.user_sanity import find_user_problems

REWARD_TOLERANCE = 1e-9  # 7/10 is kept at min_reward 0.7 whatever the float rounding


def judge_trajectory(
    trajectory: TrajectoryRecord,
    scenario: ScenarioSpec,
    *,
    tool_names: set[str],
    state_changing_tools: set[str],
    settings: FilterSettings,
) -> list[VerdictRecord]:
    """One verdict per filter in ``FILTERS`` order.

    Args:
        trajectory: the episode to judge.
        scenario: the scenario it ran (its mode, task and user facts).
        tool_names: the environment's tools; a call to any other name (or to one the scenario
            withholds) is malformed.
        state_changing_tools: the tools that change state; a user who stops before one of them
            succeeded stopped early.
        settings: the thresholds (``[rollout.filters]``).
    """
    verdicts = {
        "reward": judge_reward(trajectory, settings),
        "length": judge_length(trajectory, settings),
        "format": judge_format(trajectory, tool_names - scenario.never_offered),
        "user_sanity": judge_user_sanity(
            trajectory, scenario, state_changing_tools=state_changing_tools, settings=settings
        ),
    }
    return [verdicts[name] for name in FILTERS]


def verdict(
    trajectory: TrajectoryRecord, name: str, reason: str, code: str = "ok", **details: Any
) -> VerdictRecord:
    """A verdict: kept exactly when ``code`` is ``ok``."""
    return VerdictRecord(
        trajectory_id=trajectory.trajectory_id,
        filter=name,
        kept=code == "ok",
        reason=reason,
        details={"code": code, **details},
    )


def judge_reward(trajectory: TrajectoryRecord, settings: FilterSettings) -> VerdictRecord:
    reward, held = trajectory.reward, sum(trajectory.check_results)
    checks = f"{held} of {len(trajectory.check_results)} checks held"
    numbers = {"reward": reward, "success": trajectory.success}
    if reward < settings.min_reward - REWARD_TOLERANCE:
        reason = f"reward {reward:.3g} is below min_reward {settings.min_reward:.3g} ({checks})"
        return verdict(trajectory, "reward", reason, "low_reward", **numbers)
    if settings.require_success and not trajectory.success:
        reason = f"not every check held ({checks}) and require_success is set"
        return verdict(trajectory, "reward", reason, "not_success", **numbers)
    reason = f"reward {reward:.3g} reaches min_reward {settings.min_reward:.3g} ({checks})"
    return verdict(trajectory, "reward", reason, **numbers)


def count_tool_calls(messages: list[Any]) -> int:
    """Tool calls the assistant made (a malformed ``tool_calls`` counts as none)."""
    lists = (m.get("tool_calls") for m in messages if isinstance(m, dict))
    return sum(len(calls) for calls in lists if isinstance(calls, list))


def judge_length(trajectory: TrajectoryRecord, settings: FilterSettings) -> VerdictRecord:
    steps, messages = count_tool_calls(trajectory.messages), len(trajectory.messages)
    numbers = {"steps": steps, "messages": messages}
    if steps < settings.min_steps:
        reason = f"{steps} tool calls, fewer than min_steps {settings.min_steps}"
        return verdict(trajectory, "length", reason, "too_few_steps", **numbers)
    if steps > settings.max_steps:
        reason = f"{steps} tool calls, more than max_steps {settings.max_steps}"
        return verdict(trajectory, "length", reason, "too_many_steps", **numbers)
    if messages > settings.max_messages:
        reason = f"{messages} messages, more than max_messages {settings.max_messages}"
        return verdict(trajectory, "length", reason, "too_many_messages", **numbers)
    reason = (
        f"{steps} tool calls in [{settings.min_steps}, {settings.max_steps}] and {messages}"
        f" messages, at most {settings.max_messages}"
    )
    return verdict(trajectory, "length", reason, "ok", **numbers)


def judge_format(trajectory: TrajectoryRecord, tool_names: set[str]) -> VerdictRecord:
    problem = find_format_problem(trajectory.messages, trajectory.termination, tool_names)
    if problem is None:
        reason = f"well-formed conversation of {len(trajectory.messages)} messages"
        return verdict(trajectory, "format", reason)
    return verdict(trajectory, "format", problem.message, problem.code, index=problem.index)


def judge_user_sanity(
    trajectory: TrajectoryRecord,
    scenario: ScenarioSpec,
    *,
    state_changing_tools: set[str],
    settings: FilterSettings,
) -> VerdictRecord:
    """Kept when the simulated user pasted nothing, stopped after a change and invented nothing;
    the first problem names the verdict, ``codes`` lists every one found."""
    if scenario.mode != "conversational":
        return verdict(trajectory, "user_sanity", "no simulated user", mode=scenario.mode)
    problems = find_user_problems(
        trajectory, scenario, state_changing_tools=state_changing_tools, settings=settings
    )
    if not problems:
        reason = "the simulated user pasted nothing, did not stop early and invented no value"
        return verdict(trajectory, "user_sanity", reason)
    first, others = problems[0], [p.code for p in problems[1:]]
    reason = first.reason + (f"; also {', '.join(others)}" if others else "")
    return verdict(
        trajectory,
        "user_sanity",
        reason,
        first.code,
        index=first.index,
        codes=[p.code for p in problems],
        **first.details,
    )
