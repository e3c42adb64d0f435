"""Text diversity of task sets: distinct-n at a fixed token budget and pairwise similarity.

Plain functions over lists of strings, so the page's definitions can be checked by hand. Tokens
are lower-cased runs of word characters and single punctuation marks; n-grams never cross the
boundary between two tasks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

TOKEN = re.compile(r"\w+|[^\w\s]")
TOKEN_BUDGET = 10_000  # tokens read for distinct-n: the ratio falls as text grows, so fix it
SIMILARITY_SAMPLE = 200  # tasks compared pairwise (19,900 pairs)
NEAR_DUPLICATE = 0.8  # Jaccard similarity of word bigram sets at which two tasks count as near
NGRAM_SIZES = (1, 2, 3)


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


@dataclass(frozen=True)
class DistinctN:
    """distinct-n for each n over the first ``tokens`` tokens (``budget`` asked)."""

    ratios: dict[int, float]
    tokens: int
    budget: int

    @property
    def below_budget(self) -> bool:
        return self.tokens < self.budget


def distinct_n(tasks: list[str], budget: int = TOKEN_BUDGET) -> DistinctN:
    """Distinct n-grams ÷ n-grams in the first ``budget`` tokens of ``tasks`` (in order; the last
    task read is cut at the budget)."""
    pieces: list[list[str]] = []
    left = budget
    for task in tasks:
        if left <= 0:
            break
        tokens = tokenize(task)[:left]
        pieces.append(tokens)
        left -= len(tokens)
    ratios = {}
    for n in NGRAM_SIZES:
        grams = [tuple(p[i : i + n]) for p in pieces for i in range(len(p) - n + 1)]
        ratios[n] = len(set(grams)) / len(grams) if grams else 0.0
    return DistinctN(ratios=ratios, tokens=budget - left, budget=budget)


def bigram_set(text: str) -> frozenset[tuple[str, ...]]:
    """Word bigrams of a task (its single word when it has one)."""
    words = [t for t in tokenize(text) if t[0].isalnum() or t[0] == "_"]
    if len(words) < 2:
        return frozenset((w,) for w in words)
    return frozenset(zip(words, words[1:], strict=False))


def jaccard(a: frozenset, b: frozenset) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


@dataclass(frozen=True)
class Similarity:
    """Mean pairwise Jaccard similarity and near-duplicate share within one sample of tasks."""

    mean: float
    near_duplicate_share: float
    tasks: int
    pairs: int


def pairwise_similarity(tasks: list[str], threshold: float = NEAR_DUPLICATE) -> Similarity:
    """Mean Jaccard similarity of word bigram sets over every pair of ``tasks``, and the share of
    tasks that have at least one other task at ``threshold`` or above."""
    sets = [bigram_set(t) for t in tasks]
    total, pairs = 0.0, 0
    near: set[int] = set()
    for (i, a), (j, b) in combinations(enumerate(sets), 2):
        score = jaccard(a, b)
        total += score
        pairs += 1
        if score >= threshold:
            near.update((i, j))
    return Similarity(
        mean=total / pairs if pairs else 0.0,
        near_duplicate_share=len(near) / len(sets) if sets else 0.0,
        tasks=len(sets),
        pairs=pairs,
    )
