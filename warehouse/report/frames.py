"""Template-level diversity: how much of the corpus is one sentence or one line with values swapped.

Word n-grams and pairwise similarity read two tasks made from one template with different names
and numbers as different texts. Masking the values first shows the template: a task's *frame* is
its text with quoted names, numbers, ids and capitalised names each replaced by one placeholder
(a run of them by one); a *masked code line* is a line of an environment's source with its string
and number literals replaced and its comments dropped. Plain functions over strings, so the
page's definitions can be checked by hand.
"""

from __future__ import annotations

import io
import re
import tokenize as pytokenize
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from envmill.warehouse.report.diversity import TOKEN

PLACEHOLDER = "#"
QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]*’|(?<!\w)'[^'\n]+'(?!\w)")
# a word with a digit: 42, 296.01, 2025-05-23, 14:30, $74, MC-001, 400T
NUMBER_OR_ID = re.compile(r"[$€£]?(?:\w+-)*\w*\d(?:[\w.,:/-]*\w)?")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
CAPITALISED = re.compile(r"^(\W*)[A-Z][\w'’-]*")  # a word's letters, not its punctuation
PRONOUNS = frozenset({"i", "i'd", "i'm", "i've", "i'll"})  # capitalised, but not a name
PLACEHOLDER_RUN = re.compile(rf"{PLACEHOLDER}(?:[\s,]*{PLACEHOLDER})+")
MIN_LINE_TOKENS = 3  # shorter masked lines ("else :", "return S", ")") say nothing of a template


def mask_sentence(sentence: str) -> str:
    """One sentence's frame: values and capitalised names after its first word masked."""
    words = NUMBER_OR_ID.sub(PLACEHOLDER, sentence).split()
    masked = [
        CAPITALISED.sub(rf"\g<1>{PLACEHOLDER}", w) if i and w.lower() not in PRONOUNS else w
        for i, w in enumerate(words)
    ]
    return PLACEHOLDER_RUN.sub(PLACEHOLDER, " ".join(masked).lower())


def sentence_frames(text: str) -> list[str]:
    """The frames of a text's sentences, in order (quoted spans are masked before splitting)."""
    unquoted = QUOTED.sub(PLACEHOLDER, text)
    return [mask_sentence(s) for s in SENTENCE_END.split(unquoted.strip()) if s]


def task_frame(text: str) -> str:
    return " ".join(sentence_frames(text))


@dataclass(frozen=True)
class FrameShare:
    """How many tasks, and sentences of tasks, share their frame with another task."""

    tasks: int
    tasks_shared: int
    sentences: int
    sentences_shared: int

    @property
    def task_share(self) -> float | None:
        return self.tasks_shared / self.tasks if self.tasks else None

    @property
    def sentence_share(self) -> float | None:
        return self.sentences_shared / self.sentences if self.sentences else None


def frame_share(tasks: list[str]) -> FrameShare:
    """Tasks whose whole frame equals another task's; sentences whose frame occurs in another
    task (a sentence repeated inside one task does not count as shared)."""
    frames = [sentence_frames(t) for t in tasks]
    whole = Counter(" ".join(f) for f in frames)
    holders: dict[str, set[int]] = defaultdict(set)
    for i, task in enumerate(frames):
        for frame in task:
            holders[frame].add(i)
    sentences = [frame for task in frames for frame in task]
    return FrameShare(
        tasks=len(tasks),
        tasks_shared=sum(whole[" ".join(f)] > 1 for f in frames),
        sentences=len(sentences),
        sentences_shared=sum(len(holders[f]) > 1 for f in sentences),
    )


def masked_code_lines(source: str) -> set[str]:
    """The distinct masked lines of a Python source: literals replaced by ``S`` and ``N``,
    comments dropped, tokens joined by spaces; lines under MIN_LINE_TOKENS tokens are left out.
    A source Python cannot tokenize is masked line by line with the task masks instead."""
    try:
        rows = _python_rows(source)
    except (pytokenize.TokenError, SyntaxError):
        rows = [TOKEN.findall(QUOTED.sub("S", line)) for line in source.splitlines()]
        rows = [[("N" if t[0].isdigit() else t) for t in row] for row in rows]
    return {" ".join(row) for row in rows if len(row) >= MIN_LINE_TOKENS}


def _python_rows(source: str) -> list[list[str]]:
    rows: dict[int, list[str]] = defaultdict(list)
    skipped = {pytokenize.COMMENT, pytokenize.NL, pytokenize.NEWLINE, pytokenize.INDENT,
               pytokenize.DEDENT, pytokenize.ENDMARKER}  # fmt: skip
    for token in pytokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in skipped:
            continue
        text = {pytokenize.STRING: "S", pytokenize.NUMBER: "N"}.get(token.type, token.string)
        rows[token.start[0]].append(text)
    return [rows[r] for r in sorted(rows)]


@dataclass(frozen=True)
class LineShare:
    """Masked code lines of environment sources, and those also found in another domain's."""

    lines: int
    shared: int
    domains: int

    @property
    def share(self) -> float | None:
        return self.shared / self.lines if self.lines and self.domains > 1 else None


def cross_domain_line_share(sources: Iterable[tuple[str, str]]) -> LineShare:
    """Over (domain, source) pairs, one per environment: each environment's distinct masked
    lines, and how many of them also occur in the source of an environment of another domain."""
    per_env = [(domain, masked_code_lines(source)) for domain, source in sources]
    domains_of: dict[str, set[str]] = defaultdict(set)
    for domain, lines in per_env:
        for line in lines:
            domains_of[line].add(domain)
    return LineShare(
        lines=sum(len(lines) for _, lines in per_env),
        shared=sum(len(domains_of[line]) > 1 for _, lines in per_env for line in lines),
        domains=len({domain for domain, _ in per_env}),
    )
