"""Canonical JSON and content ids: the one definition every stage hashes with (DESIGN §3.2)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(obj: Any) -> str:
    """Serialize ``obj`` so that equal content always gives equal text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_id(obj: Any) -> str:
    """16 hex digits of the sha256 of the canonical JSON of ``obj``; ids are content hashes."""
    return sha256_hex(canonical_json(obj))[:16]
