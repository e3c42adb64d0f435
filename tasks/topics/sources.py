"""Read topic candidates from task corpora: API-Bank, ToolACE, and plain topic lists.

Each format has one reader; :func:`read_candidates` picks it from the file's content, dedupes
identical requests (API-Bank repeats a request once per step of its dialogue) and says in one
line what it could not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from envmill.schemas.topics import TopicCandidate

# API-Bank: the request sits between "User: " and "TIME:" (or the end of its line).
_API_BANK_REQUEST = re.compile(r"\nUser: (.*?)(?:TIME:|\n|$)", re.S)
_API_BANK_TOOL = re.compile(r"'name': '(\w+)'|\[(\w+)\(")
_CORPUS_HELPERS = {"ToolSearcher"}


class CorpusError(ValueError):
    """A file that is not a corpus envmill reads; the message names the file and the problem."""


def read_candidates(path: Path) -> list[TopicCandidate]:
    """Every distinct candidate of ``path``, in file order."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path.name}: cannot read: {exc}") from None
    records = _records(path, text)
    if records is None:
        found = _topic_lines(path.name, text)
    elif all(isinstance(r, dict) and "conversations" in r for r in records):
        found = _toolace(path.name, records)
    elif all(isinstance(r, dict) and "input" in r for r in records):
        found = _api_bank(path.name, records)
    elif all(isinstance(r, dict) and ("topic" in r or "text" in r) for r in records):
        found = _topic_records(path.name, records)
    else:
        raise CorpusError(
            f"{path.name}: not API-Bank (records with 'input'), ToolACE (records with "
            "'conversations') or a topic list (text lines, or JSON records with 'topic')"
        )
    return _distinct(found)


def _records(path: Path, text: str) -> list[Any] | None:
    """JSON (a list, or an object holding one) or JSON Lines; None for plain text."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise CorpusError(f"{path.name}: invalid JSON: {exc}") from None
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and all(line.lstrip().startswith("{") for line in lines):
        try:
            return [json.loads(line) for line in lines]
        except ValueError as exc:
            raise CorpusError(f"{path.name}: invalid JSON Lines: {exc}") from None
    return None


def _api_bank(source: str, records: list[dict]) -> Iterator[TopicCandidate]:
    for record in records:
        found = _API_BANK_REQUEST.search("\n" + str(record.get("input", "")))
        if not found or not found.group(1).strip():
            continue
        context = f"{record.get('input', '')}\n{record.get('output', '')}"
        tools = [a or b for a, b in _API_BANK_TOOL.findall(context)]
        tools = [t for t in dict.fromkeys(tools) if t not in _CORPUS_HELPERS]
        yield TopicCandidate(
            source=source, format="api-bank", text=found.group(1).strip(), tools=tuple(tools)
        )


def _toolace(source: str, records: list[dict]) -> Iterator[TopicCandidate]:
    for record in records:
        turns = record.get("conversations") or []
        first = turns[0] if turns and isinstance(turns[0], dict) else {}
        if first.get("from") != "user" or not str(first.get("value", "")).strip():
            continue
        yield TopicCandidate(
            source=source,
            format="toolace",
            text=str(first["value"]).strip(),
            tools=tuple(_toolace_tools(record.get("system", ""))),
        )


def _toolace_tools(system: str) -> list[str]:
    """Tool names of a ToolACE system prompt, which lists the tools as JSON objects."""
    return list(dict.fromkeys(re.findall(r'"name":\s*"([^"]+)"', str(system))))


def _topic_records(source: str, records: list[dict]) -> Iterator[TopicCandidate]:
    for record in records:
        text = str(record.get("topic") or record.get("text") or "").strip()
        if text:
            yield TopicCandidate(source=source, format="topics", text=text)


def _topic_lines(source: str, text: str) -> Iterator[TopicCandidate]:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            yield TopicCandidate(source=source, format="topics", text=line)


def _distinct(candidates: Iterable[TopicCandidate]) -> list[TopicCandidate]:
    """One candidate per request, keeping the tools every repeat of it mentioned."""
    seen: dict[str, TopicCandidate] = {}
    for candidate in candidates:
        first = seen.setdefault(candidate.candidate_id, candidate)
        tools = tuple(dict.fromkeys(first.tools + candidate.tools))
        if tools != first.tools:
            seen[candidate.candidate_id] = first.model_copy(update={"tools": tools})
    return list(seen.values())
