"""Checks of what the agent says: the value an answer scenario asks for, and a refusal.

Both are three-parameter checks (``check(initial_state, final_state, answer)``, DESIGN §3.3): the
answer is the text of the episode's final assistant message. They are plain, policy-clean,
self-contained sources (``re`` only), rendered from a template with their constants inlined.

An answer check must not be forgeable by an agent that does not know the value: besides finding
the expected value (tolerant of formatting: ``1250.5``, ``1,250.50``, ``$1,250.50``; ISO dates or
"March 3, 2025" / "3 Mar 2025"; names and statuses case-insensitively, ``_`` read as a space),
it refuses an answer that states a competing candidate (another record's value of the same
field, a neighbouring count, an unfiltered total) or more than ``MAX_OTHERS`` further values of
the same kind beyond the ones the task itself mentions.
"""

from __future__ import annotations

from typing import Any, Literal

from envmill.schemas.scenario import CheckSpec

ValueKind = Literal["number", "date", "datetime", "text"]
MAX_OTHERS = 1
MAX_COMPETITORS = 30

_ANSWER_BODY = r"""
MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}
MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
ISO = r"(\d{4})-(\d{2})-(\d{2})"
DAY_FIRST = r"(\d{1,2})(?:st|nd|rd|th)?\s+" + MONTH + r",?\s+(\d{4})"
MONTH_FIRST = MONTH + r"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})"
NUMBER = r"(?<![\w.\-/:])\$?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w/:\-]|\.\d)"
CLOCK = r"(?<![\w:])(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?(?![\w:])"


def dates(text):
    found = []
    for y, m, d in re.findall(ISO, text):
        found.append((int(y), int(m), int(d)))
    for d, m, y in re.findall(DAY_FIRST, text):
        found.append((int(y), MONTHS[m], int(d)))
    for m, d, y in re.findall(MONTH_FIRST, text):
        found.append((int(y), MONTHS[m], int(d)))
    return ["%04d-%02d-%02d" % day for day in found]


def without_dates(text):
    for pattern in (ISO + r"(?:[t ]\d{2}:\d{2}(?::\d{2})?)?", DAY_FIRST, MONTH_FIRST):
        text = re.sub(pattern, " ", text)
    return text


def clocks(text):
    found = ["%s:%s" % pair for pair in re.findall(r"\d{4}-\d{2}-\d{2}[t ](\d{2}):(\d{2})", text)]
    for hour, minute, half in re.findall(CLOCK, without_dates(text)):
        if not minute and not half:
            continue
        hour = int(hour) % 12 + (12 if half.startswith("p") else 0) if half else int(hour)
        found.append("%02d:%s" % (hour, minute or "00"))
    return found


def numbers(text):
    text = re.sub(r"(?<![\w:])\d{1,2}:\d{2}(?::\d{2})?(?![\w:])", " ", without_dates(text))
    found = re.findall(NUMBER, text)
    return [float(whole.replace(",", "") + (part or "")) for whole, part in found]


def said(text, value):
    if KIND == "number":
        return any(abs(n - value) < 0.005 for n in numbers(text))
    if KIND == "text":
        return re.search(r"(?<!\w)" + re.escape(value) + r"(?!\w)", text) is not None
    day, _, clock = value.partition("T")
    return day in dates(text) and (not clock or clock in clocks(text))


def others(text):
    if KIND == "text":
        return []
    values = numbers(text) if KIND == "number" else dates(text)
    known = [EXPECTED if KIND == "number" else EXPECTED.partition("T")[0]] + EXEMPT
    extra = []
    for value in values:
        if not any(near(value, k) for k in known + extra):
            extra.append(value)
    return extra


def near(a, b):
    if KIND == "number":
        return abs(a - b) < 0.005
    return a == b


def check(initial_state, final_state, answer):
    if not isinstance(answer, str) or not answer.strip():
        return False
    text = answer.casefold().replace("_", " ")
    if not said(text, EXPECTED):
        return False
    if any(said(text, value) for value in COMPETING):
        return False
    return len(others(text)) <= MAX_OTHERS
"""

