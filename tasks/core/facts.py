"""Facts a simulated user holds, and how a conversation reveals them (DESIGN §3.4).

In conversational mode the user reveals each fact before the agent uses it, so that a model
trained on the conversation learns to ask instead of inventing ids and names. The rule works on
any backend's scenarios, because it only compares values:

- A fact (a ``user_facts`` leaf) is *used* by a step when one of the step's argument values
  equals it as text (case-insensitive; ``64.0`` equals ``"64"``); or, for strings, when one
  contains the other as whole words (at least 3 characters, e.g. ``"skin rash"`` in ``"skin rash
  follow-up"``); or when an ISO date-time argument's date and ``HH:MM`` both occur in the fact
  (``"2025-03-11T11:00:00"`` in ``"2025-03-11 at 11:00, same doctor"``). Containment and the
  date-time rule apply only to facts of at most ``DETAIL_MAX`` characters: a longer fact is a
  narrative (the procedural backend's "full request"), not a detail to ask for. Booleans and
  ``None`` never match: they say nothing about where a value came from. An argument takes its
  best fact (equal before contained, then the order of ``user_facts``).
- Before a step, the agent asks in one message for the facts its arguments use that the user has
  not said yet (its value, by the same rule, occurs in no earlier user message), and the user
  answers in the next, giving each value verbatim.
- Facts no step uses stay unsaid: the reference agent asks only for what it needs.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from typing import Any

from envmill.schemas.scenario import SolutionStep
from envmill.tasks.core.field_words import is_money_field, say_money
from envmill.tasks.core.wording_files import read_wording

DETAIL_MAX = 80
MIN_CONTAINED = 3
EXACT, PARTIAL = 2, 1
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
PHONE = re.compile(r"^\+?\(?\d[\d ().-]{5,}\d$")
ISO_MOMENT = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})")
NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
QUESTIONS = (
    "Could you tell me the {things}?",
    "Could you give me the {things}, please?",
    "Sure, what's the {things}?",
)
# after tool results, not a reply to the user's last words: no "Sure, …"
LATER_QUESTIONS = (
    "Could you tell me the {things}?",
    "Could you give me the {things}, please?",
    "What's the {things}?",
)
ALSO = ("And what's the {things}?", "Also, what's the {things}?")
# a question with a clause in it ("…what date and time suit you and what it's for?"): each
# thing carries its own article, and "What's …" no longer fits
CLAUSE_QUESTIONS = ("Could you tell me {things}?", "Could you let me know {things}?")
CLAUSE_ALSO = ("And could you tell me {things}?",)
TITLED = re.compile(r"([a-z][a-z ]*) title")  # "gym class title": "the name of the gym class"
WHICH = " you mean"  # a fact that tells same-named records apart ("member you mean")
WHICH_QUESTION = "I found more than one {noun} by that name. Which one do you mean?"
# the same question listing what the agent found: "…by that name: one whose email is a@x.org
# and one whose email is b@y.org. Which one do you mean?"
WHICH_LISTED = "I found more than one {noun} by that name: {listed}. Which one do you mean?"
CONFIRM = "Yes, please go ahead."  # the user's answer when the agent asks to go ahead
ONE_ANSWER = ("Sure, it's {value}.", "It's {value}.", "That would be {value}.")
LEADS = ("Sure: ", "Here you go: ", "OK, ")  # no "Yes:": the question may be "What's …?"


@dataclass(frozen=True)
class Fact:
    """One revealable value; ``noun`` is how the agent asks for it ("patient id")."""

    key: str
    noun: str
    value: Any


def flatten_facts(user_facts: dict[str, Any]) -> list[Fact]:
    """Every scalar leaf of ``user_facts``; a nested fact's path becomes its noun."""
    return [Fact(path, noun_of(path), value) for path, value in _leaves(user_facts, "")]


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _leaves(v, f"{path} {k}".strip())]
    if isinstance(value, list):
        return [pair for i, v in enumerate(value) for pair in _leaves(v, f"{path} {i + 1}")]
    return [(path, value)]


