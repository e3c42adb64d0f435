"""The response cache: content-addressed files, so a rerun or a retry pays only for what is new.

Key = sha256 of the canonical JSON of everything that decides a reply (model, messages, tools,
schema, temperature, max_tokens, sample index). An entry is one file ``<folder>/ab/cdef….json``,
written under a temporary name and renamed into place: readers never see half an entry, and any
number of processes (or machines sharing the folder over NFS) may write the same key at once —
the last rename wins and every writer wrote the same answer, so no lock is needed. An entry that
does not parse or names another key is treated as missing and rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

CACHE_FORMAT = 1


def canonical_json(value: Any) -> str:
    """DESIGN §3.2's canonical JSON."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: dict[str, Any]) -> str:
    """The cache key of a request description (see the module docstring for what goes in)."""
    return hashlib.sha256(canonical_json(request).encode()).hexdigest()


class ResponseCache:
    """Cached replies under ``folder``; ``folder=None`` is a cache that never hits nor stores."""

    def __init__(self, folder: Path | str | None) -> None:
        self.folder = None if folder is None else Path(folder)

    def path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key[2:]}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response of ``key``, or None (missing, partial or corrupt)."""
        if self.folder is None:
            return None
        try:
            entry = json.loads(self.path(key).read_bytes())
        except (OSError, ValueError):
            return None
        valid = isinstance(entry, dict) and entry.get("key") == key
        if not valid or entry.get("format") != CACHE_FORMAT:
            return None
        response = entry.get("response")
        return response if isinstance(response, dict) else None

    def put(self, key: str, response: dict[str, Any]) -> None:
        """Store atomically: write a temporary file beside the entry, then rename it."""
        if self.folder is None:
            return
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        entry = {"format": CACHE_FORMAT, "key": key, "response": response}
        try:
            temporary.write_text(canonical_json(entry), encoding="utf-8")
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
