"""How the reference agent says what it is about to change, in the tool's own words.

A confirmation or a note built from a tool's name reads as code ("hand to network SHP-6",
"make deposit ACC-1"). Every tool's description opens with what it does, as an instruction
("Dispatch a booked shipment that holds at least one parcel."), so the agent says that clause
with the records it acts on put in: "dispatch shipment SHP-6", "deposit $300.00 into account
ACC-1", "record that employee Hannah Stewart (EMP-3) has left".
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from envmill.schemas.scenario import SolutionStep
from envmill.tasks.certify.grounding import Sight
from envmill.tasks.core.facts import (
    PURPOSES,
    a_or_an,
    as_purpose,
    join_words,
    said_moment,
    say_value,
)
from envmill.tasks.core.field_words import field_noun, is_money_field, say_money, singular
from envmill.tasks.core.instructions import (
    ARTICLES,
    MODIFIER,
    first_sentence,
    tool_clause,
)

MAX_DETAILS = 4  # values a change sets, said after it (the fourth is often its price)
MAX_REACH = 6  # words past the clause the agent reads on to find a record's noun
# verbs that set a value: "raise the salary to $80,000.00"
SETTING_VERBS = frozenset(
    {"change", "update", "set", "raise", "lower", "revise", "adjust", "reprice", "edit", "move"}
)
LABEL_FIELDS = ("name", "full_name", "title", "display_name")
NUMBER_FIELDS = ("number", "flight_number", "plate", "code")
YOU = "\0you"  # the label of the signed-in person's own record: "for you", "your address"
PREPOSITIONS = r"(?:for|to|from|with|of|by|on|at|into)"
ROLE_PREFIXES = frozenset({"to", "from", "new", "receiving", "sending", "source", "target"})
MAX_SAID = 40  # characters of a value worth saying back; a longer note is not read out
MAX_MONEY = 1e9


def say_action(
    step: SolutionStep,
    description: str,
    sight: Sight,
    shown: list[dict[str, Any]],
    made: frozenset[str] = frozenset(),
    records: dict[str, dict[str, Any]] | None = None,
) -> str:
    """The change ``step`` makes, as the agent says it: the tool's clause with each record it
    names (once the agent has seen its id) in place of "a shipment", the amount in place of
    "money", the new value a setting tool sets, and a few other values it sets; a record an
    earlier change of the same request ``made`` is "the new farmer". ``records`` (id ->
    record, as the state holds it) say what a record is called."""
    seen = [
        (k, v) for k, v in step.arguments.items() if sight.grounds(k, v) and not isinstance(v, bool)
    ]
    clause = tool_clause(step.tool, description)
    named = {rid: (records or {}).get(rid) for _, rid in seen if isinstance(rid, str)}
    labels = {
        rid: _label(rid, k, shown, sight, named.get(rid)) for k, rid in seen if k.endswith("_id")
    }
    you = next((named.get(rid) for rid, label in labels.items() if label == YOU), None)
    yours = {v for k, v in (you or {}).items() if k in LABEL_FIELDS and isinstance(v, str)}
    # "register a vehicle (plate …, Toyota)" to Cindy Parsons, never "(…, owner Cindy
    # Parsons, …)" said to her face (round 56), signed in or "My name is …" (a breaker's)
    seen = [
        (k, v)
        for k, v in seen
        if not (k.endswith("name") and (v in yours or _introduced(sight, v)))
    ]
    clause = _with_records(clause, description, step, seen, labels, made)
    acted = next((rid for k, rid in seen if k.endswith("_id") and isinstance(rid, str)), None)
    ids_only = all(k.endswith("_id") for k in step.arguments)  # a call that sets nothing, so
    # the record reads as it did before it ("cancelled booking BKG-6 (economy, $298.00)")
    if acted is not None and ids_only and labels.get(acted) is None:
        clause = described(clause, acted, what_it_is(named.get(acted), sight))
    return _with_values(clause, seen)


def _introduced(sight: Sight, name: Any) -> bool:
    """The user said they are ``name`` ("My name is Benjamin Cole", "I'm Ann Lee")."""
    if not isinstance(name, str) or not name.strip():
        return False
    said = re.compile(rf"\b(?:my name is|i'm|i am|this is) {re.escape(name.casefold())}\b")
    return any(said.search(text) for text in sight.heard)


def described(clause: str, rid: str, about: str | None) -> str:
    """ "withdrawn application APP-2 (personal, $5,000.00)": a record with no name said with
    what it is, once (round 44 to 48: "I've dropped enrolment EN-9" named nothing the user
    knows it by)."""
    if not about or f"{rid} (" in clause or f"{rid})" in clause:
        return clause
    return re.sub(rf"(?<![\w-]){re.escape(rid)}(?![\w-])", f"{rid} ({about})", clause, count=1)


def what_it_is(record: dict[str, Any] | None, sight: Sight) -> str | None:
    """What a record with no name is, from what the agent has seen of it: its kind and its
    sum or its start ("vacation, from 12 Jun 2025"; "personal, $5,000.00")."""
    if not isinstance(record, dict):
        return None
    kinds = [
        _words_of(v)
        for k, v in record.items()
        if (k in KIND_FIELDS or k.endswith("_type"))
        and isinstance(v, str)
        and KIND_WORD.fullmatch(_words_of(v))
        and sight.sees(v)
    ]
    sums = [
        say_money(v)
        for k, v in record.items()
        if is_money_field(k) and _amount(v) and sight.sees(v) and not k.endswith(NOT_SUMS)
    ]
    starts = [
        f"from {said_moment(v)}"
        for k, v in record.items()
        if k in START_FIELDS and isinstance(v, str) and said_moment(v) and sight.sees(v)
    ]
    parts = [*kinds[:1], *(sums or starts)[:1]]
    return ", ".join(parts) if len(parts) == 2 else None


def _words_of(value: str) -> str:
    return value.replace("_", " ")


def _amount(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < MAX_MONEY


KIND_FIELDS = frozenset({"kind", "type", "category", "product", "plan", "leave_type", "cabin"})
START_FIELDS = frozenset({"start_date", "starts_on", "starts_at", "start", "date"})
NOT_SUMS = ("balance", "paid", "due", "credit", "limit")


def _with_records(
    clause: str,
    description: str,
    step: SolutionStep,
    seen: list,
    labels: dict[Any, str | None],
    made: frozenset[str],
) -> str:
    sentence = first_sentence(description)
    sentence = sentence[:1].lower() + sentence[1:]
    ids = [(k, v) for k, v in seen if k.endswith("_id") and isinstance(v, str)]
    for name, _ in ids:
        clause = _read_on(clause, sentence, _record_pattern(name))
    # the records the clause has a noun for first, then the rest after it: never "… of Linen
    # Throw Pillow (PR-6) (Jacqueline Krueger, CU-11)" (round 27)
    ids.sort(key=lambda pair: not re.search(_record_pattern(pair[0]), clause))
    for name, value in ids:
        label = labels.get(value)
        # a record the same request made was named with its id when it was said made: "for
        # Jennifer Johnson", not "… as customer C-7. I've opened … for Jennifer Johnson (C-7)"
        again = value in made and label not in (None, YOU)
        clause = _held(clause, name, value, label) or _put_record(
            clause, name, value, label, with_id=not again
        )
    for name, value in step.arguments.items():  # made by an earlier change the agent named
        if name.endswith("_id") and value in made and (name, value) not in ids:
            clause = _put_created(clause, name)
    given = [v for k, v in seen if k in LABEL_FIELDS and isinstance(v, str) and v.strip()]
    if (
        given
    ):  # a new record: "admit a farmer, Ann Lee, as …"; "open a new matter, Delgado Custody,"
        clause = _put_new(clause, given[0].strip())
    return clause


def _with_values(clause: str, seen: list) -> str:
    """The clause with the values the change sets: "to $80,000.00" after the field a setting
    verb names, the amount for "money", the rest in brackets. A value too long, too large or
    not a single value (a list) is not read back."""
    verb, extras, set_to = clause.split(" ")[0], [], False
    seen = [(k, v) for k, v in seen if _sayable(k, v)]
    clause = _counted(_in_place(clause, seen), seen)
    for name, value in seen:
        money = isinstance(value, int | float) and is_money_field(name)
        field = re.escape(name.split("_")[-1])
        setting = verb in SETTING_VERBS and not set_to and name not in LABEL_FIELDS
        other = re.search(rf"\banother {field}\b", clause)  # "to another tariff"
        if setting and not name.endswith("_id") and other:
            said = say_field_value(name, value)
            clause, set_to = (
                f"{clause[: other.start()]}the {said} {field}{clause[other.end() :]}",
                True,
            )
        elif setting and not name.endswith("_id") and re.search(rf"\b{field}\b", clause):
            clause, set_to = clause + f" to {say_field_value(name, value)}", True
        elif money and MONEY_WORD.search(clause):  # "add $400.00 to your wallet"
            clause = MONEY_WORD.sub(lambda m, v=value: _money_word(m, v), clause, count=1)
        elif money and MONEY_NOUN.search(clause):  # "take a $300.00 payment", not "(…: $300.00)"
            clause = MONEY_NOUN.sub(lambda m, v=value: _money_noun(m, v), clause, count=1)
        elif money:
            extras.append(_money_detail(name, value))
    if not set_to:  # what else the change sets: "(destination city …)"
        extras += [_detail(k, v) for k, v in seen if _is_detail(k, v, clause)]
    clause, extras = _kinds_in_place(clause, extras[:MAX_DETAILS])
    clause, extras = _units_in_place(clause, extras)
    # "on 8 May 2025 at 17:00", "for a follow-up visit" go on the sentence, the rest in brackets
    joined = _one_with([e for e in extras if e.startswith(JOINED)])
    clause = " ".join([clause, *joined]) if joined else clause
    said = ", ".join(e for e in extras if not e.startswith(JOINED))
    if not said:
        return clause
    bracketed = clause.endswith(")") or "(" in said  # no ") (", no "((284)469-3872)"
    return f"{clause}: {said}" if bracketed else f"{clause} ({said})"


def _one_with(joined: list[str]) -> list[str]:
    """ "with an annual premium of $1,080.00 and a coverage limit of $60,000.00", never "with
    … with …" (round 44)."""
    withs = [e.removeprefix("with ") for e in joined if e.startswith("with ")]
    if len(withs) < 2:
        return joined
    first = next(i for i, e in enumerate(joined) if e.startswith("with "))
    rest = [e for e in joined if not e.startswith("with ")]
    return [*rest[:first], f"with {join_words(withs)}", *rest[first:]]


