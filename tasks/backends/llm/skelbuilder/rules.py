"""Stage ``skeleton_rules``: the plan's business rules checked for contradictions, among
themselves and with the tools' documented constraints, once the tools exist.

Every trajectory's system message states these rules, so a contradiction there teaches the agent
one. A review that finds a contradiction is a repair: its rewritten rules are reviewed again in a
new conversation (the model never confirms its own rewrite in the same breath), up to
``repair_rounds`` times; rules that still contradict end the topic with code
``contradictory_rules``.
"""

from __future__ import annotations

from envmill.schemas.skeleton import RulesReview, StatePlan
from envmill.tasks.backends.llm.skelbuilder.asking import SkeletonFailed
from envmill.tasks.backends.llm.skelbuilder.context import TopicContext
from envmill.tasks.envs import AdmittedEnvironment

STAGE = "skeleton_rules"


def review_rules(
    ctx: TopicContext, plan: StatePlan, env: AdmittedEnvironment
) -> tuple[StatePlan, int]:
    """The plan with rules that contradict nothing, and how many rewrites that took.

    Raises:
        SkeletonFailed: ``skeleton_rules`` when the rules still contradict after the repairs.
    """
    tools = [f"{tool.function.name}: {tool.function.description}" for tool in env.tools]
    rules = list(plan.business_rules)
    for round_ in range(ctx.settings.repair_rounds + 1):
        review = ctx.asker.ask(
            STAGE,
            RulesReview,
            sample=round_,  # a retry keeps a first review that was fine; rewrites are new
            topic=ctx.topic,
            introduction=plan.introduction,
            rules=rules,
            tools=tools,
        )
        if not review.contradictions:
            return plan.model_copy(update={"business_rules": rules}), round_
        rules = review.rules
    found = review.contradictions
    raise SkeletonFailed(
        STAGE,
        f"the business rules still contradict after {ctx.settings.repair_rounds} rewrites: "
        f"{found[0].between}: {found[0].explanation}",
        "contradictory_rules",
        [f"{c.between}: {c.explanation}" for c in found],
    )
