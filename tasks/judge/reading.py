"""What values a reply states, in any common form: numbers in words or figures, money, dates,
times and durations. The judge compares values, never spellings.

Spelled numbers become figures through ``text2num`` ("twenty-one" → 21, "fifteen hundred" →
1500); the rest are patterns of the forms people write ("17 September 2025", "Sept 17",
"2025-09-17", "7 pm", "19:00", "noon", "tomorrow" against the scenario's ``current_time``).
Context the reply quotes (an id, an address, a phone number) is masked first, so its digits are
not read as answers.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date, timedelta

from text_to_num import alpha2digit

MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(?:[a-z]*)\.?"
ORDINAL = r"(?:st|nd|rd|th)?"
MOMENT = " \u00a7 "  # where a date or time stood: a value for the hedge patterns, no digits
TIME_ZONE = re.compile(r"(?<=\d{2}:\d{2}:\d{2})(?:z|[+-]\d{2}:?\d{2})|\butc\b")
ISO_MOMENT = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[t ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?)?")
DAY_FIRST = re.compile(rf"\b(\d{{1,2}}){ORDINAL}(?:\s+of)?\s+{MONTH}(?:,?\s+(\d{{4}}))?")
MONTH_FIRST = re.compile(rf"\b{MONTH}\s+(\d{{1,2}}){ORDINAL}\b(?:,?\s+(\d{{4}}))?")
SCALES = {"million": 1_000_000, "thousand": 1000}
RELATIVE_DAYS = {
    "today": 0,
    "tomorrow": 1,
    "yesterday": -1,
    "the day after tomorrow": 2,
    "the day before yesterday": -2,
}
NUMERIC_DATE = re.compile(r"\b(\d{1,2})([./])(\d{1,2})\2(\d{4})\b")
RELATIVE = re.compile(
    r"\b(the day after tomorrow|the day before yesterday|today|tomorrow|yesterday)\b"
)
CLOCK = re.compile(
    r"(?<![\w:.$,])(\d{1,2})(?:(:|\.)(\d{2})(?::\d{2})?)?\s*(a\.?m\.?|p\.?m\.?|o'clock|h\b)?"
    r"(?![\w:]|\.\d)"
)
NAMED_TIMES = {"noon": (12, 0), "midday": (12, 0), "midnight": (0, 0)}
DURATION_UNITS = {
    "second": 1 / 60, "sec": 1 / 60, "minute": 1, "min": 1, "hour": 60, "hr": 60,
    "day": 1440, "week": 10080, "month": 43200, "year": 525600,
}  # fmt: skip
DURATION = re.compile(
    r"(\d+(?:\.\d+)?)[\s-]*(seconds?|secs?|minutes?|mins?|hours?|hrs?|h|days?|weeks?|months?"
    r"|years?)\b"
)
SPOKEN_DURATIONS = {"half an hour": 30.0, "a half hour": 30.0, "an hour": 60.0, "a day": 1440.0,
                    "a week": 10080.0}  # fmt: skip
UNIT_SUFFIX = re.compile(r"(\d)(h|hrs?|mins?|usd|d|days?)\b")  # "3h", "$25usd": a space
SCALE = re.compile(r"(\d+(?:\.\d+)?)\s*(million|thousand)\b")
LIST_MARKER = re.compile(r"(?m)^\s*(?:\d{1,2}[.)]|[-*\u2022])\s+")  # "1. ", "- ", "• "
MONEY_WORDS = r"(?:dollars?|usd|bucks)"
# a figure, not the digits of a code ("acc-0012", "r2-d2") nor an ordinal ("3rd")
NUMBER = re.compile(
    r"(?<![\w.])(?<![a-z]-)(?<!-)(\$?\s?)(\d{1,3}(?:,\d{3})+|\d{1,15})(\.\d+)?(k\b)?"
    r"(?![\w]|\.\d|-[a-z]|st\b|nd\b|rd\b|th\b)"
)
# "one of them", "no one", "the one": words, not counts
NOT_COUNTS = re.compile(
    r"(?<![-\w])one(?=\s+(?:of|another|more|by)\b)|\b(?:no|the|any|this|that|which|first|second|third"
    r"|last|other|each|every|latest|newest|oldest) one\b"
)
# "none", "zero", and "no" before a plural noun ("no open tickets"); not "No, …" or "No worries"
ZERO = re.compile(
    r"\b(?:none|zero)\b(?!\s+(?:longer|more|one|,|\.))(?=\s+[a-z]+s\b|\s*[.,;!]|$)"
    r"|\bno\b(?!\s+(?:longer|more|worries|problems|issues|thanks|doubts|questions|plans)\b)"
    r"(?=\s+[a-z]+s\b)"
)
SINGLE = re.compile(r"\b(?:a single|just one|only one|exactly one)\b")
# "two thousand, seven hundred and thirty-nine": one number, its comma no break
SCALE_COMMA = re.compile(
    r"\b(thousand|million|billion),\s+(?=(?:one|two|three|four|five|six|seven|eight|nine|ten"
    r"|eleven|twelve|\w+teen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)\b)"
)
HYPHENATED_UNIT = re.compile(
    r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|fourteen|thirty)-"
    r"(?=(?:day|week|hour|minute|month|year|night|loan|item)s?\b)"
)
DAY_PARTS = {"morning": "am", "afternoon": "pm", "evening": "pm"}
DAY_PART = re.compile(r"\b(\d{1,2}(?::\d{2})?)\s+in the (morning|afternoon|evening)\b")
SLASHED_ISO = re.compile(r"\b(\d{4})/(\d{2})/(\d{2})\b")
# "the last four digits", "first 6 characters": how much of a code is shown, not a value
DIGITS_SHOWN = re.compile(
    r"\b(last|first|final|trailing|leading)\s+(?:\w+|\d+)\s+(digits|characters|letters|numbers)\b"
)


@dataclass
class Reading:
    """The values a reply states, each once, in order: ``numbers`` as floats (money and
    counts alike: a money value also sits in ``money``), ``dates`` as ISO days, ``times`` as
    ``HH:MM``, ``durations`` in minutes; ``text`` is the reply normalized, masks applied."""

    text: str
    rest: str = ""  # the text without its dates and times, where a hedge is looked for
    numbers: list[float] = field(default_factory=list)
    money: list[float] = field(default_factory=list)
    dates: list[str] = field(default_factory=list)
    times: list[str] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    # a form whose day depends on ``today`` was met ("tomorrow", a day without its year), read
    # or not: a reading made without a day differs from one with a day only in such a text
    dated: bool = False


@functools.lru_cache(maxsize=8192)  # the same state values are read for every reply judged
def normalize(text: str) -> str:
    """Case-folded, typographic quotes and dashes made plain, ``_`` read as a space, a spelled
    number's commas dropped."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("\u2212", "-")
    for fancy, plain in (("\u2019", "'"), ("\u2018", "'"), ("\u201c", '"'), ("\u201d", '"')):
        text = text.replace(fancy, plain)
    text = re.sub(r"[\u2010-\u2015]", "-", text).replace("_", " ")
    text = SCALE_COMMA.sub(r"\1 ", text)
    return re.sub(r"[^\S\n]+", " ", text).strip()  # lines kept: a list's items are clauses


