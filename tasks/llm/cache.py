"""The response cache: content-addressed files, so a rerun or a retry pays only for what is new.

Key = sha256 of the canonical JSON of everything that decides a reply (a chat's stage, model,
messages, tools, schema, temperature, the length limit it sends — ``max_tokens`` or
``max_completion_tokens`` —, sample index; the stage is a field of its own, so two stages that
send the same text keep apart). An entry is one file ``<folder>/ab/cdef….json``,
written under a temporary name and renamed into place: readers never see half an entry, and any
number of processes (or machines sharing the folder over NFS) may write the same key at once —
the last rename wins and every writer wrote the same answer, so no lock is needed. An entry that
does not parse, names another key or has the wrong shape (checked against :class:`CachedChat`
or :class:`CachedVectors`) is treated as missing and rewritten.

The cache is an optimisation: a folder that cannot be written costs a warning, never the reply
that was just paid for.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, ValidationError, model_validator

from envmill.tasks.core.regular_file import MiB, read_regular

CACHE_FORMAT = 1
ENTRY_LIMIT = 32 * MiB  # a model's reply with its usage, far above any real one
LOG = logging.getLogger(__name__)
Entry = TypeVar("Entry", bound=BaseModel)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True)


class CachedUsage(_Strict):
    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)


class CachedToolCall(_Strict):
    id: str
    name: str
    arguments: str


class CachedChat(_Strict):
    """A cached chat reply and the token counts of the call that paid for it."""

    text: str
    tool_calls: list[CachedToolCall]
    finish_reason: str = ""
    usage: CachedUsage = CachedUsage()


class CachedVectors(_Strict):
    """Cached embedding vectors (one size, finite numbers) and the prompt tokens they cost."""

    vectors: list[list[FiniteFloat]] = Field(min_length=1)
    prompt_tokens: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _one_size(self) -> CachedVectors:
        if len({len(vector) for vector in self.vectors}) != 1 or not self.vectors[0]:
            raise ValueError("vectors of different or no size")
        return self


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
        try:  # a pipe, a link or a huge file at the entry's path is a miss (issue 24)
            entry = json.loads(read_regular(self.path(key), ENTRY_LIMIT))
        except (OSError, ValueError, RecursionError):
            return None
        valid = isinstance(entry, dict) and entry.get("key") == key
        if not valid or entry.get("format") != CACHE_FORMAT:
            return None
        response = entry.get("response")
        return response if isinstance(response, dict) else None

    def load(self, key: str, shape: type[Entry]) -> Entry | None:
        """The stored response of ``key`` as ``shape``, or None (missing or of another shape)."""
        response = self.get(key)
        if response is None:
            return None
        try:
            return shape.model_validate(response)
        except ValidationError:
            return None

    def put(self, key: str, response: dict[str, Any] | BaseModel) -> None:
        """Store atomically (a temporary file beside the entry, then a rename); best effort."""
        if self.folder is None:
            return
        if isinstance(response, BaseModel):
            response = response.model_dump(mode="json")
        path = self.path(key)
        temporary = path.with_name(f".{path.stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        entry = {"format": CACHE_FORMAT, "key": key, "response": response}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(canonical_json(entry), encoding="utf-8")
            os.replace(temporary, path)
        except OSError as exc:
            LOG.warning("LLM cache: cannot store %s (%s); the reply is not cached", path, exc)
        finally:
            with suppress(OSError):
                temporary.unlink(missing_ok=True)
