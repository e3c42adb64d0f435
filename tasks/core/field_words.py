"""How a person names a field of a record ("the issue date", not "the issued on").

Shared by every stage that writes English about state: the procedural backend's tasks and the
reference's closing messages, whichever backend wrote the environment. The table is data
(``wording/fields.yaml``); a field it does not list is said by its words.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml

FIELDS_FILE = Path(__file__).resolve().parent / "wording" / "fields.yaml"
ABBREVIATIONS = {"max": "maximum", "min": "minimum", "qty": "quantity", "num": "number"}


@cache
def field_nouns() -> dict[str, str]:
    """The table of ``fields.yaml``: field name → how a person says it."""
    try:
        data = yaml.safe_load(FIELDS_FILE.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"wording 'fields': cannot read {FIELDS_FILE.name}: {exc}") from None
    nouns = data.get("nouns") if isinstance(data, dict) else None
    if not isinstance(nouns, dict) or not nouns:
        raise ValueError("wording 'fields': 'nouns' must be a non-empty mapping")
    return {str(k): str(v) for k, v in nouns.items()}


def field_noun(field: str) -> str:
    """The table's words for ``field``, else its words with abbreviations spelled out."""
    nouns = field_nouns()
    if field in nouns:
        return nouns[field]
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", field)
    words = re.sub(r"[_\-\s]+", " ", spaced).strip().lower().split()
    return " ".join(ABBREVIATIONS.get(word, word) for word in words)


def spoken_fields(text: str) -> str:
    """``text`` with each field the table names, written as words ("purchased at"), said as a
    person would ("purchase time")."""
    for field, noun in field_nouns().items():
        text = re.sub(rf"\b{re.escape(field.replace('_', ' '))}\b", noun, text)
    return text