def mask(text: str, phrases: list[str], token: str = " # ") -> str:
    """``text`` with every normalized phrase of ``phrases`` (longest first) replaced by
    ``token``: blanked out, or kept as a value without its digits (``MOMENT``)."""
    for phrase in sorted({normalize(p) for p in phrases if p}, key=len, reverse=True):
        if len(phrase) >= 3 and phrase in text:  # most are not there: no pattern to run
            text = re.sub(rf"(?<!\w){re.escape(phrase)}(?!\w)", token, text)
    return text


def read(reply: str, today: date | None = None, context: list[str] = ()) -> Reading:  # type: ignore[assignment]
    """Every value ``reply`` states, ``context`` phrases masked first; relative days
    ("tomorrow") count from ``today`` when it is known."""
    text = plain_forms(mask(normalize(LIST_MARKER.sub(" ", reply)), list(context)))
    text = SCALE.sub(lambda m: f"{float(m.group(1)) * SCALES[m.group(2)]:.2f}", text)
    text = UNIT_SUFFIX.sub(r"\1 \2", spelled_as_figures(text))
    reading = Reading(text=text)
    text = reading.rest = _take_moments(text, reading, today)
    text = _take_durations(text, reading)
    for match in NUMBER.finditer(text):
        value = number_of(match)
        _add(reading.numbers, value)
        tail = text[match.end() : match.end() + 9]
        if "$" in match.group(0) or re.match(rf"\s*{MONEY_WORDS}", tail):
            _add(reading.money, value)
    return reading


def plain_forms(text: str) -> str:
    """Forms people write, as the patterns read them: "30-day" is "30 day", "2:30 in the
    afternoon" is "2:30 pm", "2025/09/23" is "2025-09-23"."""
    text = HYPHENATED_UNIT.sub(r"\1 ", text)
    text = DAY_PART.sub(lambda m: f"{m.group(1)} {DAY_PARTS[m.group(2)]}", text)
    return SLASHED_ISO.sub(r"\1-\2-\3", text)


# "end their trip or maintenance first": an adverb at the end of a clause, no ordinal (a
# default run's refusal read as the hedge "or maintenance 1st"); "the first" stays one
ADVERB_FIRST = re.compile(
    r"(\b(?:the|my|your|its|their|our|his|her)\s+)?\bfirst(?=\s*(?:[.;,!?)]|$))"
)


def spelled_as_figures(text: str) -> str:
    """Spelled numbers as figures ("two" → "2", "a single" → "1", "none" → "0")."""
    text = DIGITS_SHOWN.sub(r"\1 \2", text)
    text = ADVERB_FIRST.sub(lambda m: m.group() if m.group(1) else "beforehand", text)
    text = NOT_COUNTS.sub("a-certain", text)
    text = SINGLE.sub("1", text)
    text = ZERO.sub("0", text)
    return alpha2digit(text, "en", threshold=0)


