"""Topic mining, end to end (EnvScaler's SkelBuilder, first step): corpus files → one record per
distinct candidate, each with exactly one status.

read every file (a bad one stops the run with one line naming it) → screen (no LLM) → judge the
rest on a thread pool (the client's global cap bounds the calls in flight) → thresholds →
dedupe and select (:mod:`select`). Plain functions: the CLI and, later, a flow call them alike.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from envmill.schemas.ids import content_id
from envmill.schemas.topics import TopicCandidate, TopicMiningConfig, TopicRecord
from envmill.tasks.backends.llm.topics.judge import judge_candidate
from envmill.tasks.backends.llm.topics.screen import screen
from envmill.tasks.backends.llm.topics.select import dedupe_and_select
from envmill.tasks.backends.llm.topics.sources import (
    Corpus,
    CorpusError,
    distinct_candidates,
    read_corpus,
)
from envmill.tasks.llm import LlmClient

MINING_VERSION = 1  # enters the mining key: a change to how mining decides is a new run


def mine_topics(
    paths: Sequence[Path], client: LlmClient, options: TopicMiningConfig
) -> list[TopicRecord]:
    """Every distinct candidate of ``paths`` as a record, in file order.

    Raises:
        CorpusError: a file cannot be read as a corpus (the message names it); nothing is judged.
    """
    return mine_candidates(read_corpora(paths).candidates, client, options)


def mine_candidates(
    candidates: list[TopicCandidate], client: LlmClient, options: TopicMiningConfig
) -> list[TopicRecord]:
    """:func:`mine_topics` on candidates already read (distinct by ``candidate_id``)."""
    records: dict[str, TopicRecord] = {}
    waiting = []
    for candidate in candidates:
        code = screen(candidate)
        if code is None:
            waiting.append(candidate)
        else:
            records[candidate.candidate_id] = screened_record(candidate, code, client.run_id)
    judged = judge_all(waiting, client, options)
    records |= {r.candidate_id: r for r in judged if r.status != "accepted"}
    accepted = [r for r in judged if r.status == "accepted"]
    records |= {r.candidate_id: r for r in dedupe_and_select(accepted, client, options)}
    return [records[c.candidate_id] for c in candidates]


def read_corpora(paths: Sequence[Path]) -> Corpus:
    """The distinct candidates of all files, in order (a repeat keeps the first's source and
    adds its tools), and every file's skipped records."""
    corpora = [read_corpus(Path(path)) for path in paths]
    candidates = distinct_candidates(c for corpus in corpora for c in corpus.candidates)
    return Corpus(candidates, sum((corpus.skipped for corpus in corpora), Counter()))


def screened_record(candidate: TopicCandidate, code: str, run_id: str) -> TopicRecord:
    message = f"screened out before any LLM call: {code.replace('_', '-')} request"
    return TopicRecord.of(
        candidate, run_id, status="screened_out", reason_code=code, message=message
    )


def judge_all(
    candidates: list[TopicCandidate], client: LlmClient, options: TopicMiningConfig
) -> list[TopicRecord]:
    """One verdict per candidate, concurrently; results in the candidates' order."""
    if not candidates:
        return []
    workers = min(options.workers or client.settings.max_concurrency, len(candidates))
    with ThreadPoolExecutor(workers, thread_name_prefix="topics") as pool:
        return list(pool.map(lambda c: judge_candidate(c, client, options), candidates))


def mining_key(paths: Sequence[Path], options: TopicMiningConfig) -> str:
    """16 hex digits over the files' bytes and the options: the run's warehouse part name."""
    digests = []
    for path in paths:
        try:
            digests.append(hashlib.sha256(Path(path).read_bytes()).hexdigest())
        except OSError as exc:
            raise CorpusError(f"{Path(path).name}: cannot read: {exc.strerror}") from None
    return content_id(
        {
            "version": MINING_VERSION,
            "files": digests,
            "options": options.model_dump(exclude={"workers"}),
        }
    )
