"""What LLM calls cost: tokens priced per model, and a collector of call records.

Every call — cache hits and failures too — yields one :class:`LlmCallRecord`; the pipeline
drains the collector per batch into the ``llm_calls`` table. ``cost_usd`` is what the call
itself cost: a cache hit costs 0 (it keeps the original token counts), and so does a model
missing from the price table.
"""

from __future__ import annotations

import threading
from collections.abc import Collection

from envmill.schemas.llm import LlmCallRecord, Price


def estimate_cost(
    prices: dict[str, Price], model: str, prompt_tokens: int, completion_tokens: int
) -> float:
    """USD for the tokens at the model's price; 0.0 for an unpriced model."""
    price = prices.get(model)
    if price is None:
        return 0.0
    return (prompt_tokens * price.input + completion_tokens * price.output) / 1_000_000


class CallCollector:
    """Thread-safe list of call records, drained by whoever writes them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[LlmCallRecord] = []

    def add(self, record: LlmCallRecord) -> None:
        with self._lock:
            self._records.append(record)

    def drain(self, items: Collection[str] | None = None) -> list[LlmCallRecord]:
        """The records collected so far (only those of ``items``, when given), which leave the
        collector: batches running at once in one process each take their own."""
        with self._lock:
            if items is None:
                records, self._records = self._records, []
            else:
                records = [r for r in self._records if r.item in items]
                self._records = [r for r in self._records if r.item not in items]
        return records

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)


def summarize(records: list[LlmCallRecord]) -> dict[str, float]:
    """Totals for a report line: calls, hits, failures, tokens, cost."""
    return {
        "calls": len(records),
        "cache_hits": sum(r.cache_hit for r in records),
        "failed": sum(r.outcome == "failed" for r in records),
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "completion_tokens": sum(r.completion_tokens for r in records),
        "cost_usd": round(sum(r.cost_usd for r in records), 6),
    }
