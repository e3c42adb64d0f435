"""Stage ``skeleton_rules``: the plan's business rules checked for contradictions, among
themselves and with the tools' documented constraints, once the tools exist.

Every trajectory's system message states these rules, so a contradiction there teaches the agent
one. A review that finds a contradiction is a repair: its rewritten rules are reviewed again in a
new conversation (the model never confirms its own rewrite in the same breath), up to
``repair_rounds`` times; rules that still contradict end the topic with code
``contradictory_rules``. A rewrite may change only the rules a contradiction names, and stays
within the plan's bounds: a review is no way to replace the rules with others.
"""

from __future__ import annotations

import re

from envmill.schemas.skeleton import MAX_RULE_CHARS, MAX_RULES, RulesReview, StatePlan
from envmill.tasks.backends.llm.skelbuilder.asking import SkeletonFailed
from envmill.tasks.backends.llm.skelbuilder.context import TopicContext
from envmill.tasks.envs import AdmittedEnvironment

STAGE = "skeleton_rules"
_NUMBER = re.compile(r"\brules?\s+(\d+(?:\s*(?:,|and|&)\s*\d+)*)", re.IGNORECASE)


def review_rules(
    ctx: TopicContext, plan: StatePlan, env: AdmittedEnvironment
) -> tuple[StatePlan, int]:
    """The plan with rules that contradict nothing, and how many rewrites that took.

    Raises:
        SkeletonFailed: ``skeleton_rules`` when the rules still contradict after the repairs.
    """
    tools = [f"{tool.function.name}: {tool.function.description}" for tool in env.tools]
    rules = list(plan.business_rules)
    found: RulesReview | None = None
    for round_ in range(ctx.settings.repair_rounds + 1):
        reviewed = rules
        found = ctx.asker.ask(
            STAGE,
            RulesReview,
            rounds=ctx.settings.repair_rounds,
            check=lambda review, shown=reviewed: rewrite_problem(shown, review),
            sample=round_,  # a retry keeps a first review that was fine; rewrites are new
            topic=ctx.topic,
            introduction=plan.introduction,
            rules=reviewed,
            tools=tools,
        )
        if not found.contradictions:
            return plan.model_copy(update={"business_rules": rules}), round_
        rules = found.rules
    assert found is not None
    first = found.contradictions[0]
    raise SkeletonFailed(
        STAGE,
        f"the business rules still contradict after {ctx.settings.repair_rounds} rewrites: "
        f"{first.between}: {first.explanation}",
        "contradictory_rules",
        [f"{c.between}: {c.explanation}" for c in found.contradictions],
    )


def rewrite_problem(shown: list[str], review: RulesReview) -> str | None:
    """Why a review's rewrite cannot stand (None when it can): rules beyond the plan's bounds,
    none at all, or a rule no contradiction names that was changed or dropped."""
    if not review.contradictions:
        return None
    if not review.rules:
        return "rules: give the rules rewritten so that none contradicts"
    if len(review.rules) > MAX_RULES or max(map(len, review.rules)) > MAX_RULE_CHARS:
        return f"rules: at most {MAX_RULES} rules of at most {MAX_RULE_CHARS} characters each"
    named = {n for c in review.contradictions for n in _numbers(f"{c.between} {c.explanation}")}
    kept = set(review.rules)
    lost = [n for n, rule in enumerate(shown, 1) if n not in named and rule not in kept]
    if lost:
        return (
            f"rules: rule {lost[0]} is in no contradiction, so keep it word for word; rewrite "
            "only the rules a contradiction names"
        )
    return None


def _numbers(text: str) -> set[int]:
    return {int(n) for found in _NUMBER.findall(text) for n in re.findall(r"\d+", found)}
