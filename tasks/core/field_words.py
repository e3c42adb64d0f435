"""How a person names a field of a record ("the issue date", not "the issued on").

Shared by every stage that writes English about state: the procedural backend's tasks and the
reference's closing messages, whichever backend wrote the environment. The table is data
(``wording/fields.yaml``); a field it does not list is said by its words.
"""

from __future__ import annotations

import math
import re
from functools import cache

from envmill.tasks.core.status_words import status_lists
from envmill.tasks.core.wording_files import read_wording

MONEY_WORDS = frozenset(
    """amount price fee fees rate cost fare balance total estimate payment deposit income salary
    pay due postage rent premium tip wage budget owed charge charges spent giving credit
    retainer refund earnings deductions value arrears cover fines""".split()
)
# arguments that count the thing the request names: "buy a ticket" is quantity=1
COUNT_NAMES = frozenset({"quantity", "count", "number"})
# names that are sums of money as a whole, though their words are not ("steps_goal" is no sum)
MONEY_NAMES = frozenset({"goal", "raised"})
# words of a name that count something other than money
COUNTED = frozenset(
    """leave days hours copies count heart points credits units seats visits orders km kg gb
    kwh score grade tax interest percent pct""".split()
)
PRICED_RATES = frozenset("hourly nightly daily weekly monthly room base".split())
MONEY_LIMITS = frozenset("coverage credit spending withdrawal loan overdraft".split())
ABBREVIATIONS = {"max": "maximum", "min": "minimum", "qty": "quantity", "num": "number"}


@cache
def field_nouns() -> dict[str, str]:
    """The table of ``fields.yaml``: field name → how a person says it."""
    nouns = read_wording("fields").get("nouns")
    if not isinstance(nouns, dict) or not nouns:
        raise ValueError("wording 'fields': 'nouns' must be a non-empty mapping")
    return {str(k): str(v) for k, v in nouns.items()}


def field_noun(field: str) -> str:
    """The table's words for ``field``, else its words with abbreviations spelled out."""
    nouns = field_nouns()
    if field in nouns:
        return nouns[field]
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", field)
    words = re.sub(r"[_\-\s]+", " ", spaced).strip().lower().split()
    return " ".join(ABBREVIATIONS.get(word, word) for word in words)


def stamped_participle(field: str) -> str | None:
    """The participle a time field stamps ("booked" of ``booked_at``, "paid" of ``paid_on``);
    None for other times (``starts_at``)."""
    found = re.fullmatch(r"([a-z]+)_(?:at|on)", field)
    if not found:
        return None
    stem = found[1]
    return stem if stem.endswith("ed") or stem in status_lists()["irregular"] else None


def spoken_fields(text: str) -> str:
    """``text`` with each field the table names, written as words and used as a noun ("the
    purchased at"), said as a person would ("the purchase time"); the same words elsewhere
    are English ("guests can check in", "only from enrolled") and stay."""
    for said, pattern, noun in _spoken_table():
        if said in text:  # what the pattern needs: most fields are not in a given text
            text = pattern.sub(rf"\1 {noun}", text)
    return text


@cache
def _spoken_table() -> list[tuple[str, re.Pattern[str], str]]:
    """(words, pattern, noun) per field of the table, the longest first (more fields than the
    ``re`` module's cache keeps: compiled once here)."""
    table = sorted(field_nouns().items(), key=lambda item: -len(item[0]))
    rows = []
    for field, noun in table:
        said = field.replace("_", " ")
        pattern = re.compile(rf"\b(the|its|their|your|my) {re.escape(said)}\b")
        rows.append((said, pattern, noun))
    return rows


