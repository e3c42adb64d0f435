"""Accepted topics → distinct topics → a diverse subset.

Ranked best first (usefulness + modelability, then the request's text), a topic is a duplicate
of a better one with the same normalised name, then of one whose name embedding is too close
(EnvScaler dedupes by embedding). Embeddings come from the endpoint; when it has none, or the
call fails, character 3-gram TF-IDF vectors stand in, with their own threshold. Of the distinct
topics, a max-min walk from the best picks the requested number; every distinct topic gets its
place in that walk (``selection_rank``), so ``selection_rank < k`` is a diverse top k.
"""

from __future__ import annotations

import re

import numpy as np

from envmill.schemas.topics import TopicMiningConfig, TopicRecord
from envmill.tasks.backends.llm.topics.similarity import (
    diverse_subset,
    lexical_vectors,
    near_duplicates,
    normalised,
)
from envmill.tasks.llm import LlmClient, LlmError

EMBEDDING_STAGE = "topic_embeddings"  # its own stage, so an embedding model can be configured
LEXICAL = "character 3-gram similarity"  # what stands in for an endpoint without embeddings
EMBED_BATCH = 256
_WORD = re.compile(r"[a-z0-9]+")


def rank_topics(records: list[TopicRecord]) -> list[TopicRecord]:
    """Best first: higher usefulness + modelability, then the request's text."""
    return sorted(records, key=lambda r: (-r.score, r.text, r.candidate_id))


def name_key(topic: str) -> str:
    """A topic name reduced for comparison: lower case, words only, a plural 's' dropped."""
    words = _WORD.findall(topic.lower())
    return " ".join(
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words
    )


def dedupe_and_select(
    accepted: list[TopicRecord], client: LlmClient, options: TopicMiningConfig
) -> list[TopicRecord]:
    """Every accepted record again, as ``duplicate``, ``selected`` or (left out) ``accepted``."""
    kept, duplicates = _dedupe_names(rank_topics(accepted))
    if not kept:
        return duplicates
    vectors, kind = topic_vectors(client, [r.topic or "" for r in kept])
    threshold = options.embedding_similarity if kind == "endpoint" else options.lexical_similarity
    similar = near_duplicates(vectors, threshold)
    for row, original in similar.items():
        cosine = float(vectors[row] @ vectors[original])
        duplicates.append(_duplicate(kept[row], kept[original], f"similar_{kind}", cosine))
    rows = [row for row in range(len(kept)) if row not in similar]
    return duplicates + _select(
        [kept[row] for row in rows], vectors[rows], options.select or len(rows)
    )


def topic_vectors(client: LlmClient, names: list[str]) -> tuple[np.ndarray, str]:
    """L2-normalised vectors of ``names`` and where they came from: ``endpoint`` or ``lexical``."""
    try:
        vectors: list[list[float]] = []
        for start in range(0, len(names), EMBED_BATCH):
            batch = names[start : start + EMBED_BATCH]
            vectors += client.embed(EMBEDDING_STAGE, batch, fallback=LEXICAL)
        matrix = np.asarray(vectors, dtype=float)
    except (LlmError, ValueError):
        return lexical_vectors(names), "lexical"
    if matrix.ndim != 2 or len(matrix) != len(names) or not np.isfinite(matrix).all():
        return lexical_vectors(names), "lexical"
    return normalised(matrix), "endpoint"


def _dedupe_names(ranked: list[TopicRecord]) -> tuple[list[TopicRecord], list[TopicRecord]]:
    first: dict[str, TopicRecord] = {}
    duplicates = []
    for record in ranked:
        original = first.setdefault(name_key(record.topic or ""), record)
        if original is not record:
            duplicates.append(_duplicate(record, original, "same_name"))
    return list(first.values()), duplicates


def _duplicate(
    record: TopicRecord, original: TopicRecord, code: str, cosine: float | None = None
) -> TopicRecord:
    how = "the same name as" if cosine is None else f"cosine {cosine:.3f} to"
    return record.model_copy(
        update={
            "status": "duplicate",
            "reason_code": code,
            "duplicate_of": original.candidate_id,
            "message": f"{how} {original.candidate_id} ({original.topic!r})",
        }
    )


def _select(kept: list[TopicRecord], vectors: np.ndarray, size: int) -> list[TopicRecord]:
    order = diverse_subset(vectors, len(kept))
    out = []
    for rank, row in enumerate(order):
        chosen = rank < size
        update = {
            "status": "selected" if chosen else "accepted",
            "selection_rank": rank,
            "message": "" if chosen else f"distinct, but outside the diverse subset of {size}",
        }
        out.append(kept[row].model_copy(update=update))
    return out