def noun_of(key: str) -> str:
    """How the agent names a fact: ``patient_id`` / ``wantedSlot`` / ``phone 2`` -> ``patient id``
    / ``wanted slot`` / ``phone`` (a numbered repeat is asked for in the context of its step)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key)
    words = re.sub(r"[_\-\s]+", " ", spaced).strip()
    words = re.sub(r"(?<=\D) \d+$", "", words)
    return words if len(words) > 1 and words.isupper() else words.lower()


def as_text(value: Any) -> str | None:
    """The comparable text of a value: case-folded, numbers without noise; None for the rest."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str) and NUMBER.match(value.strip()):
        value = float(value)
    if isinstance(value, int | float):
        return str(int(value)) if float(value).is_integer() else str(value)
    if isinstance(value, str):
        text = value.strip()
        if PHONE.match(text) and not ISO_DATE.match(text):  # "+1 (555) 0199" is "+1 555 0199"
            return re.sub(r"\D", "", text)
        return text.casefold() or None
    return None


def match_strength(fact: Any, argument: Any) -> int:
    """``EXACT`` when equal as text, ``PARTIAL`` when a detail holds or is held by the
    argument (or a date-time argument's date and time), else 0."""
    fact_text, arg_text = as_text(fact), as_text(argument)
    if fact_text is None or arg_text is None:
        return 0
    if fact_text == arg_text:
        return EXACT
    if not (isinstance(fact, str) and isinstance(argument, str)) or len(fact_text) > DETAIL_MAX:
        return 0
    if mentions(arg_text, fact_text, MIN_CONTAINED) or mentions(fact_text, arg_text, MIN_CONTAINED):
        return PARTIAL
    return PARTIAL if same_moment(argument, fact_text) else 0


def mentions(haystack: str, needle: str, min_length: int = 1) -> bool:
    """``needle`` occurs in ``haystack`` as whole words ("P003" is not in "P0031")."""
    if len(needle) < min_length:
        return False
    if needle not in haystack:  # the pattern's premise, far cheaper to test
        return False
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack) is not None


def same_moment(argument: Any, text: str) -> bool:
    """An ISO date-time argument whose date and time both occur in ``text``, as written
    ("2025-10-22", "09:30") or as people say them ("22 October 2025 at 9:30 am")."""
    found = ISO_MOMENT.match(argument) if isinstance(argument, str) else None
    if not found:
        return False
    day, clock = found.groups()
    return any(mentions(text, said) for said in _days_said(day)) and any(
        mentions(text, said) for said in _clocks_said(clock)
    )


@cache
def _days_said(day: str) -> tuple[str, ...]:
    """``2025-10-22`` as written and as said: "22 october 2025", "october 22, 2025", "22 oct
    2025" (case-folded, as the texts it is looked for in)."""
    try:
        moment = date.fromisoformat(day)
    except ValueError:
        return (day,)
    forms = {day}
    for month in (moment.strftime("%B"), moment.strftime("%b")):
        forms |= {f"{moment.day} {month} {moment.year}", f"{month} {moment.day}, {moment.year}"}
    return tuple(form.casefold() for form in forms)


@cache
def _clocks_said(clock: str) -> tuple[str, ...]:
    """``09:30`` as written and as said: "9:30", "9:30 am", "9.30am" ("1 pm" for 13:00)."""
    hour, minute = (int(part) for part in clock.split(":"))
    half = "am" if hour < 12 else "pm"
    twelve = hour % 12 or 12
    forms = {
        clock,
        f"{hour}:{minute:02d}",
        f"{twelve}:{minute:02d} {half}",
        f"{twelve}:{minute:02d}{half}",
    }
    if minute == 0:
        forms |= {f"{twelve} {half}", f"{twelve}{half}"}
    return tuple(forms)


def argument_leaves(arguments: dict[str, Any]) -> list[tuple[str, Any]]:
    """(argument name, scalar value) for every leaf of a call's arguments."""
    return _leaves(arguments, "")


