"""The LLM's verdict on one candidate, and the thresholds it must clear.

One ``topics`` call per candidate (structured as :class:`TopicVerdict`, so a malformed reply gets
the client's repair turn); a call that fails for good becomes a ``failed`` record with a reason
code, never an exception, so no candidate is lost. A verdict that says no, or scores below the
run's thresholds, becomes ``rejected`` with the first reason that applies.
"""

from __future__ import annotations

from envmill.schemas.topics import TopicCandidate, TopicMiningConfig, TopicRecord, TopicVerdict
from envmill.tasks.backends.llm.stages import TOPIC_STAGE
from envmill.tasks.llm import LlmCallError, LlmClient, LlmUnreachableError, render

CORPUS_NAMES = {"api-bank": "API-Bank", "toolace": "ToolACE", "topics": "a topic list"}
_UNUSABLE = {"ReplyError", "EmptyReply"}


def judge_candidate(
    candidate: TopicCandidate, client: LlmClient, options: TopicMiningConfig
) -> TopicRecord:
    """``accepted``, ``rejected`` (with a code) or ``failed`` (with a code and the error)."""
    prompt = render(
        TOPIC_STAGE,
        corpus=CORPUS_NAMES[candidate.format],
        task=candidate.text,
        tools=list(candidate.tools),
    )
    record = TopicRecord.of(
        candidate, client.run_id, status="accepted", prompt_hash=prompt.prompt_hash
    )
    try:
        reply = client.complete(
            TOPIC_STAGE,
            prompt.messages,
            item=candidate.candidate_id,
            schema=TopicVerdict,
            prompt_hash=prompt.prompt_hash,
        )
    except LlmCallError as exc:
        update = {"status": "failed", "reason_code": failure_code(exc), "message": str(exc)}
        return record.model_copy(update=update)
    verdict = reply.value
    assert isinstance(verdict, TopicVerdict)
    record = record.with_verdict(verdict)
    rejection = rejection_of(verdict, options)
    if rejection is None:
        return record
    code, message = rejection
    return record.model_copy(update={"status": "rejected", "reason_code": code, "message": message})


def failure_code(exc: LlmCallError) -> str:
    """``unreachable``, ``unusable_reply`` (no valid answer after repairs) or ``llm_error``."""
    if isinstance(exc, LlmUnreachableError):
        return "unreachable"
    return "unusable_reply" if exc.record.error_class in _UNUSABLE else "llm_error"


def rejection_of(verdict: TopicVerdict, options: TopicMiningConfig) -> tuple[str, str] | None:
    """The first failed requirement as (code, message), or None when the verdict passes."""
    if not verdict.stateful:
        return "not_stateful", f"the model judged it not stateful: {verdict.reason}"
    if not verdict.domain_specific:
        return "not_domain_specific", f"the model judged it not domain-specific: {verdict.reason}"
    if verdict.usefulness < options.min_usefulness:
        return "low_usefulness", f"usefulness {verdict.usefulness} < {options.min_usefulness}"
    if verdict.modelability < options.min_modelability:
        return "low_modelability", (
            f"modelability {verdict.modelability} < {options.min_modelability}"
        )
    return None
