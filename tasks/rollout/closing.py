"""The reference's last words when the task asks for work, not an answer (DESIGN §3.4).

SFT copies a reference word for word, so its closing message says what happened in concrete
terms, read from the change the solution made to the state: each record created (with its id
and a few of its values worked into the sentence), each status said with its verb ("I've
cancelled order O1"), each field changed (its new value), each record removed, and money a
related record gained or lost by it (a refund, a fee). Counters and the clock are the
system's, not news to the user. The wording varies with the content, and most replies carry no
stock opener or closer, so no one sentence opens or closes a corpus.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any, TypeGuard

from envmill.schemas.ids import sha256_hex
from envmill.tasks.certify.generated import is_generated
from envmill.tasks.core.facts import a_or_an, is_plural, join_words, mentions, said_day
from envmill.tasks.core.field_words import field_noun, is_money_field, say_money, singular
from envmill.tasks.core.statekit import diff_states
from envmill.tasks.core.status_words import status_kind, status_news, where_it_stands

# most replies start with the news itself; a few with a short word, as a person varies it
OPENERS = ("", "", "", "", "", "Done. ", "All set. ", "Okay, ")
# no sign-off: "Happy to help further." read as tacked on (round 38)
NOTHING = (
    "Nothing needed to change: it was already as you asked.",
    "Everything was already in order, so nothing needed to change.",
)
SHORT = 40  # a reply this short may name who it is for ("…, Jessica")
MAX_RECORDS = 4  # a longer list is summed up: the user asked for the outcome, not a dump
MAX_FIELDS = 3
LABEL_FIELDS = ("name", "full_name", "title", "display_name")
# a new record's money said "for $64.00" (what it costs), others "with a monthly fee of $64.00"
PRICE_WORDS = frozenset({"amount", "total", "price", "cost", "fare"})
CHARGE_WORDS = PRICE_WORDS - {"amount"}  # what a new record came to, not a sum asked for
MAX_PRICE = 1e9
NOT_YET = re.compile(r"wait|hold|pending|review|request", re.I)  # news beside a making
DAYS = ("on ", "from ", "until ")
ENDS = frozenset({"end", "ends", "until", "expiry", "expires", "to", "due"})
DURATIONS = frozenset({"nights", "days", "hours", "weeks", "months", "minutes", "years"})
# a field that sorts a record, said before its noun: "a premium cabin", "a checking account"
SORT_WORDS = frozenset(
    {"type", "kind", "category", "plan", "tier", "grade", "cabin", "class", "level"}
)
NUMBER_FIELD = re.compile(r"(?:\w+_)?(?:number|plate|code)")
CONTACT_FIELDS = ("email", "phone", "address")
# a tool's message that tells of money moving ("refund credited", "postage refunded")
MONEY_TOLD = re.compile(
    r"\b(?:refund\w*|credit\w*|charg\w*|paid|bill\w*|fees?|transferr\w*|debit\w*)\b", re.I
)
# a tool message's clause about another record: "request closed", "its tickets are void"
VERBS = frozenset({"is", "are", "was", "were", "has", "have"})
DONE = frozenset({"sent", "paid", "lost", "given", "taken", "made", "void", "kept", "put"})
DETERMINERS = frozenset({"the", "its", "their", "his", "her", "a", "an", "all", "every"})
NOT_A_NOUN = frozenset({"not", "no", "nothing", "none", "please", "if", "never", "reason"})
# a new record's usual first status goes without saying ("Ann is registered as member M9")
FRESH = {"", "active", "open", "new", "available", "created", "draft", "pending"}
ISO = re.compile(
    r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)
# when a record was made is the clock's, not news ("booked_at"); when it is for is ("starts_at")
STAMP = re.compile(
    r"^(?:created|updated|modified|booked|placed|purchased|opened|submitted|recorded|logged|"
    r"received|issued|filed|registered|joined|added|reported|applied)(?:_(?:at|on))?$"
)


def closing_message(
    initial: dict[str, Any],
    final: dict[str, Any],
    seed: str,
    shown: list[Any] | None = None,
    said: str = "",
    made_by: dict[str, str] | None = None,
    done: list[Done] | None = None,
    order: dict[str, int] | None = None,
) -> str:
    """What changed from ``initial`` to ``final``, as a person reports finished work; with
    ``shown`` (the calls the agent made and their results) and ``said`` (the user's words),
    only what it can know; ``made_by`` (a new record's id → the change that made it, done:
    "sold 1 ticket for Modern Dance Festival to Kim Serrano") says a new record by its making,
    ``done`` a change to records that were there by the change itself, and ``order`` (id →
    the call that named or made it) the order they are said in."""
    pick = int(sha256_hex(seed)[:8], 16)
    news = changed_news(initial, final, shown, said, made_by, done, order)
    if not news:
        return NOTHING[pick % len(NOTHING)]
    opener = OPENERS[pick % len(OPENERS)]
    first = _first_name(final, shown, said) if len(news) == 1 and len(news[0]) < SHORT else None
    if first and (pick >> 8) % 2:  # "I've taken you off shift, Jessica." as a person says it
        news = [f"{news[0]}, {first}"]
    body = " ".join(f"{_capital(clause)}." for clause in news)
    if opener == "Okay, " and news[0][:1].islower():  # "Okay, order O1 …", not "Okay, ann"
        body = body[:1].lower() + body[1:]
    return f"{opener}{body}"


def _first_name(final: dict[str, Any], shown: list[Any] | None, said: str) -> str | None:
    """The signed-in person's first name, once a result showed their name."""
    you = _signed_in(final, shown)
    name = _known(_labels(final), shown or [], said).get(you) if you else None
    return name.split()[0] if name and re.fullmatch(r"[A-Z][a-z]+ [A-Z][\w' -]+", name) else None


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def what_changed(
    initial: dict[str, Any], final: dict[str, Any], shown: list[Any] | None = None
) -> str:
    """The changes as one clause list ("I've shipped order O1; invoice I2 is created …"),
    empty when nothing the user would call news changed (:func:`changed_news`)."""
    return "; ".join(changed_news(initial, final, shown))


def changed_news(
    initial: dict[str, Any],
    final: dict[str, Any],
    shown: list[Any] | None = None,
    said: str = "",
    made_by: dict[str, str] | None = None,
    done: list[Done] | None = None,
    order: dict[str, int] | None = None,
) -> list[str]:
    """One clause per changed record, or per change that named it (``done``). With ``shown``
    (the calls' arguments and results), a change the agent cannot know is left out, unless
    none is known at all: a cascade no result showed (the member's bookings cancelled with
    them). The status of a record a call named is known from the call succeeding ("complete
    appointment A2"); money the change moved on another record (a refund, a fee) is named,
    with its amount only when a result showed it."""
    changes = [c for c in diff_states(initial, final) if not _same_said(c)]
    seen = [c for c in changes if _shows(shown, c, final)] if shown is not None else changes
    now = final.get("current_time")
    labels, shown_as = _labels(final), _labels(final, _shown_as)
    if shown is not None:  # a name no call, result or user message showed would be made up
        labels, shown_as = _known(labels, shown, said), _known(shown_as, shown, said)
    you = _signed_in(final, shown) or _introduced(labels, _people(final), said)
    labels = {**labels, you: "you"} if you else labels  # "booking BK-9 for you"
    names = Names(
        labels,
        shown_as,
        _people(final),
        now,
        you,
        made_by=made_by or {},
        done=done or [],
        heard=said,
        order=order or {},
    )
    news = _news(seen, names)
    if news and len(seen) < len(changes):
        acted = {rid for act in names.done if act.phrase for rid in act.records}
        # "moved $400.00 from ACC-4 to ACC-1" says what ACC-1 gained
        hidden = [c for c in changes if c not in seen and _record_id(c) not in acted]
        news += _money_moved(hidden, names, shown) + _cascade_told(hidden, shown)
    news = news or _news(changes, names)
    told = news[:MAX_RECORDS]
    rest = len(news) - len(told)
    return told + (
        [f"there {'were' if rest > 1 else 'was'} {rest} more change{'s' if rest > 1 else ''}"]
        if rest
        else []
    )


def _signed_in(state: dict[str, Any], shown: list[Any] | None) -> str | None:
    """The signed-in person's own record, once a session read showed who it is: the reply
    talks to them ("your address"), not about them ("customer Debra Moss' address")."""
    you = state.get("acting_id")
    if not isinstance(you, str) or not _holds(shown, lambda d: d.get("acting_id") == you):
        return None
    own = any(isinstance(c, dict) and isinstance(c.get(you), dict) for c in state.values())
    return you if own else None


def _introduced(labels: dict[str, str], people: set[str], said: str) -> str | None:
    """The person the user said they are ("I'm Laura Molina"), where no one signs in: the
    reply talks to them, not about them ("I've taken in a lot from Laura Molina" read as the
    third person to the farmer herself, round 25). None when no one, or two, fit."""
    found = {
        rid
        for rid, label in labels.items()
        if rid in people
        and re.search(rf"\b(?:I'm|I am|my name is|this is)\s+{re.escape(label)}\b", said, re.I)
    }
    return found.pop() if len(found) == 1 else None


def changed_numbers(initial: dict[str, Any], final: dict[str, Any]) -> list[float]:
    """The new numbers a report of this change may state ("the balance is now $40.29", "went
    up by $300.00"): an answer's judge takes them as context, not as a guess. Counters and
    clocks are not among them; nothing reports those."""
    changes = [c for c in diff_states(initial, final) if not is_generated(c)]
    numbers = [c["new"] for c in changes if _is_amount(c.get("new"))]
    return numbers + [abs(m) for c in changes if (m := _moved_by(c)) is not None]


def _same_said(change: dict[str, Any]) -> bool:
    """A change that reads as none ("$273.38 is now $273.38": 273.379 rounded)."""
    old, new = change.get("old"), change.get("new")
    if change["op"] != "change" or not all(isinstance(v, int | float) for v in (old, new)):
        return False
    field = str(change["path"][-1])
    return old != new and _say(old, field) == _say(new, field)


def _shows(shown: list[Any] | None, change: dict[str, Any], final: dict[str, Any]) -> bool:
    """Whether a tool result holds the change: the changed record (a dict naming its id) with
    the new value, or, for a record made or removed, its id."""
    path = change["path"]
    if len(path) == 3 and path[2] == "status" and _named_by_a_call(shown, path[1]):
        return True  # "complete appointment A2" succeeded: A2 is completed
    if len(path) < 2:
        return any(_holds(result, lambda d: change["new"] in d.values()) for result in shown or [])
    rid, field = path[1], path[2] if len(path) >= 3 else None
    record = (final.get(path[0]) or {}).get(rid) if isinstance(final.get(path[0]), dict) else None
    if field is None:
        return any(_holds(result, lambda d: rid in d.values()) for result in shown or [])
    return any(
        _holds(result, lambda d: _is_record(d, record, rid) and d.get(field) == change["new"])
        for result in shown or []
    )


def _is_record(data: dict[str, Any], record: Any, rid: Any) -> bool:
    """Whether ``data`` shows ``record`` (``rid``, as the state holds it) itself, not one that
    points at it: a delivery's ``status: delivered`` beside its ``order_id`` says nothing of
    the order's status (round 28): it holds an id the record has no field for (its own, or
    another record's), as an invoice that names its order does."""
    if rid not in data.values():
        return False
    if not isinstance(record, dict):
        return True
    return not any(
        key.endswith("_id") and key not in record and value != rid for key, value in data.items()
    )


def _named_by_a_call(shown: list[Any] | None, rid: Any) -> bool:
    """A change's arguments named the record, not only a result that points at it (the machine
    of a finished batch), nor a read ("list the courier's deliveries" says nothing of the
    courier's status after the delivery, round 28)."""
    return any(
        isinstance(pair, list | tuple)
        and len(pair) >= 2
        and _holds(pair[0], lambda d: rid in d.values())
        and _a_change(list(pair))
        for pair in shown or []
    )


def _a_change(pair: list[Any]) -> bool:
    """Whether a shown call changed the state: as its caller says (a third item), else by its
    result's message, which the procedural tools' reads do not carry."""
    if len(pair) > 2:
        return bool(pair[2])
    result = pair[1] if len(pair) > 1 else None
    return isinstance(result, dict) and "message" in result


def _known(names: dict[str, str], shown: list[Any], said: str) -> dict[str, str]:
    """The names a call, a result or the user's words showed."""
    texts = _texts(shown)
    known = {}
    for key, name in names.items():
        plain = name.removesuffix(f" ({key})")  # "Jason Weber (FRM-0002)": the name was shown
        if plain in texts or mentions(said, plain, min_length=0):
            known[key] = name
    return known


def _texts(value: Any) -> set[str]:
    """Every string or whole number in ``value``, however deep, as text."""
    return {str(v).strip() for v in _scalars(value) if isinstance(v, str) or _is_whole(v)}


def _scalars(value: Any) -> Iterator[Any]:
    """The leaves of the calls and results the agent saw."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        for item in value:
            yield from _scalars(item)
    else:
        yield value


def _holds(value: Any, test: Any) -> bool:
    """Whether ``value`` or a dict inside it passes ``test``."""
    if isinstance(value, dict):
        return bool(test(value)) or any(_holds(v, test) for v in value.values())
    if isinstance(value, list):
        return any(_holds(v, test) for v in value)
    return False


@dataclass(frozen=True)
class Names:
    """How the reply names records: ``labels`` (id → name, for links), ``shown_as`` (id →
    name or number, for a changed record), ``people`` (ids of records with contact details),
    ``now`` (the clock, whose value is no news)."""

    labels: dict[str, str]
    shown_as: dict[str, str]
    people: set[str]
    now: Any
    you: str | None = None  # the signed-in person the session showed: "your address"
    made_by: dict[str, str] = dataclasses.field(default_factory=dict)  # new id → the change, done
    done: list[Done] = dataclasses.field(default_factory=list)
    heard: str = ""  # the user's words: a status they asked for is said if the act does not
    order: dict[str, int] = dataclasses.field(default_factory=dict)  # id → the call that did it


@dataclass(frozen=True)
class Done:
    """A change as the agent did it, in the past ("taken Michelle Rivera (CR-0008) off shift"),
    and the ids of the records that were there before that its arguments named; no ``phrase``
    for a change that made a record (its making says it)."""

    phrase: str | None
    records: frozenset[str]


def _people(state: dict[str, Any]) -> set[str]:
    return {
        str(key)
        for records in state.values()
        if isinstance(records, dict)
        for key, record in records.items()
        if isinstance(record, dict) and any(f in record for f in CONTACT_FIELDS)
    }


def _labels(state: dict[str, Any], own: Any = None) -> dict[str, str]:
    """Each record's id → its name or title, so a link reads "for Hunter Gomez", not "member
    id GM-00005" (with ``own``, another way to read a record's label)."""
    found: dict[str, str] = {}
    for records in state.values():
        if isinstance(records, dict):
            for key, record in records.items():
                label = (own or _own_label)(record)
                if label:
                    found[str(key)] = label
    # a name two records share says neither ("its adjuster is now Emma Nelson"): with its id
    counts = Counter(found.values())
    return {
        key: label if counts[label] == 1 else f"{label} ({key})" for key, label in found.items()
    }


def _shown_as(record: Any) -> str | None:
    """What a person calls a record they changed: its name, or its number ("room 512",
    "flight SK734", "vehicle 4XYZ889"), never an internal id the user did not say."""
    label = _own_label(record)
    if label or not isinstance(record, dict):
        return label
    for field, value in record.items():
        if NUMBER_FIELD.fullmatch(field) and isinstance(value, str | int) and str(value).strip():
            return str(value)
    return None


def _own_label(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    for field in LABEL_FIELDS:
        if isinstance(record.get(field), str) and record[field].strip():
            return record[field].strip()
    first, last = record.get("first_name"), record.get("last_name")
    return f"{first} {last}" if isinstance(first, str) and isinstance(last, str) else None


def _news(changes: list[dict[str, Any]], names: Names) -> list[str]:
    """One clause per record the change touched: records made with a name first (a member
    is registered before their booking is made), then the order of the state. A counter that
    moved beside other news ("its enrolment count is now 2") is the system's, not said."""
    by_record: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for change in changes:
        if is_generated(change):  # counters, clocks, touch stamps: the system's, not news
            continue
        path = [str(p) for p in change["path"]]
        by_record.setdefault(tuple(path[:2]), []).append({**change, "path": path})
    if len(by_record) > 1 or any(_has_status(found) for found in by_record.values()):
        by_record = {
            record: kept
            for record, found in by_record.items()
            if (kept := [c for c in found if not _counter(c)])
        }
    clauses: list[str] = []
    acted: list[Done] = []
    for record, found in sorted(by_record.items(), key=lambda item: _said_order(item, names)):
        act = _the_act(record, names.done)
        if act is None:
            clauses.append(_clause(record, found, names))
        elif act not in acted:
            acted.append(act)
            if act.phrase is not None:  # a making names its record where it is said
                clauses.append(_acted(act.phrase, act.records, by_record, names))
    return clauses


def _said_order(item: tuple[tuple[str, ...], list[dict[str, Any]]], names: Names) -> tuple:
    """Records in the order the calls made or changed them (a vehicle registered before the
    session it parks in; round 34 read the other order as backwards), records made with a
    name first among the rest, then the order of the state."""
    record, found = item
    key = record[1] if len(record) == 2 else None
    return (names.order.get(key or "", len(names.order)), not _made_with_name(found))


def _record_id(change: dict[str, Any]) -> str | None:
    """The id of the record a change is in; none for a top-level value."""
    return str(change["path"][1]) if len(change["path"]) > 1 else None


def _the_act(record: tuple[str, ...], done: list[Done]) -> Done | None:
    """The one change that named ``record``; none where several did (which moved what?), so
    the record is said by its own fields, as before: a phone changed beside a check-in, a
    status a later call set (round 31's breaker)."""
    acts = [act for act in done if len(record) == 2 and record[1] in act.records]
    return acts[0] if len(acts) == 1 else None


def _acted(
    phrase: str,
    ids: frozenset[str],
    by_record: dict[tuple[str, ...], list[dict[str, Any]]],
    names: Names,
) -> str:
    """A change said as done, then only what the user needs beyond it: money it moved ("your
    wallet balance is now $471.13"), and the status it set only where the user asked for it
    in other words ("cancel flight SK216": "I've grounded flight SK216, and it has been
    cancelled"); else the act says it ("I've voided shipment SHP-3, and it has been
    cancelled" read as saying it twice, round 34). Not the fields the system moved with it
    ("its spots left are now 18")."""
    touched = [(record, found) for record, found in by_record.items() if record[1] in ids]
    alone = len(ids) == 1
    extra: list[str] = []
    status = None  # in the user's word: "…, so it is now paused" (round 50: "…, and Smokehouse
    # BBQ has been paused" read as saying it twice)
    for (collection, key), found in touched:
        noun = f"{singular(_words(collection))} {names.shown_as.get(key, key)}"
        person, you = key in names.people, key == names.you
        for change in found:
            field, new = str(change["path"][-1]), change["new"]
            if field == "status" and isinstance(new, str) and _asked_not_said(new, phrase, names):
                said = alone or names.shown_as.get(key, key) in phrase  # "…SR-9, so it has"
                subject = names.labels.get(key) or ("it" if said and not person else noun)
                status = where_it_stands("you" if you else subject, _say(new, field))
            elif _is_amount(new) and _is_money_or_balance(field) and len(change["path"]) == 3:
                its = "your" if you else ("their" if person else "its") if alone else None
                extra += _money_after(change, phrase, its, noun)
            elif _a_new_day(change, phrase, names.now):  # "…, and its due date is now 13 Mar 2025"
                its = "your" if you else ("their" if person else "its") if alone else None
                whose = f"{its} {field_noun(field)}" if its else _field_of(noun, field_noun(field))
                extra.append(f"{whose} is now {_say(new, field)}")
    head = f"I've {phrase}"
    head = head if not extra else f"{head}, and {join_words(extra[:2])}"
    return head if status is None else f"{head}, so {status}"


def _a_new_day(change: dict[str, Any], phrase: str, now: Any) -> bool:
    """A date the act moved and did not say: a loan extended to a new due date (round 76: "I've
    extended loan LN-00003." left out until when). When a record was made, touched or done
    (``STAMP``, or the time it is now: "its delivery time is now …") is the clock's."""
    field, new = str(change["path"][-1]), change.get("new")
    if len(change["path"]) != 3 or STAMP.match(field) or not isinstance(new, str):
        return False
    found = ISO.fullmatch(new)
    if found is None or (isinstance(now, str) and now.startswith(new[:10])):
        return False
    day = date.fromisoformat(found[1])
    return not any(day.strftime(f"{day.day} %{m} %Y") in phrase for m in "bB")


def _money_after(change: dict[str, Any], phrase: str, its: str | None, noun: str) -> list[str]:
    """Money a change moved, after the change: "it came to $6.00" (a price that rose, of the
    one record it named), "your wallet balance is now $471.13"; nothing the phrase said."""
    field, new, old = str(change["path"][-1]), change["new"], change.get("old")
    value = _say(new, field)
    if value in phrase:  # "changed the price … to $50.00": said once
        return []
    rose = not old or (_is_amount(old) and new > old)  # not an amount gone to $0.00
    if its and rose and _words(field).split()[-1] in PRICE_WORDS:
        return [f"it came to {value}"]  # a session's amount, an order's total
    whose = f"{its} {_words(field)}" if its else _field_of(noun, _words(field))
    return [f"{whose} {_is(field)} now {value}"]


def _asked_not_said(status: str, phrase: str, names: Names) -> bool:
    """The user's words name the status ("cancel"), the act's do not ("grounded")."""
    stem = _say(status).split(" ")[-1][:5].casefold()
    heard, done = names.heard.casefold(), phrase.casefold()
    return (
        len(stem) >= 4
        and re.search(rf"\b{re.escape(stem)}", heard) is not None
        and stem not in done
    )


def _is_money_or_balance(field: str) -> bool:
    return is_money_field(field) or "balance" in field


def _has_status(changes: list[dict[str, Any]]) -> bool:
    return any(c["path"][-1] == "status" and len(c["path"]) >= 3 for c in changes)


def _counter(change: dict[str, Any]) -> bool:
    """A count the system keeps: a whole number, not money, that moved by one or is called a
    count ("enrolled" said "enrolment count", "pauses", "reopen count")."""
    old, new, field = change.get("old"), change.get("new"), str(change["path"][-1])
    if len(change["path"]) < 3 or not (_is_whole(old) and _is_whole(new)):
        return False
    return not is_money_field(field) and (abs(new - old) == 1 or _words(field).endswith("count"))


def _is_whole(value: Any) -> TypeGuard[int]:
    return type(value) is int


def _is_amount(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _money_moved(hidden: list[dict[str, Any]], names: Names, shown: list[Any] | None) -> list[str]:
    """The money a change moved on a record no result's data showed, where a tool's message
    told of it ("Transferred 20.0 from ACC-6 to ACC-1", "refund credited"): a person tells the
    customer, by how much when a result showed that amount, else without one. A change no
    message told of (the patient's balance a closed visit billed) the agent cannot know, so the
    reply does not say it."""
    seen_numbers = _numbers(shown)
    told = " ".join(_messages(shown))
    said = []
    for change in hidden:
        path, old, new = change["path"], change.get("old"), change.get("new")
        field = str(path[-1])
        if len(path) != 3 or not is_money_field(field) or is_generated(change):
            continue
        if not (_is_amount(old) and _is_amount(new)):
            continue
        key = str(path[1])
        named = re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", told)
        if shown is not None and not (named or MONEY_TOLD.search(told)):
            continue
        owner = names.shown_as.get(key) or f"{singular(_words(str(path[0])))} {key}"
        whose = _field_of("you" if key == names.you else owner, _words(field))  # "your credit"
        way = "went up" if new > old else "went down"
        delta = round(abs(new - old), 2)
        by = f" by {say_money(delta)}" if any(abs(n - delta) < 0.005 for n in seen_numbers) else ""
        said.append(f"{whose} {way}{by} as a result")
    return said[:1]


def _cascade_told(hidden: list[dict[str, Any]], shown: list[Any] | None) -> list[str]:
    """A change to other records no result showed, as the message of the change's own result
    told of it ("Course CRS-3 cancelled; enrolled students dropped" -> "the enrolled students
    were dropped"): round 74 read "I've cancelled Genetics (CRS-0003)." as hiding the student
    it dropped. Only a clause that states what a hidden change did (its new status) is said;
    a read's message, an argument or any other clause is not news (a breaker's: "Welcome back;
    your old bookings are gone"). Money is :func:`_money_moved`'s."""
    happened = {
        _words(str(c["new"]))
        for c in hidden
        if str(c["path"][-1]) == "status" and isinstance(c.get("new"), str)
    }
    told = [
        _as_sentence(clause.split(), result.get("data"))
        for result in _change_results(shown)
        for clause in result["message"].rstrip(".").split(";")[1:]
        if not MONEY_TOLD.search(clause)
        and _words(clause.split()[-1] if clause.split() else "") in happened
    ]
    return [t for t in told if t][:1]


def _as_sentence(words: list[str], data: Any = None) -> str | None:
    """ "enrolled students dropped" -> "the enrolled students were dropped", "order cancelled"
    -> "order ORD-3 was cancelled" where the result's ``data`` holds its ``order_id``; "its
    tickets are void" as it is. None for a clause that is not a noun and what became of it
    ("not shipped", "reason: policy expired")."""
    if not words or not all(re.fullmatch(r"[a-z]+", w) for w in words) or NOT_A_NOUN & {*words}:
        return None
    if VERBS.intersection(words):
        return " ".join(words) if words[0] in DETERMINERS else None
    at = next((i for i, w in enumerate(words) if i and (w.endswith("ed") or w in DONE)), None)
    if at is None:
        return None
    noun = " ".join(words[:at])
    rid = data.get(f"{noun}_id") if isinstance(data, dict) and at == 1 else None
    if isinstance(rid, str):
        return f"{noun} {rid} was {' '.join(words[at:])}"  # "order ORD-000003 was cancelled"
    the = "" if words[0] in DETERMINERS else "the "
    return f"{the}{noun} {'were' if is_plural(words[at - 1]) else 'was'} {' '.join(words[at:])}"


def _change_results(shown: list[Any] | None) -> list[dict[str, Any]]:
    """The results of the calls that changed the state, with a tool's own message."""
    return [
        pair[1]
        for pair in shown or []
        if isinstance(pair, list | tuple)
        and len(pair) >= 2
        and isinstance(pair[1], dict)
        and isinstance(pair[1].get("message"), str)
        and _a_change(list(pair))
    ]


def _messages(shown: list[Any] | None) -> list[str]:
    """The tools' own messages among the calls and results the agent saw."""
    return [
        item["message"]
        for call in shown or []
        for item in (call if isinstance(call, list | tuple) else [call])
        if isinstance(item, dict) and isinstance(item.get("message"), str)
    ]


def _numbers(value: Any) -> list[float]:
    """Every number in the calls and results the agent saw."""
    return [float(v) for v in _scalars(value) if _is_amount(v)]


def _made_with_name(changes: list[dict[str, Any]]) -> bool:
    return any(len(c["path"]) == 2 and c["op"] == "add" and _own_label(c["new"]) for c in changes)


def _clause(record: tuple[str, ...], changes: list[dict[str, Any]], names: Names) -> str:
    if len(record) == 1:  # a top-level value: "the balance is now $120.50"
        name = record[0]
        return f"the {_words(name)} {_is(name)} now {_say(changes[0]['new'], name)}"
    key, kind = record[1], singular(_words(record[0]))
    whole = next((c for c in changes if len(c["path"]) == 2), None)
    if whole is not None and whole["op"] == "add":  # a new record: its id is news
        return _created(f"{kind} {key}", key, whole["new"], names)
    noun = f"{kind} {names.shown_as.get(key, key)}"  # "guest Meghan Dennis", "room 512"
    pick = _pick(key, *(str(c["path"][-1]) for c in changes))
    statuses = any(c["path"][-1] == "status" for c in changes)
    noun = "you" if key == names.you and whole is None and not statuses else noun
    if whole is not None and whole["op"] == "remove":
        return (f"{noun} is removed", f"I've removed {noun}")[pick % 2]
    if whole is not None:  # a value keyed by name ("stock": {"apple": 5})
        return f"{noun} {_now(whole['new'], record[0])}"
    its = "their" if key in names.people and key in names.labels else "its"  # a person
    said = []
    for index, change in enumerate(_fields_worth_saying(changes, names.now)):
        name, new = str(change["path"][-1]), change["new"]
        if name == "status" and isinstance(new, str) and new.strip():
            said.append(status_news(noun, _say(new, name), pick))
            continue
        if isinstance(new, bool) and not index:  # "work order WO-4 is now marked as customer
            flag = name.removeprefix("is_").replace("_", " ")  # approved", not "… is now set"
            said.append(f"{noun} is {'now' if new else 'no longer'} marked as {flag}")
            continue
        if _is_link(name) and str(new) in names.labels:  # "its adjuster is now Erin Ruiz"
            field, value = _words(name[:-3]), names.labels[str(new)]
        else:
            field, value = _words(name), _now(new, name).removeprefix("is now ")
        moved = _moved_by(change)
        if moved and not index:  # "member Ann's fines due went down by $10.00 and are now $3.47"
            way, by = "up" if moved > 0 else "down", _say(abs(moved), name)
            said.append(f"{_field_of(noun, field)} went {way} by {by} and {_is(name)} now {value}")
            continue
        said.append(_field_news(noun, its, field, value, index, pick))
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + ", and " + said[-1]


def _moved_by(change: dict[str, Any]) -> float | None:
    """How far a number moved (a deposit, a payment, a restock), to the cent; None for no
    number or a counter moved by one (a count is news as it stands, not as a step)."""
    old, new = change.get("old"), change.get("new")
    if not (_is_amount(old) and _is_amount(new)) or change["op"] != "change":
        return None
    moved = round(float(new) - float(old), 2)
    return moved if abs(moved) not in (0, 1) else None


def _field_news(noun: str, its: str, field: str, value: str, index: int, pick: int) -> str:
    """ "the phone of member Ann is now 555", "I've changed member Ann's phone to 555"; after the
    first field, "its"/"their" ("and their earnings are now $273.38")."""
    verb = "are" if _plural_field(field) else "is"  # "its spots left are now 23"
    unit = UNIT_IN.fullmatch(field)
    if unit and re.fullmatch(r"-?[\d,.]+", value):  # "its distance is now 91 km" (round 50)
        field, value = unit["field"], f"{value} {unit['unit']}"
    if noun == "you":  # "your address is now …", "I've updated your address to …"
        if index or pick % 2:
            return f"your {field} {verb} now {value}"
        return f"I've updated your {field} to {value}"
    if index:
        return f"{its} {field} {verb} now {value}"
    if value in ("set", "cleared") or pick % 3 == 0:
        return f"the {field} of {noun} {verb} now {value}"
    if pick % 3 == 1:
        return f"{_field_of(noun, field)} {verb} now {value}"
    return f"I've {('changed', 'updated')[pick // 3 % 2]} {_field_of(noun, field)} to {value}"


UNIT_IN = re.compile(r"(?P<field>[a-z ]+) in (?P<unit>[a-zA-Z]{1,5})")
FIELD_PREPOSITIONS = frozenset("since of per in at on for from to after before until".split())


def _plural_field(field: str) -> bool:
    """A field said in the plural: its first word ("spots left") or the noun before its first
    preposition ("running hours since the last service": round 24 read "… is now 0")."""
    words = field.split() or [""]
    head = next((i for i, w in enumerate(words) if w in FIELD_PREPOSITIONS), len(words))
    return is_plural(words[0]) or (head > 0 and is_plural(words[head - 1]))


def _field_of(noun: str, field: str) -> str:
    """ "member Ann's phone", "member Cruz' phone"; "the phone of Ann Lee (C-7)", never
    "Ann Lee (C-7)'s phone"."""
    if noun == "you":
        return f"your {field}"
    if noun.endswith(")"):
        return f"the {field} of {noun}"
    return f"{noun}' {field}" if noun.endswith("s") else f"{noun}'s {field}"


def _pick(*parts: str) -> int:
    """A stable choice among ways of saying one thing, made from what is said."""
    return int(sha256_hex("|".join(parts))[:8], 16)


def _fields_worth_saying(changes: list[dict[str, Any]], now: Any = None) -> list[dict[str, Any]]:
    """The status first; beside a new status, at most one other field and no time stamp ("its
    decision time is now …" is the clock's, not news), but a day still to come ("valid until
    22 Jan 2026" after a renewal) is."""
    fields = [c for c in changes if len(c["path"]) >= 3]
    fields.sort(key=lambda c: c["path"][-1] != "status")
    if fields and fields[0]["path"][-1] == "status":
        rest = [c for c in fields[1:] if not _clock_stamp(c["new"], now)]
        return [fields[0], *rest[:1]]
    return fields[:MAX_FIELDS]


def _clock_stamp(value: Any, now: Any) -> bool:
    """A moment no later than today's date: when the change happened, which is no news."""
    if not (isinstance(value, str) and _moment(value)):
        return False
    return not (isinstance(now, str) and value[:10] > now[:10])


def _created(noun: str, key: str, record: Any, names: Names) -> str:
    """A new record as a person reports it: "I've registered Hunter Gomez as member GM-5",
    "I've made booking BK-9 for Hunter Gomez, with gym class Evening Stretch", "I've scheduled
    appointment A9 for Ann Lee on 24 Sep 2025 at 14:00, with knee pain as the reason"."""
    if not isinstance(record, dict):
        return f"{noun} is created, with {_say(record)}"
    pick = _pick(key, noun)
    status = record.get("status")
    state = _say(status, "status") if isinstance(status, str) and status.strip() else ""
    label = _own_label(record)
    if label and any(f in record for f in CONTACT_FIELDS):  # a person
        head = (f"{label} is registered as {noun}", f"I've registered {label} as {noun}")
        return head[pick % 2] + (f", {state}" if state not in FRESH else "")
    if key in names.made_by:
        return _made(names.made_by[key], noun, key, record, pick)
    links = [
        (field, names.labels[str(value)], str(value))
        for field, value in record.items()
        if _is_link(field) and str(value) in names.labels and str(value) != key
    ]
    links.sort(key=lambda link: link[2] not in names.people)  # "for Ann", not "for Lot 4"
    state = "created" if state in ("", "new", "created", "draft") else state
    named = f"{noun}, {label}," if label else noun  # "matter MAT-6, Baker Lease Dispute,"
    whom = f" for {links[0][1]}" if links else ""
    stem = noun.split(" ")[-2][:4] if " " in noun else noun[:4]
    if status_kind(state) == "action" and not state.startswith(stem) and pick % 3:
        head = f"I've {state} {named}{whom}"  # "I've scheduled appointment A9 for Ann"
    elif state.startswith(stem):  # not "booking BK-9 is booked": "I've made booking BK-9 for …"
        head = f"I've {('made', 'set up')[pick % 2]} {named}{whom}"
    else:
        head = f"{named} is {state}{whom}"
    head = head.replace(",,", ",").rstrip(",")
    if label:
        return head
    return head + _details(record, key, links[1:], names)


def _made(done: str, noun: str, key: str, record: dict[str, Any], pick: int) -> str:
    """A new record said by the change that made it, then what only its making told: its
    reference, what it came to ("I've sold 1 ticket for Modern Dance Festival to Kim Serrano;
    it's ticket TK-000010, and it came to $42.00"), and a status that says it is not done yet
    (waitlisted, on hold); the usual one (confirmed, valid) is the making's own."""
    said = f"I've {done}"
    if not re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", done):
        kind = noun.removesuffix(f" {key}")  # "ticket", not "the reference is TK-1" each time
        ways = (f"; it's {noun}", f"; the {kind} number is {key}", f"; its number is {key}")
        said += ways[pick % 3]
    prices = [v for k, v in record.items() if _is_price(k) and _is_amount(v) and 0 < v < MAX_PRICE]
    status = record.get("status")
    waiting = isinstance(status, str) and NOT_YET.search(status) and _say(status) not in done
    if prices and say_money(prices[0]) not in done:
        price = say_money(prices[0])
        said += f", and it came to {price}" if pick % 2 else f", and the total is {price}"
    if waiting:  # one "and" a sentence: "…, and the total is $219.96. It's pending for now."
        said += f". It's {_say(status)} for now"
    return said


def _is_price(name: str) -> bool:
    """What a purchase cost ("total", "price"), not a sum asked for ("amount claimed")."""
    return is_money_field(name) and _words(name).split()[-1] in CHARGE_WORDS


def _details(
    record: dict[str, Any], key: str, links: list[tuple[str, str, str]], names: Names
) -> str:
    """A new record's values worked into the sentence: " on 3 Aug 2025 for 3 nights, with a
    premium cabin and 2 seats"; values still at nothing (a $0.00 tip) are no news."""
    said = [(f"{_words(field[:-3])} {label}", False) for field, label, _ in links if label != "you"]
    for field, value in record.items():
        if (
            not _plain(value)
            or str(value) == key
            or field == "status"
            or field.endswith("id")
            or _stamp(field)
            or value == names.now  # "enrolment time" set to the clock: the system's
            or value in (0, 0.0, "", False)
        ):
            continue
        if isinstance(value, str) and _moment(value) and any(p.startswith(DAYS) for p, _ in said):
            continue  # one day is the news; "on 18 Sep 2025 on 28 Oct 2025" is a dump
        said.append(_detail(field, value))
    # what it cost first: "for $84.00" is what a buyer needs told, before "a quantity of 2"
    said.sort(key=lambda item: not item[0].startswith("for $"))
    said = said[: MAX_FIELDS - 1]
    lead = [phrase for phrase, first in said if first]
    rest = [phrase for phrase, first in said if not first]
    return "".join(f" {p}" for p in lead) + (f", with {join_words(rest)}" if rest else "")


def _detail(field: str, value: Any) -> tuple[str, bool]:
    """One value in words, and whether it goes right after the head (a day, a stay, a price)
    rather than after "with"."""
    noun = _words(field)
    if isinstance(value, str) and _moment(value):
        until = any(w in ENDS for w in field.split("_"))  # "valid until 18 Nov 2025"
        since = "start" in field and len(value.strip()) == 10  # "active from 18 Sep 2025"
        return f"{'until' if until else 'from' if since else 'on'} {_moment(value)}", True
    if isinstance(value, int | float) and not isinstance(value, bool):
        shown = _say(value, field)
        if is_money_field(field):
            if noun.split()[-1] in PRICE_WORDS:
                return f"for {shown}", True
            return f"{a_or_an(noun)} {noun} of {shown}", False
        if is_plural(noun):
            counted = singular(noun) if value == 1 else noun  # "1 night"
            return (
                (f"for {shown} {counted}", True)
                if noun in DURATIONS
                else (f"{shown} {counted}", False)
            )
        return f"{a_or_an(noun)} {noun} of {shown}", False
    said = _say(value, field)
    words = noun.split()
    if words[-1] in SORT_WORDS:  # "a premium cabin", "a checking account", "a business permit"
        rest = " ".join(words[:-1]) if words[-1] in ("type", "kind", "category") else noun
        if rest or words[-1] != "category":  # "a checking account", "a health plan"
            phrase = f"{said} {rest}".strip()
            return f"{a_or_an(phrase)} {phrase}", False
        return f"in the {said} category", True  # never "with minibar as the category"
    if isinstance(value, bool):
        return f"{noun} {said}", False
    return f"{said} as the {noun}", False


def _is_link(field: str) -> bool:
    return field.endswith("_id")


def _stamp(field: str) -> bool:
    return bool(STAMP.match(field))


def _now(value: Any, field: str = "") -> str:
    if isinstance(value, bool):
        return "is now set" if value else "is now cleared"
    if value is None or value == "":
        return "is now cleared"
    return f"is now {_say(value, field)}"


def _is(field: str) -> str:
    """ "are" after a plural field ("the deductions are now …")."""
    said = _words(field).split() or [""]
    plural = [w.endswith("s") and not w.endswith(("ss", "us", "is")) for w in said]
    after = said[-1] in ("left", "available", "remaining", "used", "owed", "due", "taken")
    return "are" if plural[-1] or (after and plural[0]) else "is"


def _say(value: Any, field: str = "") -> str:
    """A value as a person writes it: "checked in", "$64.00", "5 Nov 2025 at 10:45"."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return _moment(value) or _status(value)
    if isinstance(value, int | float) and is_money_field(field):
        return say_money(value)
    if isinstance(value, float):  # 0.1 + 0.2 reads 0.3
        return str(int(value)) if value.is_integer() else repr(round(value, 6))
    if isinstance(value, list):
        return ", ".join(_say(v) for v in value[:5]) or "none"
    return str(value) if _plain(value) else "updated"


def _moment(text: str) -> str | None:
    """An ISO date or time ("2025-11-05", "2025-11-05T10:45:00Z", "2025-11-05 10:45") as
    "5 Nov 2025" or "5 Nov 2025 at 10:45", else None."""
    found = ISO.fullmatch(text.strip())
    return said_day(found.group(1), found.group(2), month="%b") if found else None


def _status(text: str) -> str:
    """A code as words: "checked_in", "IN_TRANSIT", "shippedOut" → "checked in", "in transit",
    "shipped out"; other text as it is."""
    if re.fullmatch(r"[A-Za-z]+(?:_[A-Za-z]+)*", text) and ("_" in text or text.isupper()):
        return text.replace("_", " ").lower()
    if re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)+", text):
        return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text).lower()
    return text


def _plain(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and len(str(value)) <= 80


def _words(name: str) -> str:
    """A field as a person says it ("end date", not "ends on")."""
    return field_noun(name)
