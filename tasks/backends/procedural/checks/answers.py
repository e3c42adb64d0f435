"""Checks of what the agent says: the value an answer scenario asks for, and a refusal.

Both are three-parameter checks (``check(initial_state, final_state, answer)``, DESIGN §3.3): the
answer is the text of the episode's final assistant message. They are plain, policy-clean,
self-contained sources (``re`` only), rendered from a template with their constants inlined.

An answer check must not be forgeable by an agent that does not know the value: besides finding
the expected value (tolerant of formatting: ``1250.5``, ``1,250.50``, ``$1,250.50``; ISO dates or
"March 3, 2025" / "3 Mar 2025"; names and statuses case-insensitively, ``_`` and ``-`` read as
a space; not "03/03/2025", whose day and month are ambiguous), it refuses an answer that states
a competing candidate (another record's value of the same field, every value of an enum field, a
neighbouring count, an unfiltered total) or more than ``MAX_OTHERS`` further values of the same
kind beyond the ones the task itself mentions, or that is longer than ``MAX_CHARS``.

A text value counts as stated only where it is asserted: a mention right after a negation ("not",
"no longer", "n't", "never", "formerly", "previously", "used to be", "instead of", "rather than",
"from", with at most one word between) is not. So "no longer active, now frozen" states frozen and
not active, while "active or frozen" states both and fails. The expected value needs one asserted
mention; every mention of a competitor must be negated. "was" is not a negation here ("the status
was updated to frozen"), so "it was active, now frozen" still fails: say "no longer" or "from".

A refusal check wants a decline, no claim of success, and the reason named by something of this
state the rule's error quotes (:class:`RefusalEvidence`): a rule word alone ("status", "limit")
is what a refuse-everything policy says, so it counts only when the error names nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from envmill.schemas.scenario import CheckSpec

ValueKind = Literal["number", "date", "datetime", "text"]
MAX_OTHERS = 1
MAX_COMPETITORS = 30
MAX_CHARS = 4000  # an answer, not a dump of every record a policy could paste to cover the value

_READERS = r"""
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
"""

_ANSWER_BODY = r"""
HEDGE = re.compile(r"\d[^\d\n]{0,12}?\b(?:or|and/or)\b[^\d\n]{0,12}?\d")
NEGATED = re.compile(
    r"(?:\bnot|\bno longer|n't|\bnever|\bformerly|\bpreviously|\bused to be|\binstead of"
    r"|\brather than|\bfrom)\s+(?:\w+\s+)?$"
)


def asserted(text, value):
    for found in re.finditer(r"(?<!\w)" + re.escape(value) + r"(?!\w)", text):
        if not NEGATED.search(text[max(0, found.start() - 40) : found.start()]):
            return True
    return False


def said(text, value):
    if KIND == "number":
        return any(abs(n - value) < 0.005 for n in numbers(text))
    if KIND == "text":
        return asserted(text, value)
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
    if len(answer) > MAX_CHARS:
        return False
    text = answer.casefold().replace("_", " ")
    if KIND == "text":
        text = text.replace("-", " ")
    elif HEDGE.search(text):  # "1893.41 or 1666.23": two candidates, the old one exempt
        return False
    if not said(text, EXPECTED):
        return False
    if any(said(text, value) for value in COMPETING):
        return False
    return len(others(text)) <= MAX_OTHERS
"""

_REFUSAL_BODY = r"""

def mentions(text, phrase):
    return re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", text) is not None


def names_this_refusal(text):
    if any(mentions(text, value) for value in NAMED):
        return True
    if any(abs(n - v) < 0.005 for n in numbers(text) for v in AMOUNTS):
        return True
    return any(day in DAYS for day in dates(text))


def guesses(text):
    if any(mentions(text, value) for value in RIVALS):
        return True
    extra = [n for n in numbers(text) if not any(abs(n - v) < 0.005 for v in KNOWN)]
    return len(set(extra)) > MAX_OTHER_NUMBERS


def check(initial_state, final_state, answer):
    if not isinstance(answer, str) or not answer.strip():
        return False
    text = answer.casefold().replace("\u2019", "'").replace("_", " ")
    if not any(mentions(text, phrase) for phrase in DECLINES):
        return False
    if any(mentions(text, phrase) for phrase in CLAIMS) or guesses(text):
        return False
    if NAMED or AMOUNTS or DAYS:
        return names_this_refusal(text)
    return not REASONS or any(mentions(text, reason) for reason in REASONS)
"""


@dataclass(frozen=True)
class RefusalEvidence:
    """What a refusal must name to show it read this state: one of ``named`` (the status the
    record has), ``amounts`` (a limit, a balance, a count) or ``days``; ``rivals`` are the other
    values of the named field (a guess), ``known`` further numbers a reply may repeat (the
    request's own)."""

    named: tuple[str, ...] = ()
    amounts: tuple[float, ...] = ()
    days: tuple[str, ...] = ()
    rivals: tuple[str, ...] = ()
    known: tuple[float, ...] = ()


def normalize_expected(value: Any, kind: ValueKind) -> Any:
    """The form the check compares: a float, an ISO date (``T`` + ``HH:MM`` for a date-time),
    or case-folded text with ``_`` read as a space."""
    if kind == "number":
        return round(float(value), 6)
    if kind in ("date", "datetime"):
        text = str(value)
        return text[:10] if kind == "date" else f"{text[:10]}T{text[11:16]}"
    return str(value).casefold().replace("_", " ").replace("-", " ").strip()


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
        "MAX_CHARS": MAX_CHARS,
    }
    header = "".join(f"{name} = {value!r}\n" for name, value in constants.items())
    code = "import re\n\n" + header + _READERS + _ANSWER_BODY
    return CheckSpec(description=description, code=code)


def refusal_check(
    description: str,
    declines: list[str],
    claims: list[str],
    reasons: list[str],
    evidence: RefusalEvidence | None = None,
) -> CheckSpec:
    """A check that the final answer declines (one of ``declines``), claims no success (none of
    ``claims``) and names the reason.

    With ``evidence`` (what the rule's error says of this state: the status the record has, the
    limit or balance, the date), the reason must be one of those, not a rule word that a
    blanket refusal would share with every refusal of the rule ("status", "limit", "only"); a
    reply naming another value of the field (a guessed status) or many other numbers fails.
    Without evidence (the error names nothing of the state), one of ``reasons`` suffices."""
    evidence = evidence or RefusalEvidence()
    constants = {
        "DECLINES": [p.casefold() for p in declines],
        "CLAIMS": [p.casefold() for p in claims],
        "REASONS": [r.casefold().replace("_", " ") for r in reasons],
        "NAMED": [t.casefold().replace("_", " ") for t in evidence.named],
        "AMOUNTS": [round(float(a), 6) for a in evidence.amounts],
        "DAYS": list(evidence.days),
        "RIVALS": [t.casefold().replace("_", " ") for t in evidence.rivals],
        "KNOWN": [round(float(k), 6) for k in [*evidence.amounts, *evidence.known]],
        "MAX_OTHER_NUMBERS": MAX_OTHERS,
    }
    header = "".join(f"{name} = {value!r}\n" for name, value in constants.items())
    return CheckSpec(
        description=description, code="import re\n\n" + header + _READERS + _REFUSAL_BODY
    )


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
