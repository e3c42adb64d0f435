"""Lexical vectors, near-duplicate detection and diverse selection of topics."""

from __future__ import annotations

import numpy as np

from envmill.tasks.backends.llm.topics.similarity import (
    diverse_subset,
    lexical_vectors,
    near_duplicates,
    normalised,
)

TOPICS = [
    "clinic appointment booking",
    "Clinic appointment bookings",
    "warehouse stock transfers",
    "library book loans",
    "warehouse stock transfer",
    "hotel room housekeeping",
]


def test_lexical_vectors_make_near_spellings_close_and_other_topics_far():
    vectors = lexical_vectors(TOPICS)
    assert vectors.shape[0] == len(TOPICS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1)
    assert vectors[0] @ vectors[1] > 0.8
    assert vectors[0] @ vectors[3] < 0.3


def test_near_duplicates_point_at_the_kept_topic():
    duplicates = near_duplicates(lexical_vectors(TOPICS), threshold=0.8)
    assert duplicates == {1: 0, 4: 2}


def test_threshold_one_keeps_everything_distinct():
    assert near_duplicates(lexical_vectors(TOPICS), threshold=1.01) == {}


def test_diverse_subset_spreads_over_clusters():
    # three tight clusters of five points each; three picks must hit three clusters
    rng = np.random.default_rng(0)
    centres = np.eye(3)
    points = normalised(np.vstack([c + 0.05 * rng.standard_normal((5, 3)) for c in centres]))
    picked = diverse_subset(points, 3)
    assert picked[0] == 0 and len(set(picked)) == 3
    assert {row // 5 for row in picked} == {0, 1, 2}


def test_diverse_subset_is_bounded_by_the_rows():
    vectors = lexical_vectors(TOPICS[:2])
    assert sorted(diverse_subset(vectors, 10)) == [0, 1]
    assert diverse_subset(vectors, 0) == [] and diverse_subset(vectors[:0], 3) == []
