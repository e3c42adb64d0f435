"""The wording tables under ``tasks/core/wording/``, read once each.

Phrasing that every stage shares is data (field nouns, status verbs, how details are asked for);
each table is a YAML mapping, and a file that cannot be read or is not a mapping is one error
naming it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

WORDING_DIR = Path(__file__).resolve().parent / "wording"


@cache
def read_wording(name: str) -> dict[str, Any]:
    """The mapping in ``wording/<name>.yaml``."""
    return read_mapping(WORDING_DIR, name)


def read_mapping(directory: Path, name: str) -> dict[str, Any]:
    """The mapping in ``<directory>/<name>.yaml``; a file that cannot be read or holds no
    mapping is one error naming it (the core tables and a backend's share this)."""
    path = directory / f"{name}.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"wording '{name}': cannot read {path.name}: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"wording '{name}': expected a mapping")
    return data
