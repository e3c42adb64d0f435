"""Pairs above threshold, per measure: exact classes first, then MinHash/LSH among them.

Items whose shingle sets are identical form one class (similarity 1.0): each later member is
recorded against the class's first item, which stands for the others (equality is transitive,
so the star says everything the ``k·(k−1)/2`` pairs would). The first items of the classes are
then banded by MinHash; a candidate whose MinHash estimate is within MARGIN of the threshold is
scored exactly, and recorded with its exact Jaccard similarity when it reaches the threshold.
Only pairs that involve a new item are looked for, so a run's items are checked against the
whole corpus without checking the corpus against itself again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from envmill.schemas.dedupe import (
    MEASURES,
    DedupeItem,
    DedupeSettings,
    DuplicateRecord,
    EnvironmentItem,
    StateItem,
    TaskItem,
)
from envmill.tasks.dedupe import features, minhash
from envmill.tasks.dedupe.features import (
    code_shingles,
    signature_items,
    state_items,
    task_shingles,
)
from envmill.tasks.dedupe.minhash import (
    MARGIN,
    band_rows,
    bands_reach,
    candidate_pairs,
    estimated_similarity,
    hash_shingles,
    jaccard,
    signature,
)

Progress = Callable[[str, int, float], None]  # measure, items compared, seconds


@dataclass(frozen=True)
class Shingled:
    """One item reduced to what a measure compares."""

    item_id: str
    order: str
    new: bool
    hashes: frozenset[int]


class HashMemo(Protocol):
    """Hashed shingles kept between passes, by a key naming the measure and the exact input
    shingled (a corpus is read whole by every run's pass: only what is new is shingled)."""

    def get(self, key: str) -> frozenset[int] | None: ...

    def put(self, key: str, hashes: frozenset[int]) -> None: ...


def find_duplicates(
    settings: DedupeSettings,
    environments: Iterable[EnvironmentItem] = (),
    tasks: Iterable[TaskItem] = (),
    states: Iterable[StateItem] = (),
    progress: Progress | None = None,
    memo: HashMemo | None = None,
) -> list[DuplicateRecord]:
    """Every pair above its measure's threshold that involves a new item, for every measure."""
    environments, tasks, states = list(environments), list(tasks), list(states)
    hashed = _Hasher(memo)
    shinglers: dict[str, Callable[[], list[Shingled]]] = {  # each measure's, typed per item
        "code": lambda: [
            hashed(e, ("code", e.source), lambda e=e: code_shingles(e.source)) for e in environments
        ],
        "signature": lambda: [
            hashed(e, ("signature", e.tools), lambda e=e: signature_items(e.tools))
            for e in environments
        ],
        "task": lambda: [
            hashed(t, ("task", t.task, t.facts), lambda t=t: task_shingles(t.task, t.facts))
            for t in tasks
        ],
        "state": lambda: [
            hashed(s, ("state", s.state), lambda s=s: state_items(s.state)) for s in states
        ],
    }
    records: list[DuplicateRecord] = []
    for measure, shingle in shinglers.items():
        clock = time.perf_counter()
        shingled = shingle()
        records += pairs_above(shingled, settings.threshold(measure), measure)
        if progress is not None:
            progress(measure, len(shingled), time.perf_counter() - clock)
    return records


class _Hasher:
    """An item's hashed shingles: from the memo when its exact input was shingled before."""

    def __init__(self, memo: HashMemo | None) -> None:
        self.memo = memo

    def __call__(
        self, item: DedupeItem, said: tuple[Any, ...], shingles: Callable[[], set[str]]
    ) -> Shingled:
        if self.memo is None:
            return Shingled(item.item_id, item.order, item.new, hash_shingles(shingles()))
        key = memo_key(said)
        hashes = self.memo.get(key)
        if hashes is None:
            hashes = hash_shingles(shingles())
            self.memo.put(key, hashes)
        return Shingled(item.item_id, item.order, item.new, hashes)


def shingling_version() -> str:
    """A digest of the code that turns an item into hashes: a memo kept under it is never read
    by code that shingles otherwise."""
    digest = hashlib.sha256(sys.version.encode())  # the parser and the builtins read code
    for path in (features.__file__, minhash.__file__, __file__):
        digest.update(Path(path or "").read_bytes())
    return digest.hexdigest()[:16]


def memo_key(said: tuple[Any, ...]) -> str:
    """The measure and a digest of exactly what it shingles, in its own key order (not the
    item's id: an id need not cover every field a measure reads, a scenario's user facts for
    one; and a measure may read keys in the order they come)."""
    text = json.dumps(said, ensure_ascii=False, separators=(",", ":"))
    return f"{said[0]}:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"


def pairs_above(items: list[Shingled], threshold: float, measure: str) -> list[DuplicateRecord]:
    """The duplicate records of one measure (items with nothing to compare are left out)."""
    ordered = sorted((i for i in items if i.hashes), key=lambda i: (i.order, i.item_id))
    classes: dict[frozenset[int], list[Shingled]] = {}
    for item in ordered:
        classes.setdefault(item.hashes, []).append(item)
    records = [
        _record(member, members[0], 1.0, measure)
        for members in classes.values()
        for member in members[1:]
        if member.new or members[0].new
    ]
    firsts = [members[0] for members in classes.values()]
    touched = [any(m.new for m in members) for members in classes.values()]
    return records + _near_pairs(firsts, touched, threshold, measure)


def _near_pairs(
    firsts: list[Shingled], touched: list[bool], threshold: float, measure: str
) -> list[DuplicateRecord]:
    """Pairs of class representatives at or above ``threshold`` (one of them new or standing
    for a new item), found by LSH and scored exactly; the later one duplicates the earlier."""
    if len(firsts) < 2 or threshold >= 1.0:
        return []
    signatures = np.vstack([signature(item.hashes) for item in firsts])
    banded = (
        candidate_pairs(signatures, band_rows(threshold))
        if bands_reach(threshold)  # below it, LSH would miss pairs: every pair is a candidate
        else itertools.combinations(range(len(firsts)), 2)
    )
    candidates = [pair for pair in sorted(banded) if touched[pair[0]] or touched[pair[1]]]
    if not candidates:
        return []
    pairs = np.array(candidates, dtype=np.int64)
    likely = pairs[estimated_similarity(signatures, pairs) >= threshold - MARGIN]
    records = []
    for a, b in likely.tolist():
        similarity = jaccard(firsts[a].hashes, firsts[b].hashes)
        if similarity >= threshold:  # classes are in corpus order: b is the later one
            records.append(_record(firsts[b], firsts[a], similarity, measure))
    return records


def _record(item: Shingled, original: Shingled, similarity: float, measure: str) -> DuplicateRecord:
    return DuplicateRecord(
        kind=MEASURES[measure],
        item_id=item.item_id,
        duplicate_of=original.item_id,
        similarity=round(similarity, 6),
        measure=measure,
    )