def _money_word(found: re.Match[str], value: float) -> str:
    """ "add funds" → "add $400.00"; "pay out cash" → "pay out $376.29 in cash"."""
    said = say_money(value)
    return f"{said} in cash" if found.group().casefold() == "cash" else said


def _money_noun(found: re.Match[str], value: float) -> str:
    """ "a payment" → "a $300.00 payment"; "a payment" of $80 → "an $80.00 payment"."""
    said = say_money(value)
    owner = a_or_an(said) if found.group(1) in ("a", "an") else found.group(1)
    return f"{owner} {said} {found.group(2)}"


def _money_detail(name: str, value: float) -> str:
    """A sum the clause has no noun for, on the sentence (rounds 38–39: "add funds to your
    wallet ($400.00)", "(…): price $55.00" read as a form): "for $55.00", "at $44.99 a month",
    "with a fee of $6.00"."""
    noun, said = field_noun(name), say_money(value)
    per = PER.get(noun.split()[0])
    if per:
        return f"at {said} {per}"
    if noun.split()[-1] in PLAIN_SUMS:
        return f"for {said}"
    return f"with {a_or_an(noun)} {noun} of {said}"


def _kinds_in_place(clause: str, extras: list[str]) -> tuple[str, list[str]]:
    """A kind said where the clause names its noun: "open a new empty savings account",
    "sell a premium membership plan", never "… (C-7): savings account" (round 38); a cabin or
    a plan the clause has no noun for goes on the sentence ("in business cabin")."""
    kept = []
    for extra in extras:
        words = extra.split(" ")
        kind, head = " ".join(words[:-1]), words[-1]  # "proof of address" document
        several = (
            3 <= len(words) <= 4 and SORT_WORDS.fullmatch(kind) and not extra.startswith(JOINED)
        )
        found = re.search(
            rf"\b(an?|the|your|their|my)\s+((?:new\s+)?(?:empty\s+)?)(?:[a-z]+\s+)?{re.escape(head)}\b",
            clause,
        )
        if len(words) == 1 and KIND_WORD.fullmatch(extra):
            placed = _kind_before_noun(clause, extra)
            if placed is not None:
                clause = placed
                continue
        if (len(words) == 2 and KIND_WORD.fullmatch(kind) or several) and found:
            article = (
                a_or_an(kind) if found.group(1) in ("a", "an") and not found.group(2) else None
            )
            before = clause[: found.start(1)] + (article or found.group(1)) + " " + found.group(2)
            clause = f"{before}{kind} {clause[found.end(2) :]}"
        elif len(words) == 2 and head in PLACED_KINDS:
            kept.append(f"{PLACED_KINDS[head]} {extra}")
        else:
            kept.append(extra)
    return clause, kept


