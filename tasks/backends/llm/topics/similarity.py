"""Near-duplicate topics and a diverse subset, over embeddings or, without them, character n-grams.

EnvScaler dedupes inferred topics by embedding similarity; an endpoint without an embeddings route
still gets a deterministic lexical stand-in (TF-IDF over character 3-grams), so mining never
depends on a route a server may lack.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

NGRAM = 3


def lexical_vectors(texts: list[str]) -> np.ndarray:
    """L2-normalised TF-IDF vectors over character 3-grams of the lower-cased, padded text."""
    grams = [Counter(_ngrams(text)) for text in texts]
    vocabulary = sorted({gram for counts in grams for gram in counts})
    index = {gram: i for i, gram in enumerate(vocabulary)}
    document_frequency = Counter(gram for counts in grams for gram in counts)
    matrix = np.zeros((len(texts), len(vocabulary)))
    for row, counts in enumerate(grams):
        for gram, count in counts.items():
            idf = math.log((1 + len(texts)) / (1 + document_frequency[gram])) + 1
            matrix[row, index[gram]] = count * idf
    return normalised(matrix)


def _ngrams(text: str) -> list[str]:
    padded = f" {' '.join(text.lower().split())} "
    return [padded[i : i + NGRAM] for i in range(max(1, len(padded) - NGRAM + 1))]


def normalised(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


def near_duplicates(vectors: np.ndarray, threshold: float) -> dict[int, int]:
    """``{duplicate: kept}``: walking in order, a row whose cosine similarity to a row already
    kept reaches ``threshold`` is a duplicate of the most similar one (callers order best first)."""
    kept: list[int] = []
    duplicates: dict[int, int] = {}
    for row in range(len(vectors)):
        if kept:
            similarity = vectors[kept] @ vectors[row]
            best = int(np.argmax(similarity))
            if similarity[best] >= threshold:
                duplicates[row] = kept[best]
                continue
        kept.append(row)
    return duplicates


def diverse_subset(vectors: np.ndarray, size: int) -> list[int]:
    """``size`` rows, each the farthest from those chosen before (max-min); starts at row 0, so
    callers order best first. Deterministic: ties go to the lower row."""
    if size <= 0 or len(vectors) == 0:
        return []
    chosen = [0]
    distance = 1 - vectors @ vectors[0]
    while len(chosen) < min(size, len(vectors)):
        distance[chosen] = -np.inf
        row = int(np.argmax(distance))
        chosen.append(row)
        distance = np.minimum(distance, 1 - vectors @ vectors[row])
    return chosen