def _take_moments(text: str, reading: Reading, today: date | None) -> str:
    """Dates and times into ``reading``; the text without them (their digits are not numbers)."""

    def iso(match: re.Match[str]) -> str:
        year, month, day, hour, minute = match.groups()
        _add(reading.dates, _iso_day(int(year), int(month), int(day)))
        if hour is not None:
            _add(reading.times, f"{int(hour):02d}:{minute}")
        return MOMENT

    text = ISO_MOMENT.sub(iso, TIME_ZONE.sub(" ", text))
    text = NUMERIC_DATE.sub(lambda m: _numeric_date(reading, m), text)
    text = DAY_FIRST.sub(lambda m: _day(reading, m.group(3), m.group(2), m.group(1), today), text)
    text = MONTH_FIRST.sub(lambda m: _day(reading, m.group(3), m.group(1), m.group(2), today), text)
    relative = RELATIVE.findall(text)
    reading.dated = reading.dated or bool(relative)
    if today is not None:
        for word in relative:
            _add(reading.dates, (today + timedelta(days=RELATIVE_DAYS[word])).isoformat())
    for word, (hour, minute) in NAMED_TIMES.items():
        if re.search(rf"\b{word}\b", text):
            _add(reading.times, f"{hour:02d}:{minute:02d}")
    return CLOCK.sub(lambda m: _clock(reading, m), text)


def _day(reading: Reading, year: str | None, month: str, day: str, today: date | None) -> str:
    """A day by its month's name; without a year, the one nearest today ("January 5" said in
    December is next January's)."""
    reading.dated = reading.dated or not year
    if year:
        iso = _iso_day(int(year), MONTHS[month[:3]], int(day))
    elif today is not None:
        near = [_iso_day(today.year + shift, MONTHS[month[:3]], int(day)) for shift in (0, 1, -1)]
        days = [d for d in near if d]
        iso = min(days, key=lambda d: abs(date.fromisoformat(d) - today), default="")
    else:
        iso = ""
    if iso:
        _add(reading.dates, iso)
    return MOMENT


def _numeric_date(reading: Reading, match: re.Match[str]) -> str:
    """ "17.09.2025", "09/17/2025", "29/04/2025": whichever number cannot be a month is the
    day; one whose day and month could swap ("03/04/2025") states no date, and still is no
    number."""
    first, separator, second, year = match.groups()
    day, month = (int(first), int(second)) if separator == "." else (int(second), int(first))
    if int(first) > 12 or int(second) > 12:  # "29/04/2025": only one reading is a date
        day, month = max(int(first), int(second)), min(int(first), int(second))
    elif first != second:
        return MOMENT
    iso = _iso_day(int(year), month, day)
    if iso:
        _add(reading.dates, iso)
    return MOMENT


def _iso_day(year: int, month: int, day: int) -> str:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return ""


def _clock(reading: Reading, match: re.Match[str]) -> str:
    """A time of day when the words make it one ("7 pm", "19:00", "7.30 am"); a bare number
    stays a number."""
    hour_text, separator, minute, half = match.groups()
    hour = int(hour_text)
    if (minute is None or separator == ".") and half is None:
        return match.group(0)  # "7", "13.00": numbers, not times
    if half == "h" and (minute is None and not 13 <= hour <= 23):
        return match.group(0)  # "3 h": three hours; "19h": a time of day
    if half and half.startswith(("a", "p")):
        if not 1 <= hour <= 12:
            return match.group(0)
        hour = hour % 12 + (12 if half.startswith("p") else 0)
    if hour > 23 or (minute is not None and int(minute) > 59):
        return match.group(0)
    _add(reading.times, f"{hour:02d}:{minute or '00'}")
    return MOMENT


def _take_durations(text: str, reading: Reading) -> str:
    def minutes(match: re.Match[str]) -> str:
        unit = {"hrs": "hr", "mins": "min", "secs": "sec", "h": "hr"}.get(match.group(2))
        unit = unit or match.group(2).removesuffix("s")
        _add(reading.durations, float(match.group(1)) * DURATION_UNITS[unit])
        return match.group(0)  # still a number too ("3 days": a count of days)

    for words, value in SPOKEN_DURATIONS.items():
        if re.search(rf"\b{words}\b", text):
            _add(reading.durations, value)
    return DURATION.sub(minutes, text)


def number_of(match: re.Match[str]) -> float:
    """The value a ``NUMBER`` match states ("1,500.00", "$3", "1.5k")."""
    _, whole, part, thousands = match.groups()
    value = float(whole.replace(",", "") + (part or ""))
    return value * 1000 if thousands else value


def _add(values: list, value) -> None:  # type: ignore[type-arg]
    if value != "" and value not in values:
        values.append(value)