def _kind_before_noun(clause: str, kind: str) -> str | None:
    """ "issue a one-year auto policy", "record a quarterly pledge": a kind of one word goes
    before the first noun the clause acts on, never "… (auto)" after the sentence (round 53)."""
    found = re.search(
        r"\b(an?|the|your|their|my)\s+((?:new\s+|[a-z]+-[a-z]+\s+)*)([a-z]+)"
        r"(?=\s+(?:to|for|of|on|in|at|from|with|into)\b|$)",
        clause,
    )  # a noun phrase of one noun: not "a graded harvest lot" ("a strawberries graded …")
    if found is None or found.group(3) in QUALIFIER_STOPS or found.group(3) == kind:
        return None
    article = found.group(1)
    if article in ("a", "an") and not found.group(2):
        article = a_or_an(kind)
    start, end = found.start(1), found.start(3)
    return f"{clause[:start]}{article} {found.group(2)}{kind} {clause[end:]}"


def _units_in_place(clause: str, extras: list[str]) -> tuple[str, list[str]]:
    """A quantity said as a count of the thing: "sell 4 tickets", "an order for 2 units of
    Oak Wall Shelf", never "… for you (4 units)" (rounds 38–39)."""
    kept = []
    for extra in extras:
        count = re.fullmatch(r"(\d+) units?", extra)
        if count is None:
            kept.append(extra)
            continue
        n = int(count.group(1))
        words = clause.split(" ")
        # the plural the verb acts on, maybe after two words that qualify it: "sell tickets",
        # "add newly purchased copies" (a default run: "copies of 9 units of …")
        at = next(  # a plain plural after plain words: not "a member's bookings"
            (
                i
                for i in (1, 2, 3)
                if i < len(words)
                and re.fullmatch(r"[a-z]+[a-rtv-z]s", words[i])
                and not any(w in QUALIFIER_STOPS or "'" in w for w in words[1:i])
            ),
            None,
        )
        plural = at is not None and words[at] != "units" and words[at] != singular(words[at])
        named = re.search(r"\b(?:for|of) (?=[A-Z])", clause)
        if plural and at is not None:
            noun = singular(words[at]) if n == 1 else words[at]
            clause = " ".join([words[0], str(n), *words[1:at], noun, *words[at + 1 :]])
        elif named:
            clause = f"{clause[: named.end()]}{extra} of {clause[named.end() :]}"
        else:
            kept.append(f"for {extra}")
    return clause, kept


