"""MinHash signatures and LSH banding: candidate pairs among thousands of items in seconds.

A small hand-written MinHash (the universal hashes ``(a·x + b) mod (2^61 − 1)`` over 32-bit
shingle hashes, as datasketch does) rather than a dependency. The banding is chosen per
threshold so that a pair at the threshold is missed with probability below ``MISS``; every
candidate is then scored by its exact Jaccard similarity, so the threshold is exact too.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import numpy as np

PERMUTATIONS = 128
PRIME = np.uint64((1 << 61) - 1)
MASK32 = np.uint64(0xFFFFFFFF)
MISS = 1e-6  # chance that LSH misses a pair whose similarity is exactly the threshold
MARGIN = 0.2  # candidates estimated this far below the threshold are not scored (> 4.5 σ)
CHUNK = 65_536
_rng = np.random.default_rng(20261201)  # fixed: signatures are comparable across processes
_A = _rng.integers(1, (1 << 32) - 1, PERMUTATIONS, dtype=np.uint64)
_B = _rng.integers(0, (1 << 32) - 1, PERMUTATIONS, dtype=np.uint64)
_FOLD = _rng.integers(1, 1 << 63, 32, dtype=np.uint64) | np.uint64(1)  # odd multipliers


def hash_shingles(shingles: Iterable[str]) -> frozenset[int]:
    """32-bit hashes of shingles, stable across processes (Python's ``hash`` is salted); CRC-32
    is enough here: MinHash mixes them again, and a collision only merges two shingles."""
    return frozenset(zlib.crc32(s.encode()) for s in shingles)


def signature(hashes: frozenset[int]) -> np.ndarray:
    """The MinHash signature (PERMUTATIONS minima) of a non-empty set of 32-bit hashes."""
    x = np.fromiter(hashes, dtype=np.uint64, count=len(hashes))
    mixed = (np.outer(_A, x) + _B[:, None]) % PRIME & MASK32
    return mixed.min(axis=1)


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def band_rows(threshold: float) -> int:
    """Rows per band (bands: PERMUTATIONS // rows): the most, so the fewest candidates, that
    still miss a pair at ``threshold`` with probability below MISS (1 row is the floor)."""
    best = 1
    for rows in range(2, 33):
        if (1 - threshold**rows) ** (PERMUTATIONS // rows) <= MISS:
            best = rows
    return best


def bands_reach(threshold: float) -> bool:
    """Whether banding keeps its promise at ``threshold``: with one row per band the miss
    chance is (1 - t) ** PERMUTATIONS, above MISS for a threshold below about 0.10."""
    return (1 - threshold) ** PERMUTATIONS <= MISS


def estimated_similarity(signatures: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """MinHash estimates of the Jaccard similarity of index ``pairs`` (n × 2), in chunks."""
    estimates = np.empty(len(pairs))
    for start in range(0, len(pairs), CHUNK):
        a, b = pairs[start : start + CHUNK, 0], pairs[start : start + CHUNK, 1]
        estimates[start : start + CHUNK] = (signatures[a] == signatures[b]).mean(axis=1)
    return estimates


def candidate_pairs(signatures: np.ndarray, rows: int) -> set[tuple[int, int]]:
    """Index pairs (i < j) that agree on every row of at least one band. Each band is folded
    into one 64-bit key (a fold collision only adds a candidate, which is scored exactly)."""
    pairs: set[tuple[int, int]] = set()
    for start in range(0, PERMUTATIONS // rows * rows, rows):
        keys = (signatures[:, start : start + rows] * _FOLD[:rows]).sum(axis=1)
        order = np.argsort(keys, kind="stable")
        ranked = keys[order]
        same = np.flatnonzero(ranked[1:] == ranked[:-1])  # i: ranked[i] == ranked[i + 1]
        if same.size:
            pairs.update(_pairs_in_runs(order, same))
    return pairs


def _pairs_in_runs(order: np.ndarray, same: np.ndarray) -> Iterable[tuple[int, int]]:
    """The pairs within each run of equal keys (``same`` marks where a run continues)."""
    runs = np.split(same, np.flatnonzero(np.diff(same) != 1) + 1)
    for run in runs:
        members = sorted(order[run[0] : run[-1] + 2].tolist())
        yield from ((a, b) for i, a in enumerate(members) for b in members[i + 1 :])