@dataclass
class FactLedger:
    """What the user holds and what they have said so far, for one conversational episode."""

    facts: list[Fact]
    said: list[str] = field(default_factory=list)
    revealed: set[str] = field(default_factory=set)

    def best_fact(self, value: Any) -> Fact | None:
        """The fact an argument value comes from: equal before contained, then fact order."""
        scored = [(match_strength(f.value, value), -i, f) for i, f in enumerate(self.facts)]
        strength, _, fact = max(scored, key=lambda s: s[:2], default=(0, 0, None))
        return fact if strength else None

    def is_said(self, value: Any) -> bool:
        text = as_text(value)
        return text is not None and any(
            mentions(said, text) or same_moment(value, said) for said in self.said
        )

    def needed_for(self, step: SolutionStep) -> list[tuple[str, Fact]]:
        """(argument name, fact) for each fact the step uses that the user has not said yet.

        An argument may combine facts (a date-time from a date and a time): when no fact gives
        it whole, each of its parts is matched on its own."""
        needed: list[tuple[str, Fact]] = []
        for name, value in argument_leaves(step.arguments):
            for part in self.sources_of(value):
                fact = self.best_fact(part)
                if fact is None or fact.key in self.revealed or self.is_said(part):
                    continue
                if all(fact is not other for _, other in needed):
                    needed.append((name, fact))
        return needed

    def sources_of(self, value: Any) -> list[Any]:
        """The value itself, or, when no fact equals it, its parts (date and time of an ISO
        date-time) as well."""
        found = ISO_MOMENT.match(value) if isinstance(value, str) else None
        whole = self.best_fact(value)
        if found is None or (whole is not None and match_strength(whole.value, value) == EXACT):
            return [value]
        return [value, *found.groups()]

    def hear(self, text: str, facts: Sequence[Fact] = ()) -> None:
        """Record a user message; ``facts`` are the ones it answered."""
        self.said.append(text.casefold())
        self.revealed.update(f.key for f in facts)


def ask_and_answer(
    needed: list[tuple[str, Fact]],
    turn: int,
    listed: dict[str, str] | None = None,
    after_results: bool = False,
) -> tuple[str, str]:
    """The agent's question for the facts a call needs and the user's answer, giving each
    value verbatim. Two facts with one noun ("account id" twice) are named by their argument.
    ``listed`` holds, per which-one fact's key, the records the agent found by that name as
    it lists them ("one whose email is … and one whose email is …"): an agent that asks "which
    one?" says what it is choosing between."""
    which = [fact for _, fact in needed if fact.noun.endswith(WHICH)]
    needed = [(arg, fact) for arg, fact in needed if not fact.noun.endswith(WHICH)]
    question, answer = "", ""
    for fact in which:  # "I found more than one vehicle by that name: …. Which one do you mean?"
        noun, found = fact.noun.removesuffix(WHICH), (listed or {}).get(fact.key)
        asked = WHICH_LISTED.format(noun=noun, listed=found) if found else None
        question += " " + (asked or WHICH_QUESTION.format(noun=noun))
        answer += f" {the_one(say_value(fact.value))}"
    if needed:  # after the namesakes, which the agent has just found
        plain = LATER_QUESTIONS if after_results else QUESTIONS
        asked, given = _ask_plainly(needed, turn, ALSO if which else plain, also=bool(which))
        question += f" {asked}"
        answer += f" {given}"
    return question.strip(), answer.strip()


def _ask_plainly(
    needed: list[tuple[str, Fact]],
    turn: int,
    questions: tuple[str, ...] = QUESTIONS,
    also: bool = False,
) -> tuple[str, str]:
    nouns = [fact.noun for _, fact in needed]
    pairs = zip(needed, nouns, strict=True)
    names = [
        whose_name(noun_of(arg) if nouns.count(noun) > 1 else noun) for (arg, _), noun in pairs
    ]
    asked = [_as_asked(name, fact.value) for name, (_, fact) in zip(names, needed, strict=True)]
    if all(phrase.startswith("the ") for phrase in asked):
        things = join_words([phrase.removeprefix("the ") for phrase in asked])
    else:
        questions, things = CLAUSE_ALSO if also else CLAUSE_QUESTIONS, join_words(asked)
    question = questions[turn % len(questions)].format(things=things)
    values = [said_as(arg, fact.value) for arg, fact in needed]
    spoken = [spoken_noun(name) for name in names]  # the answer names each as asked
    return question, answer_with(list(zip(spoken, values, strict=True)), turn, also)


def said_as(name: str, value: Any) -> str:
    """A value as the user says it: a sum of money in dollars ("$22.50", not "22.5")."""
    money = isinstance(value, int | float) and not isinstance(value, bool) and is_money_field(name)
    return say_money(value) if money else say_value(value)


def _as_asked(noun: str, value: Any) -> str:
    """How a question names a thing: a count as one ("how many seats"), a detail a form would
    name by its field as a person asks it ("what it's for"), a noun as it is said, with its
    article ("the phone number", round 28; "the work order number")."""
    counted = isinstance(value, int) and not isinstance(value, bool) and is_plural(noun)
    if counted and " " not in noun:
        return f"how many {noun}"
    clause = _clause_of(noun)
    return clause[0] if clause else f"the {spoken_noun(noun)}"