def _in_place(clause: str, seen: list) -> str:
    """Values put where the clause has their indefinite noun: "a report of a problem at an
    address" with the address given is "… at 115 Pruitt Fork", not "at an address (address
    115 Pruitt Fork)" (round 23)."""
    for name, value in seen:
        if name.endswith("_id") or name in LABEL_FIELDS or not isinstance(value, str):
            continue
        noun = re.escape(field_noun(name))
        found = re.search(rf"\b(?:at|to|in|on|for)\s+(an?\s+{noun})\b(?!')", clause)
        if found:
            said = say_field_value(name, value)
            clause = clause[: found.start(1)] + said + clause[found.end(1) :]
    return clause


def _counted(clause: str, seen: list) -> str:
    """A count said before its noun and the words that qualify it: "book 3 seats", "credit 9
    extra leave days", "sell a pack of 50 booking credits" (rounds 33 and 37)."""
    for name, value in seen:
        noun = field_noun(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            continue
        if " " in noun or not noun.endswith("s"):  # a plural of one word: "seats", "days"
            continue
        words = clause.split(" ")
        at = next((i for i, w in enumerate(words) if w == noun), 0)
        if at == 0:  # not there, or the verb itself
            continue
        if value == 1:
            words[at] = noun.removesuffix("s")
        if words[at - 1] == "some":
            del words[at - 1]
            at -= 1
        start = at
        while start > 1 and words[start - 1].casefold() not in QUALIFIER_STOPS:
            start -= 1  # back over "extra leave", "booking"; never past the verb
        clause = " ".join([*words[:start], str(value), *words[start:]])
    return clause


def _sayable(name: str, value: Any) -> bool:
    """One short value: not a list or a record, not a 40 KB note, not $1e300."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    if isinstance(value, str):
        return 0 < len(value.strip()) <= MAX_SAID and "\n" not in value
    return abs(value) < MAX_MONEY


def _is_detail(name: str, value: Any, clause: str) -> bool:
    """A value the change sets that the clause does not say yet: not an id, a name, money or
    a flag."""
    if name.endswith("_id") or name in LABEL_FIELDS or isinstance(value, bool | dict | list):
        return False
    if isinstance(value, int | float) and is_money_field(name):
        return False
    said = re.escape(say_field_value(name, value))
    return not re.search(rf"(?<![\w.,-]){said}(?![\w]|[.,]\d)", clause)  # 3 is not in SK330


def _detail(name: str, value: Any) -> str:
    """ "5 nights", "destination city Plymouth", "on 30 Sep 2025 at 14:00", "for a follow-up
    visit": as a person writes it, never a form's label before its value ("start time 8 May
    2025 at 17:00, reason review of test results", round 31)."""
    noun, said = field_noun(name), say_field_value(name, value)
    if not isinstance(value, str):
        return _number_detail(noun, said, value)
    if ISO_DAY.match(value):  # "on 8 May 2025 at 17:00", "until 3 Jun 2025", "due 22 Mar 2025"
        when = "due" if DUE.search(name) else "until" if ENDING.search(name) else "on"
        return f"{when} {said}"
    if noun in PURPOSES:  # "for a follow-up visit", "for new symptoms", "for a review of …"
        return f"for {as_purpose(said)}"
    if noun in BY_NOUNS:  # "by direct debit", not "method direct debit"
        return f"by {said}"
    sort = noun.rsplit(" ", 1)
    if len(sort) == 2 and sort[1] in SORTS and SORT_WORDS.fullmatch(said):
        return f"{said} {sort[0]}"  # "sick leave", "proof of address document"
    if KIND_WORD.fullmatch(said) and noun in KIND_NOUNS:
        # "premium cabin", "high priority": never "cabin premium", nor "servicing service"
        return said if said[:4] == noun[:4] else f"{said} {noun}"
    if noun in SORTS or noun in VALUE_SAYS or (noun in BRANDS and said[:1].isupper()):
        return said  # "a court order" deduction, a "Honda": the value says what it is
    owner = re.fullmatch(r"(\w+) name", noun)  # "owner Christopher Santana"
    return f"{owner.group(1)} {said}" if owner and said[:1].isupper() else f"{noun} {said}"


def _number_detail(noun: str, said: str, value: float) -> str:
    """ "4 units", "3 nights", "14 km", "178,695 miles"; else "planned quantity 2367"."""
    if noun == "quantity" and isinstance(value, int):  # "4 units", not "quantity 4"
        return f"{said} unit{'' if value == 1 else 's'}"
    if isinstance(value, int) and noun.endswith("s") and " " not in noun:
        return f"{said} {noun.removesuffix('s') if value == 1 else noun}"
    unit = re.fullmatch(r"[a-z ]+ in (\w+)", noun)  # "distance in km" -> "14 km"
    if unit:
        return f"{said} {unit.group(1)}"
    if noun in UNIT_NOUNS:  # "178,695 miles", not "mileage 178695"
        return f"{value:,} {UNIT_NOUNS[noun]}"
    return f"{noun} {said}"


ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}")
MONEY_NOUN = re.compile(
    r"\b(an?|your|their|my) ((?:[a-z]+ )?(?:payment|deposit|refund|top-up|withdrawal|donation|tip"
    r"|instalment|pledge|gift|charge))\b"
)
MONEY_WORD = re.compile(r"\b(?:money|funds|cash)\b")
PLAIN_SUMS = frozenset({"amount", "price", "total", "cost", "sum"})
# kinds that go on the sentence when the clause has no noun for them
PLACED_KINDS = {"cabin": "in the", "class": "in", "plan": "on the", "tier": "on the"}
QUALIFIER_STOPS = frozenset(
    "a an the my your their its on of to for from in at by with into".split()
)
PER = {"monthly": "a month", "weekly": "a week", "nightly": "a night", "hourly": "an hour"}
ENDING = re.compile(r"(?:^|_)(?:end|ends|until|expiry|expires)(?:_|$)")
DUE = re.compile(r"(?:^|_)due(?:_|$)")
JOINED = ("on ", "until ", "due ", "for ", "at ", "with ", "in ", "by ")
SORTS = frozenset({"kind", "type", "category"})
# nouns whose value says what it is: "(home)" of a policy's product, "(strawberries)" of a crop
VALUE_SAYS = frozenset({"product", "crop", "frequency"})
BY_NOUNS = frozenset({"method", "payment method"})
UNIT_NOUNS = {"mileage": "miles"}
SORT_WORDS = re.compile(r"[a-z]+(?:[ -][a-z]+){0,2}")  # "proof of address"
BRANDS = frozenset({"make", "brand", "manufacturer"})


