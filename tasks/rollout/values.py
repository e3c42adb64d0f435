"""The specific values a message states, and whether a conversation's sources hold them.

A value is what a person could not say without having been told: an e-mail, a date, a time, a
phone number, an id (letters and digits, ``P003``, ``BK-1042``, ``09DE380``), a number or amount,
a person's name. Each is read into a key that ignores how it is written, so ``10 Nov 2025``,
``November 10th`` and ``2025-11-10T11:00:00`` meet on one date, ``11am`` and ``11:00`` on one
time, ``(864) 220-8653`` and ``864-220-8653`` on one phone number, ``$1,200.00`` and ``1200`` on
one amount.

Deliberately left out, to keep false alarms rare: bare integers below 10 without a currency (``2
things``, ``1 more question``), weekdays and relative dates (``tomorrow``), and a capitalized
word at the start of a sentence or on its own (a name is two to four capitalized words in the
middle of a sentence, optionally after a title: ``with Dr. Tom Becker``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from envmill.tasks.core.facts import as_text, match_strength, mentions

MONTHS = tuple("jan feb mar apr may jun jul aug sep oct nov dec".split())
MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*"
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
ISO = re.compile(
    r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?)?"
    r"(?:Z|[+-]\d{2}:?\d{2})?(?!\d)"
)
DAY_MONTH = re.compile(
    rf"(?<![\w-])(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+({MONTH})\.?(?:,?\s+(\d{{4}}))?(?!\w)"
)
MONTH_DAY = re.compile(
    rf"(?<![\w-])({MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?(?![\w:])"
)
SLASH_DATE = re.compile(r"(?<![\w/])(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})(?![\w/])")
CLOCK = re.compile(r"(?<![\w:])(\d{1,2}):(\d{2})(?::\d{2})?(?:\s*([ap])\.?\s?m\b\.?)?", re.I)
HOUR = re.compile(r"(?<![\w:])(\d{1,2})\s*([ap])\.?\s?m\b\.?", re.I)
PHONE = re.compile(r"(?<![\w+-])\+?\(?\d[\d ().-]{5,}\d(?![\w])")
TOKEN = re.compile(r"(?<![\w-])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*(?![\w-])")
ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$", re.I)
WITH_UNIT = re.compile(r"^(\d+(?:\.\d+)?)[a-z]{1,3}$")
NUMBER = re.compile(r"(?<![\w.,])([$€£]\s?)?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w]|[.,]\d)")
ANY_NUMBER = re.compile(r"\d+(?:\.\d+)?")
WORD = r"(?:[DO]')?[A-Z][a-z]+(?:[A-Z][a-z]+)?(?:['-][A-Za-z]+)*"  # "McCall", "O'Connor"
NAME = re.compile(rf"(?<![\w.])(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?{WORD}(?:\s+{WORD}){{1,3}}")
TITLES = frozenset({"dr", "mr", "mrs", "ms", "prof"})
NOT_NAMES = frozenset(
    "hi hello hey dear thanks thank please sure yes no okay ok great perfect sorry i "
    "monday tuesday wednesday thursday friday saturday sunday today tomorrow january february "
    "march april may june july august september october november december".split()
)
SMALL = 10


@dataclass(frozen=True)
class Value:
    """One value a text states: its kind, as written, and the keys it may be known by."""

    kind: str
    text: str
    keys: tuple[str, ...]


def extract_values(text: str) -> list[Value]:
    """Every specific value in ``text``, in reading order by kind (see the module docstring)."""
    found: list[tuple[int, Value]] = []
    masked = text
    for reader in (_emails, _iso_dates, _text_dates, _slash_dates, _clock_times, _phones, _ids):
        for start, end, value in reader(masked):
            found.append((start, value))
            masked = masked[:start] + " " * (end - start) + masked[end:]
    found += [(m.start(), v) for m, v in _numbers(masked)]
    found += [(m.start(), v) for m, v in _names(text)]
    return [value for _, value in sorted(found, key=lambda pair: pair[0])]


def _emails(text: str) -> Iterable[tuple[int, int, Value]]:
    for m in EMAIL.finditer(text):
        yield m.start(), m.end(), Value("email", m.group(), (m.group().casefold(),))


def _iso_dates(text: str) -> Iterable[tuple[int, int, Value]]:
    for m in ISO.finditer(text):
        year, month, day, hour, minute = m.groups()
        yield m.start(), m.end(), Value("date", m.group(), (f"{year}-{month}-{day}",))
        if hour is not None:
            yield m.start(), m.end(), Value("time", m.group(), (f"{hour}:{minute}",))


def _text_dates(text: str) -> Iterable[tuple[int, int, Value]]:
    spans = [(m, m.group(1), m.group(2), m.group(3)) for m in DAY_MONTH.finditer(text)]
    spans += [(m, m.group(2), m.group(1), m.group(3)) for m in MONTH_DAY.finditer(text)]
    for m, day, month, year in sorted(spans, key=lambda s: s[0].start()):
        number = MONTHS.index(month[:3].lower()) + 1
        if 1 <= int(day) <= 31:
            yield m.start(), m.end(), Value("date", m.group(), (date_key(year, number, day),))


def _slash_dates(text: str) -> Iterable[tuple[int, int, Value]]:
    """``03/11/2025`` is read both ways (day first and month first)."""
    for m in SLASH_DATE.finditer(text):
        first, second, year = m.groups()
        year = year if len(year) == 4 else f"20{year}"
        keys = tuple(
            date_key(year, int(month), day)
            for month, day in ((second, first), (first, second))
            if 1 <= int(month) <= 12 and 1 <= int(day) <= 31
        )
        if keys:
            yield m.start(), m.end(), Value("date", m.group(), keys)


def date_key(year: str | None, month: int, day: str | int) -> str:
    """``2025-11-10``, or ``--11-10`` when the year is not said."""
    return f"{year or '-'}-{month:02d}-{int(day):02d}"


def _clock_times(text: str) -> Iterable[tuple[int, int, Value]]:
    readings = [(m, m.group(1), m.group(2), m.group(3)) for m in CLOCK.finditer(text)]
    readings += [(m, m.group(1), "00", m.group(2)) for m in HOUR.finditer(text)]
    for m, hour, minute, half in sorted(readings, key=lambda r: r[0].start()):
        hours = int(hour) % 12 + (12 if half and half.lower() == "p" else 0) if half else int(hour)
        if hours < 24 and int(minute) < 60:
            yield m.start(), m.end(), Value("time", m.group(), (f"{hours:02d}:{minute}",))


def _phones(text: str) -> Iterable[tuple[int, int, Value]]:
    """Seven digits or more with separators or a ``+`` (a bare run of digits is a number)."""
    for m in PHONE.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if len(digits) >= 7 and not m.group().isdigit():
            yield m.start(), m.end(), Value("phone", m.group(), (digits,))


def _ids(text: str) -> Iterable[tuple[int, int, Value]]:
    """Words of letters and digits; ordinals are skipped, ``5kg`` is the number 5."""
    for m in TOKEN.finditer(text):
        word = m.group()
        if not (re.search(r"\d", word) and re.search(r"[A-Za-z]", word)) or ORDINAL.match(word):
            continue
        unit = WITH_UNIT.match(word)
        key = as_text(unit.group(1)) if unit else word.casefold()
        yield m.start(), m.end(), Value("number" if unit else "id", word, (key or word,))


def _numbers(text: str) -> Iterable[tuple[re.Match[str], Value]]:
    for m in NUMBER.finditer(text):
        currency, whole, fraction = m.groups()
        number = float(whole.replace(",", "") + (fraction or ""))
        if currency or fraction or number >= SMALL:
            yield m, Value("number", m.group().strip(), (as_text(number) or whole,))


def _names(text: str) -> Iterable[tuple[re.Match[str], Value]]:
    """Two to four capitalized words in the middle of a sentence (a title may come first)."""
    for m in NAME.finditer(text):
        words = [w for w in re.findall(r"[\w'-]+", m.group()) if w.lower() not in TITLES]
        before = text[: m.start()].rstrip()
        titled = len(words) < len(re.findall(r"[\w'-]+", m.group()))
        if not titled and (not before or before[-1] in ".!?:\n"):
            words = words[1:]  # a sentence's first word is capitalized anyway
        while words and words[0].lower() in NOT_NAMES:
            words = words[1:]
        while words and words[-1].lower() in NOT_NAMES:
            words = words[:-1]
        if len(words) >= 2 - titled:
            yield m, Value("name", " ".join(words), tuple(w.casefold() for w in words))


@dataclass
class KnownValues:
    """What the user may state: the task, the facts and the conversation so far, as texts and as
    value keys (numbers are read leniently here: every run of digits counts)."""

    facts: list[Any] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    keys: set[tuple[str, str]] = field(default_factory=set)

    def add(self, text: str) -> None:
        self.texts.append(text.casefold())
        for value in extract_values(text):
            self.keys.update((value.kind, key) for key in value.keys)
            if value.kind == "date":
                self.keys.update(("date", "--" + key[-5:]) for key in value.keys)
        for number in ANY_NUMBER.findall(text):
            self.keys.add(("number", as_text(number) or number))

    def knows(self, value: Value) -> bool:
        """Whether a source states ``value`` (a fact by ``match_strength``, else by its keys)."""
        if any(match_strength(fact, value.text) for fact in self.facts):
            return True
        if value.kind in ("email", "id"):
            return any(mentions(text, value.keys[0]) for text in self.texts)
        if value.kind == "name":
            return all(any(mentions(text, word) for text in self.texts) for word in value.keys)
        if value.kind == "phone":
            return any(
                _same_phone(value.keys[0], key) for kind, key in self.keys if kind == "phone"
            )
        if value.kind == "date":
            return any(self._knows_date(key) for key in value.keys)
        return any((value.kind, key) in self.keys for key in value.keys)

    def _knows_date(self, key: str) -> bool:
        """The date, or its day and month when the year is known too ("10 Nov" and "2025")."""
        year = key[:4].lstrip("-")
        day = ("date", "--" + key[-5:])
        return ("date", key) in self.keys or (day in self.keys and ("number", year) in self.keys)


def _same_phone(said: str, known: str) -> bool:
    """Equal digits, or one ends with the other (a country code said or left out)."""
    return said == known or (
        min(len(said), len(known)) >= 7 and (said.endswith(known) or known.endswith(said))
    )