def spoken_noun(noun: str) -> str:
    """A fact's noun as a person says it: "work order id" is the "work order number" (a card's
    number is the one printed on it, so its id is the "card reference"), "course title" is
    the "name of the course" (a job title stays), "phone" the "phone number"."""
    if noun.endswith(" id") and noun != "id":
        thing = noun.removesuffix(" id")
        return f"{thing} {'reference' if thing in NUMBERED_OTHERWISE else 'number'}"
    titled = TITLED.fullmatch(noun)
    if titled and titled[1] not in PEOPLES_TITLES:
        return f"name of the {titled[1]}"
    return ASKED_AS.get(noun, noun)


@cache
def asked_clauses() -> dict[str, tuple[str, str]]:
    """``asked.yaml``: fact noun → (how the agent asks for it, how the user gives it)."""
    return {str(k): (str(v[0]), str(v[1])) for k, v in read_wording("asked").items()}


def _clause_of(noun: str) -> tuple[str, str] | None:
    return asked_clauses().get(noun.replace("-", " "))


def things_of_clauses(text: str) -> str:
    """A question's things with each clause the agent asks by read back as its noun ("what
    it's for" → "reason"; "how many nights" → "nights"), for a user who answers by noun."""
    for noun, (clause, _) in sorted(asked_clauses().items(), key=lambda i: -len(i[1][0])):
        text = text.replace(clause, noun)
    return re.sub(r"\bhow many (\w+)", r"\1", text)


NUMBERED_OTHERWISE = frozenset({"card"})
PEOPLES_TITLES = frozenset({"job", "position", "professional"})  # "the job title" stays
# a noun said alone in a statement ("my phone is …") that a question or a goal says in full
ASKED_AS = {"phone": "phone number", "mobile": "mobile number"}


def whose_name(noun: str) -> str:
    """ "the doctor's name", as a person says it, not as a form's field ("the doctor name")."""
    owner = name_owner(noun)
    return f"{owner}'s name" if owner else noun


def name_owner(noun: str) -> str | None:
    """Whose name a field noun names ("doctor" of "doctor name"); None for "first name"."""
    whose = re.fullmatch(r"([a-z]+) name", noun)
    return whose[1] if whose and whose[1] not in NAME_KINDS else None


# words that say which name, not whose: "the first name", "the company name"
NAME_KINDS = frozenset(
    {"first", "last", "full", "middle", "user", "display", "company", "business", "product"}
)


def answer_with(pairs: list[tuple[str, str]], turn: int, also: bool = False) -> str:
    """The user's answer giving each (noun, said value), each value verbatim: values that
    say what they are (a name, an email, a phone number) go first and bare, as a person
    answers a form's questions ("Amy Holt, amy@x.org, 682-957-7876"), the rest in clauses;
    ``also`` after another answer in the same message ("I mean Ann Lee, …. And the amount is
    259.64.", not "… That would be 259.64.")."""
    if also:
        answer = f"And {join_words([fact_clause(noun, value) for noun, value in pairs])}."
    elif len(pairs) == 1:
        answer = ONE_ANSWER[turn % len(ONE_ANSWER)].format(value=pairs[0][1])
    else:
        bare, clauses = [], []
        for noun, value in pairs:
            if _says_what_it_is(noun, value):
                bare.append(value)
            else:
                clauses.append(fact_clause(noun, value))
        parts = [", ".join(bare)] if bare else []
        parts += [join_words(clauses)] if clauses else []
        said = repr([value for _, value in pairs])  # the same from any user, however the
        lead = LEADS[zlib.crc32(said.encode()) % len(LEADS)]  # question named the values
        answer = lead + "; ".join(parts) + "."
    return re.sub(r"([.!?])\.$", r"\1", answer)


def _says_what_it_is(noun: str, value: str) -> bool:
    """An email, a phone number, or a name given for a name."""
    if "@" in value and " " not in value:
        return True
    if PHONE.match(value) and "phone" in noun:
        return True
    return (noun == "name" or noun.endswith(" name")) and not NUMBER.match(value)