# a value that names a kind, said before its noun: one or two lower-case words, of a noun
# that names a kind ("honda make" is no one's English)
KIND_WORD = re.compile(r"[a-z]+(?:[ -][a-z]+)?")
KIND_NOUNS = frozenset(
    "cabin priority service plan category tier class level size type region district period "
    "grade program department".split()
)


def _record_pattern(argument: str) -> str:
    """An indefinite mention of the noun an id argument names: "an active account", "a
    client's", "a customer account"."""
    noun = re.escape(argument.removesuffix("_id").split("_")[-1])
    return (
        rf"\b{ARTICLES}\s+(?:{MODIFIER}\s+){{0,2}}?{noun}(?:('s)|\s+(?:account|record|profile))?\b"
    )


def _read_on(clause: str, sentence: str, pattern: str) -> str:
    """The clause read on into its sentence up to a mention of the record when it stops short
    of one ("book an appointment for a patient" + " with a doctor")."""
    if re.search(pattern, clause) or not sentence.startswith(clause):
        return clause
    later = re.search(pattern, sentence[len(clause) :])
    reach = sentence[len(clause) : len(clause) + later.end()] if later else ""
    return clause + reach if later and len(reach.split()) <= MAX_REACH else clause


def _put_record(
    clause: str, argument: str, rid: str, label: str | None, *, with_id: bool = True
) -> str:
    """The clause with its first indefinite mention of the record's noun ("an active account",
    "another", "a client's") made this record; else the record said after it. A named record
    goes without its id when the reply has said it already (``with_id``)."""
    words = argument.removesuffix("_id").split("_")
    if not words[-1].isalpha() or not rid.strip():  # "_id", "1_id", an id of spaces
        return clause
    kind = " ".join(w for w in words if w not in ROLE_PREFIXES) or words[-1]
    named = (f"{label} ({rid})" if with_id else label) if label else f"{kind} {rid}"
    if rid in clause:
        return clause
    found = re.search(_record_pattern(argument), clause)
    you = label == YOU
    if you:  # "for you", "your wallet", "take you off shift"; never "change you ships from"
        said = _as_you(clause, found) if found else None
        if said is not None:
            return said
        named, label = f"{kind} {rid}", None
    if found:
        owner = f"{label}'s" if label and found.group(1) else f"{named}{found.group(1) or ''}"
        return clause[: found.start()] + owner + clause[found.end() :]
    other = re.search(r"\banother\b", clause)
    if other:
        return clause[: other.start()] + named + clause[other.end() :]
    bare = re.match(rf"(\w+ ){re.escape(words[-1])}$", clause)  # the tool's words: "cancel booking"
    if bare:
        return f"{bare.group(1)}{named}"
    if not you and clause.count(" ") >= 2 and not clause.endswith(")"):
        return f"{clause} ({label}, {rid})" if label and with_id else f"{clause} ({named})"
    if you or clause.count(" ") < 2:  # who else would a signed-in person book for? "…,
        return clause  # for you" read as tacked on (round 53)
    return f"{clause}, for {named}"


