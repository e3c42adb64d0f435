"""The screen before any LLM call: requests a text-only, offline environment cannot serve.

EnvScaler drops non-English, multimodal and URL-bound requests before judging the rest; each
drop here keeps a reason code so the ``topics`` table can say why a candidate went no further.
"""

from __future__ import annotations

import re
import unicodedata

from envmill.schemas.topics import TopicCandidate

_URL = re.compile(r"https?://|www\.|\b[\w-]+\.(?:com|org|net|io|gov|edu)\b", re.I)
# A video consultation or an audio conference is an appointment, not media to look at.
_MEDIA = re.compile(
    r"\b(?:image|images|photo|photos|picture|pictures|screenshot|video|videos|audio|"
    r"recording|voice note|scan|attached|attachment|this file|the file above)\b"
    r"(?!\s+(?:call|calls|consultation|consultations|conference|meeting|session|appointment|"
    r"chat|visit|interview|lesson|class)\b)",
    re.I,
)
MIN_LATIN_SHARE = 0.9


def screen(candidate: TopicCandidate) -> str | None:
    """The reason code that drops ``candidate`` (``non_english``, ``multimodal``,
    ``url_bound``), or None when it may go on to the LLM."""
    if not _is_english(candidate.text):
        return "non_english"
    if _MEDIA.search(candidate.text):
        return "multimodal"
    if _URL.search(candidate.text):
        return "url_bound"
    return None


def _is_english(text: str) -> bool:
    """Mostly Latin letters: a cheap stand-in for language detection that needs no model."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    latin = sum(c.isascii() or "LATIN" in unicodedata.name(c, "") for c in letters)
    return latin / len(letters) >= MIN_LATIN_SHARE
