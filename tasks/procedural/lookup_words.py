"""The words of harder lookups, chains and conditions, read from ``wording/lookups.yaml``.

Phrasing stays data: code picks a key and fills its placeholders, the file holds the English.
"""

from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

WORDING_DIR = Path(__file__).with_name("wording")


@lru_cache(maxsize=4)
def load_wording(name: str = "lookups") -> dict[str, Any]:
    """The phrase lists of ``wording/<name>.yaml`` (read once)."""
    return yaml.safe_load((WORDING_DIR / f"{name}.yaml").read_text(encoding="utf-8"))


def say(key: str, rng: random.Random, **values: Any) -> str:
    """One phrase of ``key`` filled with ``values``."""
    return rng.choice(load_wording()[key]).format(**values)


def phrase(key: str, **values: Any) -> str:
    """The single phrase of ``key`` (no choice to make) filled with ``values``."""
    return str(load_wording()[key]).format(**values)