def _held(clause: str, argument: str, rid: str, label: str | None) -> str | None:
    """ "resume a paused membership" of a member: "resume Jane Calderon's paused membership",
    never "… membership (Jane Calderon, CW-0003)" (round 57); None where that is not it."""
    noun = argument.removesuffix("_id").split("_")[-1]
    if re.search(_record_pattern(argument), clause) or not noun.isalpha():
        return None
    held = re.search(rf"\b{ARTICLES}\s+((?:{MODIFIER}\s+){{0,2}}?{noun}ship)\b", clause)
    if held is None:
        return None
    whose = "your" if label == YOU else f"{label or f'{noun} {rid}'}'s"
    return f"{clause[: held.start()]}{whose} {held.group(1)}{clause[held.end() :]}"


def _as_you(clause: str, found: re.Match[str]) -> str | None:
    """The signed-in person's record said as "you" or "your" where the clause names it as an
    object or an owner; None where it is another part of the sentence."""
    before, after = clause[: found.start()], clause[found.end() :]
    field_of = re.search(r"\bthe ((?:[a-z]+ ){0,2}[a-z]+) of $", before)
    if field_of:  # "change your email address", never "the email address of you" (round 39)
        return f"{before[: field_of.start()]}your {field_of.group(1)}{after}"
    after_word = re.search(rf"\b{PREPOSITIONS}\s+$", before)
    # the verb's object ("take a courier off shift"), not a subject ("the address a sender
    # ships from")
    object_of_verb = re.fullmatch(r"\w+ ", before) and not re.match(r"\s+\w+s\b", after)
    if found.group(1) or after_word or object_of_verb:
        return before + ("your" if found.group(1) else "you") + after
    return None