def fact_clause(name: str, value: Any) -> str:
    """One fact as a person gives it: "3 nights", "2 adults", "3664.77 kg" (a "weight in kg"),
    but "the grade is standard" (not "the nights are 3", a form read aloud)."""
    said = str(value)
    clause = _clause_of(name)
    if clause:  # "it's for a consultation", "it's for ongoing pain"
        return clause[1].format(value=as_purpose(said) if name in PURPOSES else said)
    titled = re.fullmatch(r"name of the (.+)", name)
    if titled:  # "the course is called Intro to Programming"
        return f"the {titled[1]} is called {said}"
    if name in KIND_NOUNS and re.fullmatch(r"[a-z]+", said):
        return f"{said} {name}"  # "business cabin", "low priority", not "the cabin is …"
    if re.fullmatch(r"\d+", said) and " " not in name and is_plural(name):
        return f"{said} {name.removesuffix('s') if said == '1' else name}"  # "1 adult"
    measured = re.fullmatch(r"[a-z ]+ in (\w+)", name)
    if measured and NUMBER.match(said):
        return f"{said} {measured.group(1)}"
    return f"the {name} {'are' if is_plural(name) else 'is'} {said}"


def the_one(value: str) -> str:
    """ "Ann Lee (whose phone is 555)" → "I mean Ann Lee, the one whose phone is 555."."""
    found = re.fullmatch(r"(.+?)\s*\((?:the one\s+)?([^()]+)\)", value)
    if found is None:
        return f"I mean {value}."
    if re.fullmatch(r"the .+ one", found.group(2)):  # "(the do not contact one)"
        return f"I mean {found.group(1)}, {found.group(2)}."
    return f"I mean {found.group(1)}, the one {found.group(2)}."


def is_plural(noun: str) -> bool:
    """ "seats are 3" but "address is …", "status is …" (a guess that is right for field names)."""
    return noun.endswith("s") and not noun.endswith(("ss", "us", "is"))


def a_or_an(phrase: str) -> str:
    """The indefinite article a phrase takes as it is read out: by its first letter ("an
    engine", "a visit"), or by its number ("an $80.00 payment", "an 11-day trip", "a $300.00
    payment")."""
    digits = phrase.lstrip("$")
    if digits[:1].isdigit():
        spoken_vowel = digits[:1] == "8" or re.match(r"1[18](?:[.,]\d{3}\b|\.\d\d\b|\b|-)", digits)
        return "an" if spoken_vowel else "a"
    return "an" if phrase[:1].lower() in "aeiou" else "a"


def as_purpose(said: str) -> str:
    """A reason as it follows "for": "a second opinion", but "new symptoms", "ongoing pain",
    "a review of test results", "pain and swelling" (several things take no one article)."""
    head = said.split(" of ")[0].split()[-1] if said.strip() else ""
    bare = head.endswith("s") or head in MASS_NOUNS  # "new symptoms", "ongoing pain"
    bare |= "," in said or " and " in said  # several things take no one article
    bare |= said.startswith(("a ", "an ", "the "))  # it has one
    return said if bare else f"{a_or_an(said)} {said}"


PURPOSES = frozenset({"reason", "purpose", "visit reason"})
KIND_NOUNS = frozenset({"cabin", "plan", "tier", "priority", "class", "grade", "membership"})
MASS_NOUNS = frozenset("pain advice care treatment help maintenance work therapy".split())


def join_words(items: list[str], conjunction: str = "and") -> str:
    """ "a, b and c"; "a, b or c" with ``conjunction="or"``."""
    last = f" {conjunction} "
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + last + items[-1]


def say_value(value: Any) -> str:
    """A value as a person says it: "yes", "11 March 2025 at 11:00" for an ISO moment (the
    agent converts it back), "500" for 500.0, anything else as it is."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return said_moment(value) or value
    return str(value) if isinstance(value, int | float) else json.dumps(value)


def said_moment(value: str) -> str | None:
    found = re.fullmatch(r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(?::00)?)?", value.strip())
    return said_day(found.group(1), found.group(2)) if found else None


def said_day(day_text: str, time_text: str | None = None, month: str = "%B") -> str | None:
    """ "2025-11-05", "10:45" as "5 November 2025 at 10:45" (``month="%b"``: "5 Nov 2025");
    None for no real date."""
    try:
        day = date.fromisoformat(day_text)
    except ValueError:
        return None
    said = f"{day.day} {day.strftime(month)} {day.year}"
    return f"{said} at {time_text}" if time_text else said
