"""One topic, start to end: skeleton (plan → state code → operations → methods → admitted module)
then the environment check (initial state → chained probes → a probe state for the tools that
never succeeded → verdicts → gate).

The probes are kept whether the gate passes or not: a rejected environment's probes say why.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from envmill.schemas.skeleton import (
    ProbeJudgement,
    ProbeRecord,
    SkeletonDraft,
    SkeletonSettings,
)
from envmill.schemas.topics import TopicSource
from envmill.tasks.backends.llm.skelbuilder.admit import Skeleton, admit_parts
from envmill.tasks.backends.llm.skelbuilder.asking import Asker, SkeletonFailed
from envmill.tasks.backends.llm.skelbuilder.assemble import STATE
from envmill.tasks.backends.llm.skelbuilder.chain import RanProbe
from envmill.tasks.backends.llm.skelbuilder.context import TopicContext
from envmill.tasks.backends.llm.skelbuilder.gate import env_warnings, score_probes
from envmill.tasks.backends.llm.skelbuilder.initial_state import write_initial_state
from envmill.tasks.backends.llm.skelbuilder.judging import judge_probes
from envmill.tasks.backends.llm.skelbuilder.probe_state import probe_on_probe_state
from envmill.tasks.backends.llm.skelbuilder.probing import probe_tools
from envmill.tasks.backends.llm.skelbuilder.rules import review_rules
from envmill.tasks.backends.llm.skelbuilder.skeleton import (
    list_operations,
    plan_state,
    write_methods,
    write_state_code,
)
from envmill.tasks.llm import LlmClient
from envmill.tasks.sandbox import Sandbox


@dataclass
class TopicOutcome:
    """What one topic ended as: a draft, or the failure; its probes and LLM calls either way."""

    topic: str
    item: str
    draft: SkeletonDraft | None = None
    failure: SkeletonFailed | None = None
    probes: list[ProbeRecord] = field(default_factory=list)
    llm_calls: int = 0


def build_environment(
    topic: str,
    client: LlmClient,
    sandbox: Sandbox,
    settings: SkeletonSettings,
    *,
    item: str = "",
    source: TopicSource | None = None,
    asker: Asker | None = None,
) -> TopicOutcome:
    """Every stage for ``topic``; a stage that fails ends the topic with its stage and reason.
    The calls go through ``asker`` (default: a new one), which keeps their records."""
    asker = asker or Asker(client, item or topic, attempt=settings.attempt)
    outcome = TopicOutcome(topic, item)
    with ThreadPoolExecutor(settings.method_threads, thread_name_prefix="envmill-skel") as pool:
        ctx = TopicContext(topic, asker, sandbox, settings, pool)
        try:
            skeleton = build_skeleton(ctx, source)
            outcome.draft = check_skeleton(ctx, skeleton, outcome)
        except SkeletonFailed as exc:
            outcome.failure = exc
    outcome.llm_calls = asker.calls
    if outcome.draft is not None:
        outcome.draft = _with_effort(outcome.draft, asker)
    return outcome


def _with_effort(draft: SkeletonDraft, asker: Asker) -> SkeletonDraft:
    """The draft with what it took, also on the environment's ``checked`` record (the warehouse
    keeps that, not the draft): a refused answer was a repair as much as a rewritten part."""
    repairs = draft.repairs + asker.refused
    effort = {"llm_calls": asker.calls, "repairs": repairs, "refused_answers": asker.refused}
    admitted = draft.admitted
    if admitted is not None:
        admitted = replace(admitted, checked={**admitted.checked, "skelbuilder": effort})
    return draft.model_copy(
        update={"llm_calls": asker.calls, "repairs": repairs, "admitted": admitted}
    )


def build_skeleton(ctx: TopicContext, source: TopicSource | None = None) -> Skeleton:
    """Stage 2 of the issue: an admitted module from the LLM's parts."""
    plan = plan_state(ctx, source or TopicSource())
    state_code = write_state_code(ctx, plan)
    operations = list_operations(ctx, plan, state_code)
    methods = write_methods(ctx, plan, state_code, operations)
    skeleton = admit_parts(ctx, plan, operations, {STATE: state_code, **methods})
    plan, rewrites = review_rules(ctx, skeleton.plan, skeleton.admitted)
    return replace(skeleton, plan=plan, repairs=skeleton.repairs + rewrites)


def check_skeleton(ctx: TopicContext, skeleton: Skeleton, outcome: TopicOutcome) -> SkeletonDraft:
    """Stage 3: initial state, probes, verdicts, gate; the probes go into ``outcome``.

    Raises:
        SkeletonFailed: ``env_check`` when the gate refuses the environment.
    """
    env = skeleton.admitted
    initial_state = write_initial_state(ctx, env, skeleton.parts)
    probes = probe_tools(ctx, env, initial_state)
    probes += probe_on_probe_state(ctx, env, initial_state, probes)
    verdicts = judge_probes(ctx, env, probes) if probes else {}
    outcome.probes = [
        _record(probe, verdicts[probe.index], env.env_id, ctx, outcome.item) for probe in probes
    ]
    report = score_probes(env, probes, verdicts, ctx.settings)
    warnings = env_warnings(probes, verdicts, report)
    if not report.accepted:
        failed = [
            f"probe {r.probe_index}, {r.tool} ({r.kind}): {r.verdict}: {r.reason}"
            for r in outcome.probes
            if r.verdict == "fail"
        ]
        found = [w.message for w in warnings if w.kind == "never_succeeded"]
        raise SkeletonFailed("env_check", report.reason, report.code, failed + found)
    plan = skeleton.plan
    return SkeletonDraft(
        source=env.source,
        class_name=env.class_name,
        topic=ctx.topic,
        introduction=plan.introduction,
        business_rules=plan.business_rules,
        domain=plan.category,
        plan=plan,
        operations=skeleton.operations,
        initial_state=initial_state,
        check=report,
        warnings=warnings,
        repairs=skeleton.repairs,
        admitted=env,
    )


def _record(
    probe: RanProbe, verdict: ProbeJudgement, env_id: str, ctx: TopicContext, item: str
) -> ProbeRecord:
    return ProbeRecord(
        run_id=ctx.asker.client.run_id,
        env_id=env_id,
        topic=ctx.topic,
        item=item,
        probe_index=probe.index,
        round=probe.round,
        tool=probe.call.tool,
        tool_kind=probe.tool_kind,
        kind=probe.call.kind,
        expectation=probe.call.expectation,
        arguments=probe.call.arguments,
        result=probe.result,
        state_diff=probe.diff,
        verdict=verdict.verdict,
        reason=verdict.reason,
    )
