"""A small memo for values computed from JSON: keyed by text, bounded, oldest out first.

``functools.lru_cache`` needs hashable arguments, and the states and schemas certification reads
are dicts: a caller keys them by their canonical JSON (much cheaper than reading them again) and
asks here.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class Recent(Generic[Value]):
    """The last ``size`` values made, by key; safe to share between threads (a lost race only
    makes a value twice)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: dict[Hashable, Value] = {}

    def get(self, key: Hashable, make: Callable[[], Value]) -> Value:
        value = self._values.get(key)
        if value is None:
            value = make()
            if len(self._values) >= self.size:
                self._values.pop(next(iter(self._values)), None)
            self._values[key] = value
        return value
