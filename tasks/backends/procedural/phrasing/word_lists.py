"""The English of the newer scenario kinds, loaded from ``wording/*.yaml`` (data, not code).

Questions, answers, refusals and conversation openers are word lists a reviewer can extend
without touching the generator; a missing or malformed list is one clear error naming the file.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from envmill.tasks.core.wording_files import read_mapping

# the kinds of record that are people: named by name ("Jane Doe"), said "their", "them"
PEOPLE = frozenset(
    """client customer member patient borrower donor farmer student employee tenant owner guest
    candidate sender driver passenger subscriber user applicant taxpayer resident adjuster agent
    instructor doctor vet technician supplier policyholder claimant volunteer courier host
    rider""".split()
)

WORDING_DIR = Path(__file__).resolve().parent.parent / "wording"


@lru_cache(maxsize=8)
def load_wording(name: str) -> dict[str, Any]:
    """The mapping in ``wording/<name>.yaml``; every value a non-empty list, mapping or text."""
    data = read_mapping(WORDING_DIR, name)
    if not all(isinstance(v, list | dict | str) and v for v in data.values()):
        raise ValueError(f"wording '{name}': every key must hold a non-empty list, mapping or text")
    return data


def words(name: str, key: str) -> list[Any]:
    """One list of ``wording/<name>.yaml``, e.g. ``words("refusals", "declines")``."""
    value = load_wording(name).get(key)
    if not isinstance(value, list):
        raise ValueError(f"wording '{name}': no list '{key}'")
    return value