def is_money_field(field: str) -> bool:
    """A sum of money, by its name: its last word says so ("net_pay", "fines_due", "total")
    and no word says it counts something else ("leave_balance", "copies_total"); a sum per
    unit by the words before "per" ("price_per_kg")."""
    if field in MONEY_NAMES:
        return True
    said = field_noun(field).split()
    said = said[: said.index("per")] if "per" in said[1:] else said
    if len(said) > 1 and said[-1] == "limit" and said[-2] in MONEY_LIMITS:  # "coverage limit"
        return True
    if not said or said[-1] not in MONEY_WORDS or set(said) & COUNTED:
        return False
    return said[-1] != "rate" or bool(set(said) & PRICED_RATES)


def say_money(value: float | int) -> str:
    """ "$1,717.20", "-$12.50", "$64"; a value that is no number of dollars as it is."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    sign = "-" if value < 0 else ""
    amount = abs(value)
    return f"{sign}${amount:,}" if isinstance(amount, int) else f"{sign}${amount:,.2f}"


def singular(noun: str) -> str:
    """ "batches" → "batch", "policies" → "policy", "bookings" → "booking"."""
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    if noun.endswith(("sses", "ches", "shes", "xes")):
        return noun[:-2]
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


def said_apart(field: str, value: object, said: str) -> str | None:
    """How a person tells a record from its namesake by a time, a place or a contact ("on 19
    Apr 2025 at 19:15", "starting 31 Aug 2025", "at 9932 Adkins Road", "in Room 102", "at
    ann@x.org", "by Jo Nash"), not "whose start date is …" (round 41); None for anything else.
    ``said`` is the value as the text says it."""
    if not isinstance(value, str):
        return None
    noun = field_noun(field)
    if "start" in noun and re.match(r"\d{4}-\d{2}-\d{2}", value):
        return f"{'starting' if len(value) == 10 else 'on'} {said}"
    if re.match(r"\d{4}-\d{2}-\d{2}", value) and (joined := JOINED.search(noun)):
        return f"{JOINED_SAID[joined.group(1).lower()]} on {said}"  # "hired on 14 Mar 2018"
    # the ways people tell two Ann Lees apart (round 59: "(the one whose email is …)" read
    # as generated): "the one at ann@x.org", "the one on 555-0100", "the one by Jo Nash"
    if "@" in value and "email" in noun:
        return f"at {said}"
    if "phone" in noun and re.search(r"\d{3}", value):
        return f"on {said}"
    if noun in MADE_BY:
        return f"{MADE_BY[noun]} {said}"
    if field in ADDRESS_FIELDS and re.search(r"\d", value):  # a street address, not an
        return f"at {said}"  # office called "remote" (red team: "the one at remote")
    if re.fullmatch(r"(?:Room|Suite|Hall|Studio) \S+", value):
        return f"in {said}"
    return _where_or_what(noun, value, said)


def _where_or_what(noun: str, value: str, said: str) -> str | None:
    """ "in Dylanmouth", "in cardiology", "in the valley region", "who works as a Coordinator"
    (round 68: "the one whose city is Dylanmouth"; round 69: "the one in valley")."""
    last = noun.split()[-1]
    if last in PLACED_IN and not re.search(r"\d", value):
        return f"in the {said} {last}" if value.islower() and last in AREAS else f"in {said}"
    if noun in WORKS_AS:
        return f"who works as {'an' if said[:1].lower() in 'aeiou' else 'a'} {said}"
    return None


# fields a person tells two namesakes apart by, as "the one in …" and "the one who works as a …"
# (round 68: "the one whose city is Dylanmouth", "(the one whose job title is Coordinator)")
PLACED_IN = frozenset("city town region district zone neighborhood neighbourhood".split())
WORKS_AS = frozenset({"job title", "position", "occupation"})
AREAS = frozenset({"region", "district", "zone"})  # an area named by a word of the business's


JOINED = re.compile(r"\b(hire|join|enrol)", re.I)
JOINED_SAID = {"hire": "hired", "join": "who joined", "enrol": "enrolled"}
MADE_BY = {"author": "by", "artist": "by", "company": "from", "employer": "from"}
ADDRESS_FIELDS = frozenset({"address", "street_address", "site_address", "location", "street"})
