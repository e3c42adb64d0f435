"""A batch of episodes on one worker: run them on threads (they wait on models), judge each
trajectory with the filters, and hand back rows; one bad episode never stops the others.

An episode the factory could not run (the endpoint unreachable, the gate gone, a sandbox
failure) is a failure row and stays due: a rerun runs it. An episode the *model* ruined is a
trajectory that says so (``model_error``).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from envmill.schemas.llm import LlmCallRecord
from envmill.schemas.reward import JUDGE_STAGE, JudgeKind
from envmill.schemas.rollout import (
    POLICY_STAGE,
    USER_STAGE,
    EpisodeBatch,
    EpisodeSpec,
    RolloutSettings,
)
from envmill.schemas.run import BatchOutput, FailureRecord
from envmill.schemas.trajectory import TrajectoryRecord
from envmill.tasks.judge import ReplyJudge, judge_reply
from envmill.tasks.judge.llm import LlmJudge
from envmill.tasks.llm import LlmClient
from envmill.tasks.rollout.agent import LlmPolicy
from envmill.tasks.rollout.episode import run_episode
from envmill.tasks.rollout.filters import judge_trajectory
from envmill.tasks.rollout.user import LlmUser
from envmill.tasks.sandbox import Sandbox


def rollout_batch(
    batch: EpisodeBatch,
    settings: RolloutSettings,
    sandbox: Sandbox,
    client: LlmClient,
    judge: JudgeKind = "rules",
) -> BatchOutput:
    """Every episode of ``batch`` (``episode_threads`` at once) as rows: trajectories with their
    filter verdicts, failures, and the LLM calls they made (the LLM judge's among them)."""
    threads = max(1, min(settings.episode_threads, len(batch.episodes)))

    def one(spec: EpisodeSpec) -> TrajectoryRecord | FailureRecord:
        return _episode_or_failure(spec, settings, sandbox, client, judge)

    began = time.perf_counter()
    with ThreadPoolExecutor(threads, thread_name_prefix="envmill-episode") as pool:
        results = list(pool.map(one, batch.episodes))
    keys = [spec.key for spec in batch.episodes]
    calls = client.collector.drain(set(keys))
    usage = _usage_by_item(calls)
    output = BatchOutput(key=batch.key, llm_calls=calls)
    for spec, result in zip(batch.episodes, results, strict=True):
        if isinstance(result, FailureRecord):
            output.failures.append(result)
            continue
        trajectory = result.model_copy(update={"usage": result.usage | usage.get(spec.key, {})})
        output.items.append(spec.key)
        output.trajectories.append(trajectory)
        output.verdicts += judge_trajectory(
            trajectory,
            spec.scenario,
            tool_names={tool["function"]["name"] for tool in spec.tools},
            state_changing_tools=set(spec.state_changing_tools),
            settings=settings.filters,
        )
    output.seconds = {"episodes": time.perf_counter() - began}
    output.provenance = {"models": _models(client, judge)}
    return output


def _episode_or_failure(
    spec: EpisodeSpec,
    settings: RolloutSettings,
    sandbox: Sandbox,
    client: LlmClient,
    judge: JudgeKind,
) -> TrajectoryRecord | FailureRecord:
    policy = LlmPolicy(client, item=spec.key, sample=spec.sample)
    judged: ReplyJudge = judge_reply
    if judge == "llm":  # its calls are the episode's: recorded under its key, cached per sample
        judged = LlmJudge(client, item=spec.key, sample=spec.sample)
    user = None
    if spec.scenario.mode == "conversational":
        user = LlmUser(client, spec.scenario, item=spec.key, sample=spec.sample)
    try:
        return run_episode(
            spec, sandbox, settings, policy, policy_name=policy.name, user=user, judge=judged
        )
    except Exception as exc:  # the factory's failure, not the model's: a row, and due again
        return FailureRecord(
            stage="rollout",
            item=f"{spec.scenario_id}#{spec.sample}",
            error_class=type(exc).__name__,
            message=str(exc)[:2000],
        )


def _usage_by_item(calls: list[LlmCallRecord]) -> dict[str, dict[str, Any]]:
    """Per episode and stage: calls, cache hits, tokens and cost."""
    usage: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for call in calls:
        stage = usage[call.item][call.stage]
        stage.update(
            calls=1,
            cache_hits=int(call.cache_hit),
            prompt_tokens=call.prompt_tokens,
            completion_tokens=call.completion_tokens,
        )
        stage["cost_usd"] += call.cost_usd
    return {item: {s: dict(c) for s, c in stages.items()} for item, stages in usage.items()}


def _models(client: LlmClient, judge: JudgeKind) -> dict[str, str]:
    """The models that made the batch's trajectories: the LLM judge's too when it judged."""
    stages = (POLICY_STAGE, USER_STAGE, *([JUDGE_STAGE] if judge == "llm" else []))
    return {stage: client.settings.for_stage(stage).model for stage in stages}


def rollout_counts(output: BatchOutput) -> dict[str, int]:
    """What a batch adds to the run's summary: episodes, successes, ends by reason, kept."""
    dropped = {v.trajectory_id for v in output.verdicts if not v.kept}
    counts = Counter(
        episodes=len(output.trajectories),
        successes=sum(t.success for t in output.trajectories),
        kept=sum(t.trajectory_id not in dropped for t in output.trajectories),
        failures=len(output.failures),
        llm_calls=len(output.llm_calls),
    )
    counts.update(f"ended_{t.termination}" for t in output.trajectories)
    return dict(counts)
