"""One topic's conversation with the LLM: render a stage's prompt, ask, check the answer, and show
the model what is wrong with it for a bounded number of rounds.

Every stage failure ends as :class:`SkeletonFailed` with the stage and a one-line reason, whether
the call failed for good (the client's ``LlmCallError``) or the answers never passed the check.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from envmill.schemas.llm import LlmCallRecord
from envmill.tasks.backends.base import BatchAborted
from envmill.tasks.llm import LlmCallError, LlmClient, LlmGateError, render
from envmill.tasks.llm.structured import repair_messages

Answer = TypeVar("Answer", bound=BaseModel)
Check = Callable[[Any], str | None]  # an answer's problem, or None when it is usable
REFUSED_CLASS = "RefusedAnswer"  # error_class of an llm_calls row whose answer a check refused


class SkeletonFailed(Exception):
    """A topic that did not become an environment: the stage that stopped it, why, the
    category of why (``code``, what failure rows group by) and every problem found
    (``details``)."""

    def __init__(
        self, stage: str, reason: str, code: str, details: list[str] | None = None
    ) -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage, self.reason, self.code = stage, reason, code
        self.details = details or []


RETRY_STRIDE = 1000  # sample indexes of one retry attempt, apart from every other attempt's


@dataclass
class Asker:
    """The LLM calls of one topic; counts them and keeps their records (cache hits, repairs and
    failed calls included), for the caller to hand on with what the calls made.

    An answer a check refused is paid for like any other: its record says ``refused`` with the
    reason, and ``refused`` counts it, so a stage that needed several answers shows as repaired
    rather than as done at once."""

    client: LlmClient
    item: str
    attempt: int = 0  # a retry's number: answers that were checked get new samples
    calls: int = 0
    refused: int = 0
    _records: list[LlmCallRecord] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def records(self) -> list[LlmCallRecord]:
        """The records of the calls made so far, in the order they ended."""
        with self._lock:
            return list(self._records)

    def ask(
        self,
        prompt: str,
        schema: type[Answer],
        *,
        rounds: int = 0,
        check: Check | None = None,
        sample: int = 0,
        fresh_on_retry: bool = False,
        on_refused: Callable[[str], None] | None = None,
        receipt: list[int] | None = None,
        **variables: Any,
    ) -> Answer:
        """The answer to prompt ``prompt`` as ``schema``, shown its ``check`` problem up to
        ``rounds`` times. ``sample`` > 0 asks for another sample of a request already made
        (a repeated repair must not get the cached answer that failed). On a retry
        (``attempt`` > 0) every answer that was checked — a repair, a judgement
        (``fresh_on_retry``), a round after a refused answer — is asked anew; first answers
        that were fine stay cache hits. ``on_refused`` hears each refusal's reason (a scenario
        counts its own); ``receipt`` gets the position of the accepted answer's record, for
        :meth:`refuse_kept` when a later check sends that answer back.

        Raises:
            SkeletonFailed: the call failed, or no answer passed ``check``.
        """
        rendered = render(prompt, **variables)
        messages = rendered.messages
        problem = ""
        for round_ in range(rounds + 1):
            fresh = self.attempt and (fresh_on_retry or round_ > 0 or sample > 0)
            drawn = sample + RETRY_STRIDE * self.attempt if fresh else sample
            text, value, record = self._complete(
                prompt, messages, schema, rendered.prompt_hash, drawn
            )
            problem = check(value) if check else None
            if problem is not None:
                self._keep(self._refuse(record, problem, on_refused))
                messages = repair_messages(messages, text, problem)
                continue
            kept = self._keep(record)
            if receipt is not None and kept is not None:
                receipt.append(kept)
            return value
        plural = "s" * (rounds != 1)
        reason = f"no usable answer after {rounds} round{plural}: {problem}"
        raise SkeletonFailed(prompt, reason, "unusable_answer")

    def _complete(
        self,
        stage: str,
        messages: list[dict[str, Any]],
        schema: type[Answer],
        prompt_hash: str,
        sample: int,
    ) -> tuple[str, Answer, LlmCallRecord | None]:
        with self._lock:
            self.calls += 1
        try:
            reply = self.client.complete(
                stage,
                messages,
                item=self.item,
                sample=sample,
                schema=schema,
                prompt_hash=prompt_hash,
            )
        except LlmGateError as exc:
            raise BatchAborted(str(exc)) from exc
        except LlmCallError as exc:
            self._keep(exc.record)
            raise SkeletonFailed(stage, str(exc), "llm_call_failed") from None
        assert isinstance(reply.value, schema)
        return reply.text, reply.value, reply.record

    def _refuse(
        self,
        record: LlmCallRecord | None,
        problem: str,
        on_refused: Callable[[str], None] | None,
    ) -> LlmCallRecord | None:
        with self._lock:
            self.refused += 1
        if on_refused is not None:
            on_refused(problem)
        return None if record is None else _refused(record, problem)

    def _keep(self, record: LlmCallRecord | None) -> int | None:
        if record is None:
            return None
        with self._lock:
            self._records.append(record)
            return len(self._records) - 1

    def refuse_kept(self, position: int, problem: str) -> None:
        """Mark an answer a later check sent back (methods admission refused, checks that
        certification refused) as refused on its record; its caller counts the repair."""
        with self._lock:
            record = self._records[position]
            if record.outcome == "ok":
                self._records[position] = _refused(record, problem)


def _refused(record: LlmCallRecord, problem: str) -> LlmCallRecord:
    reason = " ".join(problem.split())[:500]
    return record.model_copy(
        update={"outcome": "refused", "error_class": REFUSED_CLASS, "error": reason}
    )