def _put_created(clause: str, argument: str) -> str:
    """ "… from the new farmer": a record whose id the agent has not seen yet is the one an
    earlier change of the same request makes."""
    noun = argument.removesuffix("_id").split("_")[-1]
    found = re.search(_record_pattern(argument), clause)
    if found is None or found.group().startswith("the "):
        return clause
    owner = f"the new {noun}{found.group(1) or ''}"
    return clause[: found.start()] + owner + clause[found.end() :]


def _put_new(clause: str, label: str) -> str:
    """The clause with the new record's name after its first indefinite mention."""
    word = r"(?!(?:as|to|for|from|of|in|into|on|with|at|by)\b)[a-z-]+"
    found = re.search(rf"\b(?:a|an)\s+(?:{word}\s+){{0,2}}{word}\b", clause)
    if found is None or label in clause:
        return clause
    after = clause[found.end() :]
    if re.search(r"(?:account|profile|record)$", found.group()):  # "a passenger profile for Jo"
        whom = re.match(r"\s+for\s+(?:a|an)\s+[a-z-]+\b", after)  # not "… for Jo for a resident"
        return f"{clause[: found.end()]} for {label}{after[whom.end() :] if whom else after}"
    return f"{clause[: found.end()]}, {label}" + (f",{after}" if after.strip() else "")


def _label(
    rid: str, argument: str, shown: list[Any], sight: Sight, own: dict[str, Any] | None
) -> str | None:
    """A person's or a thing's name for the record ("Ann Lee", "room 402"; ``YOU`` for the
    signed-in person the session showed), once the agent has seen it; else None. ``own`` is
    the record as the state holds it; without it, a shown record that is plainly this one."""
    records = records_in(shown)
    if any(record.get("acting_id") == rid for record in records):
        return YOU
    noun = argument.removesuffix("_id").split("_")[-1]
    plainly = [  # its own id and no other: not the employee whose manager it is
        r for r in records if r.get(f"{noun}_id") == rid and sum(k.endswith("_id") for k in r) == 1
    ]
    for record in [own] if own is not None else plainly:
        for field in (*LABEL_FIELDS, *NUMBER_FIELDS):
            value = record.get(field)
            if not isinstance(value, str) or not value.strip() or not sight.sees(value):
                continue
            said = " ".join(value.split())
            if len(said) <= MAX_SAID:  # "room 402", "flight SK513"
                named = said if field in LABEL_FIELDS else f"{noun} {said}"
                return named + _route(record, sight)
    return None


def _route(record: dict[str, Any], sight: Sight) -> str:
    """ " from SEA to SFO on 10 September 2025 at 16:45": which flight, as a passenger checks
    it before saying yes (round 54: "book 3 seats on flight SK447" of a flight the user had
    only named by where it goes)."""
    ends = [record.get("origin"), record.get("destination")]
    if not all(isinstance(end, str) and sight.sees(end) for end in ends):
        return ""
    leaves = next((v for k, v in record.items() if k.startswith("depart")), None)
    when = said_moment(leaves) if isinstance(leaves, str) and sight.sees(leaves) else None
    return f" from {ends[0]} to {ends[1]}" + (f" on {when}" if when else "")


def records_in(values: list[Any]) -> list[dict[str, Any]]:
    """Every record (a dict) the values hold, nested ones too."""
    found: list[dict[str, Any]] = []
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.append(value)
            stack += list(value.values())
        elif isinstance(value, list):
            stack += value
    return found


def say_field_value(field: str, value: Any) -> str:
    """A value as the agent writes it: "$1,250.50", "do not contact", "5 May 2025"."""
    if isinstance(value, int | float) and not isinstance(value, bool) and is_money_field(field):
        return say_money(value)
    text = say_value(value)
    return text.replace("_", " ") if re.fullmatch(r"[a-z]+(?:_[a-z]+)+", text) else text


