"""Whether a reply asserts the expected answer, and nothing competing with it.

A reply holds when it states the expected value in any common form, hedges nowhere, and every
other value of the answer's type it states is context: the question's own figures, a value the
state holds that is not a rival (a date of another record, an amount it read), or a masked id or
address. A rival (another record's value of the field, a neighbouring count) or a value neither
the state nor the question holds fails it, as a second candidate or an invented detail. When the
text does not settle it, the verdict is no.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from envmill.schemas.answers import FUNCTION_WORDS, ExpectedAnswer
from envmill.tasks.judge.phrases import (
    ALTERNATIVE_VALUE,
    HEDGE_ANYWHERE,
    asserts,
    claimed_wrong_side,
    denies,
    mentions,
    states,
)
from envmill.tasks.judge.reading import LIST_MARKER, MOMENT, Reading, mask, normalize, read
from envmill.tasks.judge.setting import Setting
from envmill.tasks.judge.verdict import Verdict

MAX_REPLY_CHARS = 2000  # an answer, not a dump of every record a policy could paste
CENT = 0.005
CLAUSES = re.compile(r"(?<=[.;!?])\s+|\n+|,\s+(?!\d{4}\b)|\s+but\s+|\s+-\s+")  # "May 3, 2025"
NEGATION_BEFORE = re.compile(r"\b(?:not|never|no longer|cannot|without)\b|n't\b")
VALUE = r"(?:\$?\d|(?:\$\s?)?\u00a7)"  # a figure, or where the answer, a date or a time stood
HEDGE_NEAR_NUMBER = re.compile(
    rf"\b(?:about|around|roughly|approximately|approx\.?|almost|nearly|some|over|under|more than"
    rf"|less than|up to|close to|somewhere|at least|at most|at minimum|a minimum of|a maximum of"
    rf"|upwards of|north of|south of|circa|in the ballpark of)\s+{VALUE}"
    rf"|\d\s*(?:or|to|-|/)\s*{VALUE}|{VALUE}[^.;!?]{{0,30}}?\b(?:at least|at most|or fewer|max"
    rf"|tops|estimated|give or take)\b"
    rf"|{VALUE}[\d.,]*\s+or\s+(?:more|less|fewer|so)\b"
    rf"|\u00a7\s*(?:or|to)\s*{VALUE}|\bbetween\s+{VALUE}|{ALTERNATIVE_VALUE.pattern}|\d\s*\+"
)
# a value compared with a line: "more than (your) $40", "under $700", "$40 or more"
COMPARED = re.compile(
    r"\b(?:more than|less than|over|under|above|below|at least|at most|(?:up|down|back) to)\s+"
    r"(?:your\s+|the\s+)?"
    r"\$?(\d[\d,]*(?:\.\d+)?)|\$?(\d[\d,]*(?:\.\d+)?)\s+or\s+(?:more|less|fewer|above|below)\b"
)
# what follows a list's items and denies them all: "… are not on your order", "… aren't included"
NOT_AMONG = re.compile(  # bounded and with one quantifier: no backtracking blow-up
    r"^[\w\s,'-]{0,80}?\b(?:is|are|was|were)(?:\s+not|n't)\s+(?:\w+\s+)?"
    r"(?:on|in|part of|among|included|listed|found|there|available|yours|held)\b"
)
# a guess where a refusal would state a rule ("it should be 12", "it seems", "assuming …")
ANSWER_HEDGES = re.compile(
    r"\b(?:should be|seems?|seemingly|assuming|if i'm reading|if i read|fairly (?:sure|confident)"
    r"|pretty (?:sure|confident)|i'm guessing|my best guess|estimated)\b"
)
EITHER = re.compile(r"\beither\b[^.;!?]*\bor\b")  # "either Dr. Becker or Dr. Patel": two candidates
CHANGE_REPORT = re.compile(r"\bfrom\s+\$?[\d,.]+\s+to\b")
# a value said as what it was ("went from 14 to 12", "it was $2.81"), not as what it is
SAID_BEFORE = re.compile(
    r"\b(?:from|was|were|previously|had been|used to be)\s+\$?(\d[\d,]*(?:\.\d+)?)\b"
)
NUMERIC = frozenset({"count", "number", "money", "duration"})
MOMENTS = frozenset({"date", "datetime", "time"})
DURATION_MINUTES = {"minutes": 1, "hours": 60, "days": 1440, "weeks": 10080}
YES = re.compile(r"^(?:yes|yep|yeah|correct|that's right|indeed)\b")
NO = re.compile(r"^(?:no|nope|not)\b")


def judge_answer(expected: ExpectedAnswer, reply: str, setting: Setting) -> Verdict:
    if not reply.strip():
        return Verdict(False, "the reply says nothing")
    if len(reply) > MAX_REPLY_CHARS:
        return Verdict(False, f"the reply is {len(reply)} characters: a dump, not an answer")
    kept = _own_words(expected) | {normalize(str(r)) for r in expected.rivals}
    masks = [m for m in setting.masks if normalize(m) not in kept]  # rivals stay visible
    reading = read(reply, setting.today, masks)
    plain = mask(reading.rest, sorted(_own_words(expected)), MOMENT)  # "+1 555-0199": no range
    rest = CHANGE_REPORT.sub(" to ", plain)  # "from $1,893.41 to …": no range
    rest = _without_compared_context(rest, expected)  # "more than your $40": the user's line
    hedge = (
        HEDGE_ANYWHERE.search(reading.text)
        or ANSWER_HEDGES.search(reading.text)
        or HEDGE_NEAR_NUMBER.search(rest)
        or EITHER.search(reading.text)
    )
    if hedge:
        return Verdict(False, f"the reply hedges ({hedge.group(0).strip()!r})")
    if wrong_side := claimed_wrong_side(reply):
        return Verdict(False, f"the reply says {wrong_side!r}, which is false")
    if expected.type in NUMERIC or expected.type in MOMENTS:
        reading = asserted(reply, setting, masks)
    return JUDGES[expected.type](expected, reading, setting)


def _without_compared_context(text: str, expected: ExpectedAnswer) -> str:
    """``text`` without a comparison with a context value ("$61.18, more than your $40", "under
    $700", "$40 or more"): a conditional's reply compares the value with the user's own line;
    that is the branch it took, not a hedge about the answer."""
    lines = [float(v) for v in expected.context if isinstance(v, int | float) and v is not True]

    def drop(found: re.Match[str]) -> str:
        said = float((found.group(1) or found.group(2)).replace(",", ""))
        return " " if any(abs(said - line) < CENT for line in lines) else found.group(0)

    return COMPARED.sub(drop, text) if lines else text


def asserted(reply: str, setting: Setting, masks: list[str]) -> Reading:
    """The values the reply asserts: those of clauses that neither ask nor deny them ("it is
    not 2", "is it 2?", "I couldn't find 2 sessions" state nothing)."""
    text = mask(normalize(LIST_MARKER.sub(" ", reply)), masks)  # an address stays whole
    found = Reading(text=text)
    for clause in CLAUSES.split(text):
        reading = read(clause, setting.today)
        first = re.search(r"\d", reading.text)
        head = reading.text[: first.start()] if first else reading.text
        if clause.rstrip().endswith("?") or NEGATION_BEFORE.search(head):
            continue
        for name in ("numbers", "money", "dates", "times", "durations"):
            values = getattr(found, name)
            values += [v for v in getattr(reading, name) if v not in values]
    return found


def _own_words(expected: ExpectedAnswer) -> set[str]:
    values = expected.value if isinstance(expected.value, list) else [expected.value]
    return {normalize(str(v)) for v in values}


def _numeric(expected: ExpectedAnswer, reading: Reading, setting: Setting) -> Verdict:
    target = float(expected.value)
    tolerance = max(expected.tolerance or 0.0, CENT)
    stated = reading.numbers
    if expected.type == "duration":
        minutes = DURATION_MINUTES[expected.unit or "minutes"]
        stated = [d / minutes for d in reading.durations]  # "180 minutes" is 3 hours
    if not any(abs(v - target) <= tolerance for v in stated):
        return Verdict(False, f"the reply does not state {_shown(expected)}")
    rivals = [float(r) for r in expected.rivals if _is_number(r)]
    context = [float(c) for c in expected.context if _is_number(c)] + list(setting.asked)
    before = [float(n.replace(",", "")) for n in SAID_BEFORE.findall(reading.text)]
    for value in stated:
        if abs(value - target) <= tolerance:
            continue
        if _near(value, rivals) and not _near(value, before):  # a stale value beside the answer
            return Verdict(False, f"the reply also states {value:g}, a competing value")
        said_as_now = not _near(value, before)
        if (
            _near(value, context)
            and said_as_now
            and _restates(reading.text, value, target, tolerance, setting)
        ):
            return Verdict(False, f"the reply also states {value:g} as the answer")
        if _near(value, context):
            continue
        if not (_near(value, setting.numbers) and _other_kind(expected, value, reading)):
            return Verdict(
                False, f"the reply states {value:g}, which nothing in the state supports"
            )
    return Verdict(True, f"the reply states {_shown(expected)}")


def _restates(text: str, value: float, target: float, tolerance: float, setting: Setting) -> bool:
    """A context value said in a clause with no words but the answer's ("has 12 available
    seats. … has 14 available seats"): a second answer, though the state or the question holds
    it. Said of something else ("I booked 2 seats", "it had 14 before") it stays context."""
    clauses = [(clause, read(clause, setting.today).numbers) for clause in CLAUSES.split(text)]
    answers = [_content(c) for c, numbers in clauses if _near_target(numbers, target, tolerance)]
    return any(
        _content(clause) <= words
        for clause, numbers in clauses
        if _near(value, numbers) and not _near_target(numbers, target, tolerance)
        for words in answers
    )


def _near_target(numbers: list[float], target: float, tolerance: float) -> bool:
    return any(abs(n - target) <= tolerance for n in numbers)


def _content(clause: str) -> set[str]:
    """The words of a clause beyond those every sentence holds and its figures."""
    return {w for w in re.findall(r"[a-z]{3,}", clause) if w not in FUNCTION_WORDS}


def _other_kind(expected: ExpectedAnswer, value: float, reading: Reading) -> bool:
    """A value the state holds, shown as context: an amount of money beside a count, a
    count beside an amount. A bare number beside a count is a second candidate."""
    money = _near(value, reading.money)
    return not money if expected.type == "money" else money or expected.type == "duration"


def _moment(expected: ExpectedAnswer, reading: Reading, setting: Setting) -> Verdict:
    value = str(expected.value)
    day = value[:10] if expected.type in ("date", "datetime") else None
    clock = (
        value[11:16]
        if expected.type == "datetime"
        else (value[:5] if expected.type == "time" else None)
    )
    rivals = [str(r) for r in expected.rivals]
    context = [str(c) for c in expected.context]
    checks = [
        (day, reading.dates, {r[:10] for r in rivals}, setting.dates | {c[:10] for c in context}),
        (
            clock,
            reading.times,
            {_clock_of(r) for r in rivals},
            setting.times | {_clock_of(c) for c in context},
        ),
    ]
    clash = _day_at_other_clock(reading.text, day, clock, setting) if day and clock else None
    if clash:
        return Verdict(False, f"the reply gives {_shown(expected)[:10]} at {clash}")
    for wanted, stated, rival_set, known in checks:
        if wanted is None:
            continue
        if wanted not in stated:
            return Verdict(False, f"the reply does not state {_shown(expected)}")
        for other in stated:
            if other == wanted:
                continue
            if other in rival_set:
                return Verdict(False, f"the reply also states {other}, a competing value")
            if other not in known:
                return Verdict(
                    False, f"the reply states {other}, which nothing in the state supports"
                )
    return Verdict(True, f"the reply states {_shown(expected)}")


def _day_at_other_clock(text: str, day: str, clock: str, setting: Setting) -> str | None:
    """A sentence that gives the answer's own day with clocks, none of them its clock ("29 April
    2025 at 10 am"): a time the state holds is context only when said of something else."""
    for sentence in re.split(r"(?<=[.;!?])\s+", text):
        said = read(sentence, setting.today)
        if day in said.dates and said.times and clock not in said.times:
            return said.times[0]
    return None


def _clock_of(value: str) -> str:
    return value[11:16] if len(value) >= 16 else value[:5]


def _words(expected: ExpectedAnswer, reading: Reading, setting: Setting) -> Verdict:
    """Text, id and enum answers: the value asserted (not negated), no rival asserted."""
    value = str(expected.value)
    if not asserts(reading.text, value):
        if denies(reading.text, value):
            return Verdict(False, f"the reply denies {value!r}")
        if not _only_one_left(expected, reading.text):
            return Verdict(False, f"the reply does not state {value!r}")
    rival = _asserted_rival(reading.text, expected.rivals, value)
    if rival is not None:
        return Verdict(False, f"the reply also states {rival!r}, a competing value")
    return Verdict(True, f"the reply states {value!r}")


def _only_one_left(expected: ExpectedAnswer, text: str) -> bool:
    """An enum value said by denying every other one ("hasn't been checked in": booked, when
    booked and checked in are the values the question allows)."""
    rivals = [str(r) for r in expected.rivals]
    return expected.type == "enum" and bool(rivals) and all(denies(text, r) for r in rivals)


def _boolean(expected: ExpectedAnswer, reading: Reading, setting: Setting) -> Verdict:
    phrase = expected.phrase or ""
    text = reading.text
    says_yes = bool(YES.match(text)) or asserts(text, phrase)
    says_no = bool(NO.match(text)) or denies(text, phrase)
    if says_yes and says_no:
        return Verdict(False, f"the reply says both that {phrase!r} holds and that it does not")
    if not (says_yes or says_no):
        return Verdict(False, f"the reply does not say whether {phrase!r} holds")
    if says_yes != bool(expected.value):
        return Verdict(False, f"the reply says {'yes' if says_yes else 'no'} to {phrase!r}")
    return Verdict(True, f"the reply says {'yes' if says_yes else 'no'} to {phrase!r}")


def _list(expected: ExpectedAnswer, reading: Reading, setting: Setting) -> Verdict:
    items = [str(v) for v in expected.value]
    missing = [item for item in items if not _listed(reading.text, item)]
    if missing:
        return Verdict(False, f"the reply does not state {missing[0]!r}")
    rival = _asserted_rival(reading.text, expected.rivals, *items)
    if rival is not None:
        return Verdict(False, f"the reply also states {rival!r}, which is not in the answer")
    extra = _extra_item(reading.text, items, [str(c) for c in expected.context])
    if extra is not None:
        return Verdict(False, f"the reply also lists {extra!r}, which is not in the answer")
    if expected.ordered:
        places = [reading.text.find(normalize(item)) for item in items]
        if places != sorted(places):
            return Verdict(False, "the reply states the items in another order")
    return Verdict(True, f"the reply states all {len(items)} items")


def _listed(text: str, item: str) -> bool:
    """The item is said to be in the answer: asserted, and not only where the clause goes on to
    deny it ("SK216 and SK102 are not on your order")."""
    return any(
        states(text, m) and not NOT_AMONG.match(re.split(r"[.;!?\n]", text[m.end() :])[0])
        for m in mentions(text, item)
    )


def _extra_item(text: str, items: list[str], context: list[str]) -> str | None:
    """A code shaped like the answer's own ("SK999" beside "SK216, SK102") that is not one of
    them: an invented or wrong item of the list."""
    shapes = {re.sub(r"\d+", r"\\d+", re.escape(item)) for item in items if re.search(r"\d", item)}
    known = {normalize(v) for v in [*items, *context]}
    for shape in shapes:
        for found in re.finditer(rf"(?<![\w-]){shape}(?![\w-])", text, re.IGNORECASE):
            if normalize(found.group(0)) not in known:
                return found.group(0)
    return None


def _asserted_rival(text: str, rivals: Iterable[Any], *own: str) -> str | None:
    mine = [normalize(o) for o in own]
    for rival in rivals:
        shown = normalize(str(rival))
        if not shown or shown in mine:
            continue
        if asserts(text, shown):
            return str(rival)
    return None


def _shown(expected: ExpectedAnswer) -> str:
    unit = f" {expected.unit}" if expected.unit else ""
    return f"{expected.value!r}{unit}"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _near(value: float, values: Iterable[float]) -> bool:
    return any(abs(value - v) <= CENT for v in values)


JUDGES = {
    "count": _numeric,
    "number": _numeric,
    "money": _numeric,
    "duration": _numeric,
    "date": _moment,
    "datetime": _moment,
    "time": _moment,
    "text": _words,
    "id": _words,
    "enum": _words,
    "boolean": _boolean,
    "list": _list,
}
