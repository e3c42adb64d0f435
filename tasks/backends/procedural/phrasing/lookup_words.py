"""The words of harder lookups, chains and conditions, read from ``wording/lookups.yaml``.

Phrasing stays data: code picks a key and fills its placeholders, the file holds the English.
"""

from __future__ import annotations

import random
from typing import Any

from envmill.tasks.backends.procedural.phrasing.word_lists import load_wording


def say(key: str, rng: random.Random, **values: Any) -> str:
    """One phrase of ``key`` filled with ``values``; ``{is}`` and ``{it}`` agree with ``{field}``
    ("whose visits are 103", "if they are below $900")."""
    field = str(values.get("field", ""))
    plural = field.endswith("s") and not field.endswith(("ss", "us", "is"))
    values.setdefault("is", "are" if plural else "is")
    values.setdefault("it", "they" if plural else "it")
    return rng.choice(load_wording("lookups")[key]).format(**values)


def phrase(key: str, **values: Any) -> str:
    """The single phrase of ``key`` (no choice to make) filled with ``values``."""
    return str(load_wording("lookups")[key]).format(**values)
