"""Whether a reply asserts a phrase, or a comparison its own figures contradict: word forms
tolerated ("remote" in "remotely", "checked_in" as "checked in"), and a mention right after a
negation not counted ("has not graduated" does not assert "graduated"; "no longer active, now
frozen" asserts frozen and not active)."""

from __future__ import annotations

import re

from envmill.tasks.judge.reading import normalize

SUFFIXES = r"(?:s|es|ed|d|ly|ing|ment)?"
NEGATION = re.compile(
    r"(?:\bnot|\bno longer|n't|\bnever|\bno|\bformerly|\bpreviously|\bused to be|\binstead of"
    r"|\brather than|\bfrom|\bnor|\bneither|\bwithout)\s+(?:\w+\s+)?$"
)


# words that make any statement a guess
HEDGE_ANYWHERE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|likely|presumably|apparently|i think|i believe"
    r"|i guess|i'd guess|i suppose|i'd say|not (?:entirely |completely |totally |100% )?"
    r"(?:sure|certain)|uncertain|unsure|might be|could be|may be|or so|give or take|if i recall"
    r"|as far as i (?:know|can tell)|no idea|don't know|do not know|can't tell|cannot tell"
    r"|unclear|hard to say|correction|actually|i mean|roughly|approximately|i'd estimate"
    r"|i estimate|my guess|i reckon|if not|or was it|no later than|at the latest|at the earliest"
    r"|around (?:noon|midnight)|(?:before|after) (?:noon|midnight)|might not"
    r"|can't say|cannot say|can not say|could(?:n't| not) (?:determine|tell|say|find out)"
    r"|unable to (?:determine|tell|say)|not that i know)\b|[~\u2248]"
)


# a value offered as an alternative ("$2,421.97, or $0", "12 or 14"): two candidates; \u00a7 is
# where a date or time stood
ALTERNATIVE_VALUE = re.compile(r"\bor\s+(?:\w+\s+)?(?:\$?\d|\u00a7)")


def pattern(phrase: str) -> re.Pattern[str] | None:
    """A pattern for ``phrase``'s words in order, each in any common form, ``-``, ``'`` or
    space between ("Rita O'Connor": a breaker found the right name failed); None for a phrase
    with no words."""
    words = re.findall(r"[\w$.,:]+", normalize(str(phrase)).replace("-", " "))
    if not words:
        return None
    parts = [re.escape(w) + (SUFFIXES if w.isalpha() and len(w) > 2 else "") for w in words]
    return re.compile(r"(?<![\w])" + r"[\s'-]+".join(parts) + r"(?![\w])")


def mentions(text: str, phrase: str) -> list[re.Match[str]]:
    found = pattern(phrase)
    return list(found.finditer(text)) if found else []


# "you still need to get checked in", "it will be shipped": what is to come, not what is
NOT_YET = re.compile(
    r"(?:\bneeds?|\bhas yet|\bhave yet|\bwill|\bgoing|\bshould|\bis to|\bare to)"
    r"\s+(?:to\s+)?(?:be|get|become)\s+(?:\w+\s+)?$"
)


def asserts(text: str, phrase: str) -> bool:
    """``text`` (normalized) mentions ``phrase`` at least once as a fact: not right after a
    negation, nor as what is still to come."""
    return any(states(text, m) for m in mentions(text, phrase))


def states(text: str, mention: re.Match[str]) -> bool:
    """This mention is said as a fact: not negated, not what is still to come."""
    start = mention.start()
    return not negated(text, start) and not NOT_YET.search(text[max(0, start - 40) : start])


def denies(text: str, phrase: str) -> bool:
    """``text`` mentions ``phrase`` right after a negation at least once."""
    return any(negated(text, m.start()) for m in mentions(text, phrase))


def negated(text: str, start: int) -> bool:
    return NEGATION.search(text[max(0, start - 48) : start]) is not None


# a figure said to lie on one side of a line: "6 days, above the 8-day limit", "$85.00, below
# the $300 limit" (no "over": "4 bookings over the 30 days" compares nothing)
SIDE_CLAIM = re.compile(
    r"\$?(\d[\d,]*(?:\.\d+)?)\b[^.;!?\d]{0,40}?(?P<not>(?:\bnot|\bno|\bnever|n't)\s+)?"
    r"\b(?P<word>above|more than|greater than|higher than|exceeds|exceeding|below|under|less than"
    r"|fewer than|lower than|short of)\s+(?:(?:the|your|our|their|this|that|[a-z]+'s)\s+){0,2}"
    r"\$?(\d[\d,]*(?:\.\d+)?)"
)
DOWN_WORDS = frozenset({"below", "under", "less than", "fewer than", "lower than", "short of"})


def claimed_wrong_side(reply: str) -> str | None:
    """A comparison the reply gets wrong on its own figures ("6 days, above the 8-day limit, so
    I've declined it"): the branch it claims cannot be the one the numbers pick. A negated one
    says the other side, line included ("6 days, not above the 8-day limit" is true)."""
    for found in SIDE_CLAIM.finditer(reply.lower()):
        said, line = (float(found.group(i).replace(",", "")) for i in (1, 4))
        down = found["word"] in DOWN_WORDS
        if found["not"]:
            wrong = said < line if down else said > line
        else:
            wrong = said >= line if down else said <= line
        if wrong:
            return found.group(0)
    return None
