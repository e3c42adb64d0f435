"""Read topic candidates from task corpora: API-Bank, ToolACE, and plain topic lists.

Each format has one reader; :func:`read_corpus` picks it from the file's content, dedupes
identical requests (API-Bank repeats a request once per step of its dialogue) and counts, by
reason, the records it skipped. A file that is no corpus at all is one CorpusError line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envmill.schemas.topics import TopicCandidate
from envmill.tasks.core.regular_file import MiB, read_regular

# API-Bank: the request sits between "User: " and "TIME:" (or the end of its line).
_API_BANK_REQUEST = re.compile(r"\nUser: (.*?)(?:TIME:|\n|$)", re.S)
_API_BANK_TOOL = re.compile(r"'name': '(\w+)'|\[(\w+)\(")
_CORPUS_HELPERS = {"ToolSearcher"}
CORPUS_LIMIT = 512 * MiB  # API-Bank and ToolACE are tens of MB


class CorpusError(ValueError):
    """A file that is not a corpus envmill reads; the message names the file and the problem."""


@dataclass
class Corpus:
    """What files held: distinct candidates in file order, and the records that were skipped,
    counted by reason (a record with no user request, a line that is not a JSON object, ...)."""

    candidates: list[TopicCandidate] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


def read_candidates(path: Path) -> list[TopicCandidate]:
    """Every distinct candidate of ``path``, in file order."""
    return read_corpus(path).candidates


def read_corpus(path: Path) -> Corpus:
    """The candidates of ``path`` and what was skipped; CorpusError when it is no corpus."""
    try:  # a pipe or a device where the corpus should be is refused, not read forever
        text = read_regular(path, CORPUS_LIMIT).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path.name}: cannot read: {exc}") from None
    records = _records(path, text)
    if records is None:
        found: Iterable[TopicCandidate | str] = _topic_lines(path.name, text)
    else:
        found = _reader(path, records)(path.name, records)
    corpus = Corpus()
    for item in found:
        if isinstance(item, str):
            corpus.skipped[item] += 1
        else:
            corpus.candidates.append(item)
    corpus.candidates = distinct_candidates(corpus.candidates)
    return corpus


def check_topics(path: Path, topics: list[str], max_chars: int, max_topics: int) -> None:
    """Refuse a topic longer than ``max_chars`` (with its line of ``path``) and more topics than
    ``max_topics``: a 10 MB line would go into every prompt, a 100,000-line file would start as
    many builds (issue 24)."""
    for number, topic in enumerate(topics, start=1):
        if len(topic) > max_chars:
            where = _line_of(path, topic) or f"topic {number}"
            raise CorpusError(
                f"{path.name}: {where} is {len(topic)} characters, over the {max_chars} a "
                "topic may have (max_topic_chars)"
            )
    if len(topics) > max_topics:
        raise CorpusError(
            f"{path.name}: {len(topics)} topics, more than {max_topics}; pass --max-topics "
            f"{len(topics)} to build them all"
        )


def _line_of(path: Path, topic: str) -> str | None:
    """ "line 7" of ``path`` that holds ``topic``, or None (a JSON corpus, an unreadable file)."""
    try:
        text = read_regular(path, CORPUS_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return None
    for number, line in enumerate(text.split("\n"), start=1):
        if topic in line:
            return f"line {number}"
    return None


def _reader(path: Path, records: list[Any]) -> Callable[[str, list[Any]], Iterator[Any]]:
    """The format of the first JSON object that names one; records of another shape are then
    skipped one by one, not taken for a different format."""
    for record in records:
        if isinstance(record, dict):
            for key, reader in _FORMATS:
                if key in record:
                    return reader
    raise CorpusError(
        f"{path.name}: not API-Bank (records with 'input'), ToolACE (records with "
        "'conversations') or a topic list (text lines, or JSON records with 'topic')"
    )


def _records(path: Path, text: str) -> list[Any] | None:
    """JSON (a list) or JSON Lines (the first line an object); None for plain text."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            records = json.loads(text)
        except ValueError as exc:
            raise CorpusError(f"{path.name}: invalid JSON: {exc}") from None
        return records if isinstance(records, list) else [records]
    if not stripped.startswith("{"):
        return None
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except ValueError as exc:
                raise CorpusError(
                    f"{path.name}: invalid JSON Lines: line {number}: {exc}"
                ) from None
    return records


def _api_bank(source: str, records: list[Any]) -> Iterator[TopicCandidate | str]:
    for record in records:
        if not isinstance(record, dict) or not isinstance(record.get("input"), str):
            yield "no 'input' text"
            continue
        found = _API_BANK_REQUEST.search("\n" + record["input"])
        if not found or not found.group(1).strip():
            yield "no 'User: ' request"
            continue
        context = f"{record['input']}\n{record.get('output', '')}"
        tools = [a or b for a, b in _API_BANK_TOOL.findall(context)]
        tools = [t for t in dict.fromkeys(tools) if t not in _CORPUS_HELPERS]
        yield TopicCandidate(
            source=source, format="api-bank", text=found.group(1).strip(), tools=tuple(tools)
        )


def _toolace(source: str, records: list[Any]) -> Iterator[TopicCandidate | str]:
    for record in records:
        turns = record.get("conversations") if isinstance(record, dict) else None
        if not isinstance(turns, list) or not turns or not isinstance(turns[0], dict):
            yield "no 'conversations' list of turns"
            continue
        first = turns[0]
        text = first.get("value")
        if first.get("from") != "user" or not isinstance(text, str) or not text.strip():
            yield "first turn is not a user's request"
            continue
        yield TopicCandidate(
            source=source,
            format="toolace",
            text=text.strip(),
            tools=tuple(_toolace_tools(record.get("system", ""))),
        )


def _toolace_tools(system: str) -> list[str]:
    """Tool names of a ToolACE system prompt, which lists the tools as JSON objects."""
    return list(dict.fromkeys(re.findall(r'"name":\s*"([^"]+)"', str(system))))


def _topic_records(source: str, records: list[Any]) -> Iterator[TopicCandidate | str]:
    for record in records:
        text = record.get("topic", record.get("text")) if isinstance(record, dict) else None
        if not isinstance(text, str) or not text.strip():
            yield "no 'topic' text"
            continue
        yield TopicCandidate(source=source, format="topics", text=text.strip())


def _topic_lines(source: str, text: str) -> Iterator[TopicCandidate]:
    """One topic per line; blank lines and lines starting with ``#`` (comments) are not topics."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            yield TopicCandidate(source=source, format="topics", text=line)


_FORMATS = (
    ("conversations", _toolace),
    ("input", _api_bank),
    ("topic", _topic_records),
    ("text", _topic_records),
)


def distinct_candidates(candidates: Iterable[TopicCandidate]) -> list[TopicCandidate]:
    """One candidate per request, keeping the tools every repeat of it mentioned."""
    seen: dict[str, TopicCandidate] = {}
    for candidate in candidates:
        first = seen.setdefault(candidate.candidate_id, candidate)
        tools = tuple(dict.fromkeys(first.tools + candidate.tools))
        if tools != first.tools:
            seen[candidate.candidate_id] = first.model_copy(update={"tools": tools})
    return list(seen.values())