_REFUSAL_TEMPLATE = """\
import re

DECLINES = {declines!r}
CLAIMS = {claims!r}
REASONS = {reasons!r}


def mentions(text, phrase):
    return re.search(r"(?<!\\w)" + re.escape(phrase) + r"(?!\\w)", text) is not None


def check(initial_state, final_state, answer):
    if not isinstance(answer, str) or not answer.strip():
        return False
    text = answer.casefold().replace("\\u2019", "'").replace("_", " ")
    if not any(mentions(text, phrase) for phrase in DECLINES):
        return False
    if any(mentions(text, phrase) for phrase in CLAIMS):
        return False
    return not REASONS or any(mentions(text, reason) for reason in REASONS)
"""


def normalize_expected(value: Any, kind: ValueKind) -> Any:
    """The form the check compares: a float, an ISO date (``T`` + ``HH:MM`` for a date-time),
    or case-folded text with ``_`` read as a space."""
    if kind == "number":
        return round(float(value), 6)
    if kind in ("date", "datetime"):
        text = str(value)
        return text[:10] if kind == "date" else f"{text[:10]}T{text[11:16]}"
    return str(value).casefold().replace("_", " ").strip()


def answer_check(
    description: str,
    expected: Any,
    kind: ValueKind,
    *,
    competing: list[Any] = (),  # type: ignore[assignment]
    exempt: list[Any] = (),  # type: ignore[assignment]
) -> CheckSpec:
    """A check that the final answer states ``expected`` and no competing value.

    Args:
        description: what the check verifies, for readers and repair turns.
        expected: the true value (a number, an ISO date or date-time, a text).
        kind: how to read it in the answer.
        competing: other candidates an agent might guess (refused when stated).
        exempt: values the answer may state besides (numbers or dates the task itself names).
    """
    target = normalize_expected(expected, kind)
    rivals = _distinct([normalize_expected(v, kind) for v in competing], target, kind)
    allowed = _distinct([normalize_expected(v, kind) for v in exempt], target, kind)
    if kind in ("date", "datetime"):
        rivals = [r for r in _distinct([r[:10] for r in rivals], target[:10], "date")]
        allowed = [a[:10] for a in allowed]
    constants = {
        "KIND": kind,
        "EXPECTED": target,
        "COMPETING": rivals[:MAX_COMPETITORS],
        "EXEMPT": allowed,
        "MAX_OTHERS": MAX_OTHERS,
    }
    header = "".join(f"{name} = {value!r}\n" for name, value in constants.items())
    code = "import re\n\n" + header + _ANSWER_BODY
    return CheckSpec(description=description, code=code)


def refusal_check(
    description: str, declines: list[str], claims: list[str], reasons: list[str]
) -> CheckSpec:
    """A check that the final answer declines (one of ``declines``), claims no success (none of
    ``claims``) and names the reason (one of ``reasons``, when any)."""
    code = _REFUSAL_TEMPLATE.format(
        declines=[p.casefold() for p in declines],
        claims=[p.casefold() for p in claims],
        reasons=[r.casefold().replace("_", " ") for r in reasons],
    )
    return CheckSpec(description=description, code=code)


def _distinct(values: list[Any], target: Any, kind: ValueKind) -> list[Any]:
    """Values other than ``target`` (numbers compared within a cent, text as whole words that
    neither holds nor is held by the target), each once, in order."""
    out: list[Any] = []
    for value in values:
        if value in out or value == "" or _overlaps(value, target, kind):
            continue
        out.append(value)
    return out


def _overlaps(value: Any, target: Any, kind: ValueKind) -> bool:
    if kind == "number":
        return abs(value - target) < 0.005
    if kind == "text":
        return value in target or target in value
    return value == target
