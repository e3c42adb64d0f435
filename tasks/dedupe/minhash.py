"""MinHash signatures and LSH banding: candidate pairs among thousands of items in seconds.

A small hand-written MinHash (the universal hashes ``(a·x + b) mod (2^61 − 1)`` over 32-bit
shingle hashes, as datasketch does) rather than a dependency. The banding is chosen per
threshold so that a pair at the threshold is missed with probability below ``MISS``; every
candidate is then scored by its exact Jaccard similarity, so the threshold is exact too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

PERMUTATIONS = 128
PRIME = np.uint64((1 << 61) - 1)
MASK32 = np.uint64(0xFFFFFFFF)
MISS = 1e-4  # chance that LSH misses a pair whose similarity is exactly the threshold
_rng = np.random.default_rng(20261201)  # fixed: signatures are comparable across processes
_A = _rng.integers(1, (1 << 32) - 1, PERMUTATIONS, dtype=np.uint64)
_B = _rng.integers(0, (1 << 32) - 1, PERMUTATIONS, dtype=np.uint64)


def hash_shingles(shingles: Iterable[str]) -> frozenset[int]:
    """32-bit hashes of shingles, stable across processes (Python's ``hash`` is salted)."""
    return frozenset(
        int.from_bytes(hashlib.blake2b(s.encode(), digest_size=4).digest(), "little")
        for s in shingles
    )


def signature(hashes: frozenset[int]) -> np.ndarray:
    """The MinHash signature (PERMUTATIONS minima) of a non-empty set of 32-bit hashes."""
    x = np.fromiter(hashes, dtype=np.uint64, count=len(hashes))
    mixed = (np.outer(_A, x) + _B[:, None]) % PRIME & MASK32
    return mixed.min(axis=1)


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def band_rows(threshold: float) -> int:
    """Rows per band: the most (fewest candidates) that still miss a pair at ``threshold``
    with probability below MISS (1 row, 128 bands, is the floor)."""
    best = 1
    for rows in (2, 4, 8, 16, 32):
        if (1 - threshold**rows) ** (PERMUTATIONS // rows) <= MISS:
            best = rows
    return best


def candidate_pairs(signatures: np.ndarray, rows: int) -> set[tuple[int, int]]:
    """Index pairs (i < j) that agree on every row of at least one band."""
    pairs: set[tuple[int, int]] = set()
    for start in range(0, PERMUTATIONS - rows + 1, rows):
        band = np.ascontiguousarray(signatures[:, start : start + rows])
        keys = band.view(np.dtype((np.void, band.dtype.itemsize * rows))).ravel()
        _, groups = np.unique(keys, return_inverse=True)
        order = np.argsort(groups, kind="stable")
        bounds = np.flatnonzero(np.diff(groups[order])) + 1
        for members in np.split(order, bounds):
            if len(members) > 1:
                pairs.update(_pairs_of(members.tolist()))
    return pairs


def _pairs_of(members: list[int]) -> Iterable[tuple[int, int]]:
    members.sort()
    return ((a, b) for i, a in enumerate(members) for b in members[i + 1 :])
