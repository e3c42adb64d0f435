"""Train/validation split by environment: an environment's trajectories all land in one split.

Each environment is placed by a seeded hash of its id alone, so its split never depends on which
other environments an export holds: a corpus that grows keeps every environment where it was
(the same seed), and no validation environment leaks into a later export's training set. The
share of environments in validation is the requested one in expectation; with few environments
it can be off, and a split can even come out empty.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Literal, TypeVar

Split = Literal["train", "validation"]
SPLITS: tuple[Split, ...] = ("train", "validation")
_SCALE = float(1 << 64)

T = TypeVar("T")


def split_of(env_id: str, validation: float | None, seed: int = 0) -> Split:
    """``validation`` when the environment's hash falls in the first ``validation`` share of
    the range; always ``train`` without a validation share."""
    if not validation:
        return "train"
    digest = hashlib.sha256(f"envmill-split\0{seed}\0{env_id}".encode()).digest()
    return "validation" if int.from_bytes(digest[:8], "big") / _SCALE < validation else "train"


def split_items(
    items: Iterable[T], key: Callable[[T], str], validation: float | None, seed: int = 0
) -> dict[Split, list[T]]:
    """Group ``items`` by the split of ``key(item)`` (an env_id), keeping their order."""
    groups: dict[Split, list[T]] = {split: [] for split in SPLITS}
    for item in items:
        groups[split_of(key(item), validation, seed)].append(item)
    return groups