def cost_before_yes(
    changes: list[tuple[SolutionStep, Any]],
    seen: list[Any],
    known_ids: set[str],
    descriptions: dict[str, str] | None = None,
) -> str:
    """What a booking will cost, said before the user's yes where a record the agent read
    shows the price it is made from: "The total will be $90.00 (2 × $45.00)." A yes to a purchase
    whose price was never said left the user blind (rounds 44, 49 and 50). Said only when the
    record the call makes holds that sum, so a cabin's surcharge is never misquoted, or when
    the price is by the night (or hour, day …) and the call says how many. A multiplier counts
    where the tool's description states it ("times 2.5 in business", round 53)."""
    for index, (step, result) in enumerate(changes):
        made = [r for r in records_in([result]) if _ids_of(r) - known_ids]
        if not made:
            continue
        ids = {str(a) for a in step.arguments.values()}
        quoted = [(k, v) for r in records_in(seen) if _ids_of(r) & ids for k, v in r.items()]
        prices = [round(v, 2) for k, v in quoted if _amount(v) and v > 0 and _is_unit_price(k)]
        # a rate read before an earlier change of the same yes may be stale: the new record's
        # sum alone is sure
        factors = _factors_in((descriptions or {}).get(step.tool, ""))
        said = _total_of(made, prices, step, factors) or ("" if index else _per_unit(quoted, step))
        if said:
            return said
    return ""


def _total_of(
    made: list[dict[str, Any]], prices: list[float], step: SolutionStep, factors: list[float]
) -> str:
    """ "The total will be $90.00 (2 × $45.00). ": a sum the new record holds, made of a price
    seen and, where more than one, a count the call gives, maybe times a stated multiplier."""
    counts = [1] + [n for n in step.arguments.values() if isinstance(n, int) and 1 < n <= 99]
    for field, total in [
        (k, v) for r in made for k, v in r.items() if _amount(v) and _is_charge(k)
    ]:
        said = f"The {field_noun(field)} will be {say_money(total)}"
        for price, times, factor in itertools.product(prices, counts, [1.0, *factors]):
            if abs(total - price * times * factor) < 0.005:
                parts = [str(times)] if times > 1 else []
                parts += [say_money(price)] + ([f"{factor:g}"] if factor != 1 else [])
                return f"{said} ({' × '.join(parts)}). " if len(parts) > 1 else f"{said}. "
    return ""


FACTOR = re.compile(r"(?:\btimes|×)\s*(\d+(?:\.\d+)?)\b|\b(\d+(?:\.\d+)?)\s*(?:times\b|×)")


def _factors_in(description: str) -> list[float]:
    """The multipliers a tool's description states, each beside its "times": "times 1.6 in
    premium and times 2.5 in business" gives 1.6 and 2.5; "Bookings close 5 hours before"
    gives none (a breaker's "$109.00 × 5")."""
    found = FACTOR.findall(description)
    return [float(a or b) for a, b in found if 1 < float(a or b) <= 10]


def _per_unit(quoted: list[tuple[str, Any]], step: SolutionStep) -> str:
    """ "The nightly rate is $109.00, so 6 nights come to $654.00. ": a price by the night
    that the record made may not hold (a stay is billed at check-out)."""
    rates = {
        (field, round(float(price), 2))
        for field, price in quoted
        if PER_UNIT.get(field_noun(field).split()[0]) and _amount(price) and price > 0
    }
    if len(rates) != 1:  # two rooms of one hotel read: which rate is this one's? Say none
        return ""
    ((field, price),) = rates
    unit = PER_UNIT[field_noun(field).split()[0]]
    count = step.arguments.get(f"{unit}s")
    if not isinstance(count, int) or isinstance(count, bool) or not 0 < count <= 366:
        return ""
    units = f"{count} {unit}{'' if count == 1 else 's'}"
    come = "comes" if count == 1 else "come"
    total = say_money(round(price * count, 2))
    return f"The {field_noun(field)} is {say_money(price)}, so {units} {come} to {total}. "


PER_UNIT = {"nightly": "night", "hourly": "hour", "daily": "day", "weekly": "week"}


def _ids_of(record: dict[str, Any]) -> set[str]:
    return {
        str(v) for k, v in record.items() if (k == "id" or k.endswith("_id")) and isinstance(v, str)
    }


def _is_charge(field: str) -> bool:
    """A sum a new record charges: its total, amount, price or cost."""
    return is_money_field(field) and field_noun(field).split()[-1] in CHARGE_WORDS


def _is_unit_price(field: str) -> bool:
    """A price a record quotes per unit: "price", "nightly rate", "fare", "rental price"."""
    return is_money_field(field) and field_noun(field).split()[-1] in UNIT_PRICE_WORDS


CHARGE_WORDS = frozenset({"total", "amount", "price", "cost", "fare", "charge", "fee"})
UNIT_PRICE_WORDS = frozenset({"price", "rate", "fare", "fee"})
