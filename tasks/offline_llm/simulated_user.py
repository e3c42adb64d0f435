"""The rule-based simulated user: answers ``rollout_user`` requests that no script covers.

It reads what it wants and what it knows from its prompt (``prompts/rollout_user.md``: the task
after "What you want done:", the facts as ``- name: value`` lines), and talks like the user of a
reference trajectory (``tasks/core/facts.py``):

- first turn: an opening in the first person that states the task (``opening_message``);
- the agent asks for things ("Could you tell me the patient id and date?"): each one whose noun
  is a fact's noun (or ends with it: "to account id") is answered with its value as the
  reference's user says it, a date in words and money in dollars ("Sure, it's P003." / "Sure:
  the patient id is P003 and the date is 11 March 2025."); of several
  facts with one noun ("appointment id", "appointment id 2"), the next one not said yet after
  those it gives with it or said last (facts are listed in the order the request needs them);
  what it does not hold: "I'm sorry, I don't know that.";
- the agent asks which of two same-named records it means ("I found more than one member by
  that name[: one whose phone is 555 and one whose phone is 556]. Which one do you mean?"):
  "I mean Ann Lee, the one whose phone is 555.";
- the agent asks whether to go ahead: "Yes, please go ahead.";
- the agent says anything else (the work is done, it cannot be done, "anything else?"): the
  stop marker alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from envmill.schemas.rollout import STOP_MARKER
from envmill.tasks.core.facts import (
    CONFIRM,
    QUESTIONS,
    WHICH,
    WHICH_QUESTION,
    Fact,
    FactLedger,
    answer_with,
    join_words,
    noun_of,
    said_as,
    say_value,
    spoken_noun,
    the_one,
    things_of_clauses,
)
from envmill.tasks.core.opening import opening_message

UNKNOWN = "I'm sorry, I don't know that."
DEFAULT_OPENING = "Hi, I need some help, please."
_TASK = re.compile(r"What you want done:[ \t]*\n(.*?)\n[ \t]*\nWhat you know", re.DOTALL)
_FACTS = re.compile(r"What you know[^\n]*\n(.*?)(?:\n[ \t]*\n|\nRules:|\Z)", re.DOTALL)
_FACT_LINE = re.compile(r"^- (.+?): (.*)$")
_SAID_AS = {"True": "yes", "False": "no"}  # how facts.say_value says a boolean
_THINGS = r"(?P<things>[^?]+?)"
_ASKS = [
    re.compile(re.escape(q).replace(re.escape("{things}"), _THINGS), re.IGNORECASE)
    for q in QUESTIONS
] + [
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\b(?:could|can|would|will) you (?:please )?(?:tell|give|provide|share|send|confirm)"
        rf"(?: me| us)?(?: with)? (?:your|the) {_THINGS}(?:,? please)?\?",
        rf"\bwhat(?:'s| is| are| was| were) (?:your|the) {_THINGS}\?",
        rf"\b(?:may|can|could) I (?:have|get|ask for|know) (?:your|the) {_THINGS}(?:,? please)?\?",
        rf"\b(?:please )?(?:tell|give|provide|share|send) (?:me|us) (?:your|the) {_THINGS}\?",
        # a question with a clause in it: "Could you tell me what date and time suit you?"
        rf"\b(?:could|can|would) you (?:please )?(?:tell me|let me know) {_THINGS}(?:,? please)?\?",
    )
]
_WHICH = re.compile(  # with or without the records listed after "by that name"
    re.escape(WHICH_QUESTION)
    .replace(re.escape("{noun}"), r"(?P<noun>[\w' -]+?)")
    .replace(re.escape("name."), r"name(?::[^?]*?)?\."),
    re.I,
)
_SPLIT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+")
_ARTICLE = re.compile(r"^(?:the|your|my|a|an)\s+", re.IGNORECASE)
_CLOSING = re.compile(r"\b(?:anything else|something else|is that all|all set)\b", re.IGNORECASE)
_CONFIRMING = re.compile(
    r"\b(?:shall|should|may|can) I (?:go ahead|proceed|continue|do|book|make|confirm)|"
    r"\bis that right\b|\bdoes that look right\b|"
    r"\b(?:do|would) you (?:like|want) me to\b|\bgo ahead\b|\bproceed\b|\bconfirm\b",
    re.IGNORECASE,
)


@dataclass
class UserPrompt:
    """What the simulated user's system message says: the task and the facts it holds."""

    task: str
    facts: list[Fact] = field(default_factory=list)


def read_prompt(system: str) -> UserPrompt:
    """The task and facts of a ``rollout_user`` system message (empty when it has none)."""
    found = _TASK.search(system)
    task = found.group(1).strip() if found else ""
    facts: list[Fact] = []
    section = _FACTS.search(system, found.end() - len("What you know") if found else 0)
    for line in (section.group(1) if section else "").splitlines():
        item = _FACT_LINE.match(line)
        if item:
            name, value = item.group(1).strip(), item.group(2).strip()
            facts.append(Fact(name, noun_of(name), _SAID_AS.get(value, value)))
        elif facts and line.strip() and not line.startswith("- "):
            last = facts[-1]  # a value that runs over several lines
            facts[-1] = Fact(last.key, last.noun, f"{last.value}\n{line.strip()}")
    return UserPrompt(task, facts)


def opening_of(task: str) -> str:
    """The user's first message: the task in the first person (as a reference trajectory's)."""
    if not task.strip():
        return DEFAULT_OPENING
    return opening_message(SimpleNamespace(task=task, mode="conversational"))  # type: ignore[arg-type]


def user_reply(prompt: UserPrompt, said: list[str], agent: str) -> str:
    """The user's next message, having ``said`` its earlier ones, to the agent's ``agent``."""
    if not said:
        return opening_of(prompt.task)
    question = _question_of(agent)
    if question is None:
        return STOP_MARKER
    which = _WHICH.search(agent)  # "I found more than one member by that name. Which one …?"
    asked = _question_of(_WHICH.sub("", agent)) if which else question
    things = _things_asked(asked) if asked else []
    if which:
        plain = _answer(prompt.facts, said, things, len(said) - 1, also=True) if things else ""
        meant = next((f for f in prompt.facts if f.noun == which["noun"] + WHICH), None)
        told = the_one(say_value(meant.value)) if meant else UNKNOWN
        return f"{told} {plain}".strip()
    if things:
        return _answer(prompt.facts, said, things, turn=len(said) - 1)
    if _CLOSING.search(question):
        return STOP_MARKER
    return CONFIRM if _CONFIRMING.search(question) else UNKNOWN


def _question_of(text: str) -> str | None:
    """The agent's message from its first question on, or None when it asks nothing."""
    if "?" not in text:
        return None
    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    first = next(i for i, s in enumerate(sentences) if "?" in s)
    return " ".join(sentences[first:])


def _things_asked(question: str) -> list[str]:
    """The nouns a question asks for, as it names them ("patient id", "date")."""
    for pattern in _ASKS:
        found = pattern.search(question)
        if found:
            parts = _SPLIT.split(things_of_clauses(found.group("things").strip()))
            return [_ARTICLE.sub("", part.strip()) for part in parts if part.strip()]
    return []


def _answer(
    facts: list[Fact], said: list[str], things: list[str], turn: int, also: bool = False
) -> str:
    ledger = FactLedger(facts)
    for text in said:
        ledger.hear(text)
    latest = FactLedger(facts, said=[said[-1].casefold()])
    anchor = max((i for i, f in enumerate(facts) if latest.is_said(f.value)), default=-1)
    known: list[tuple[str, Any]] = []
    unknown: list[str] = []
    chosen: list[Fact] = []
    for thing in things:
        thing = thing.removeprefix("number of ")  # "the number of seats": the seats
        fact = _fact_for(ledger, thing, chosen, anchor)
        if fact is None:
            unknown.append(thing)
        else:
            chosen.append(fact)
            known.append((thing, said_as(fact.key, fact.value)))
    if not known:
        return UNKNOWN
    answer = answer_with(known, turn, also)
    if unknown:
        answer += f" I'm sorry, I don't know the {join_words(unknown)}."
    return answer


def _fact_for(ledger: FactLedger, thing: str, chosen: list[Fact], anchor: int) -> Fact | None:
    """The fact that answers ``thing``: one whose noun is the thing's, else one whose noun ends
    it (a "to account id" is an "account id"). Of several not said yet
    (nor given in this answer), the first listed after the last one this answer gives, else
    after the last one of the user's latest message (``anchor``), else the first; when all are
    said, the first. (Facts are listed in the order the request needs them.)"""
    wanted = {_plain(thing), _plain(noun_of(thing))}
    matching = (
        [f for f in ledger.facts if _plain(f.noun) in wanted]
        # as the reference says a noun: "the work order number" asks for the "work order id"
        or [f for f in ledger.facts if _plain(spoken_noun(f.noun)) in wanted]
        or [f for f in ledger.facts if any(w.endswith(f" {_plain(f.noun)}") for w in wanted)]
    )
    fresh = [f for f in matching if f not in chosen and not ledger.is_said(f.value)]
    if chosen:
        anchor = ledger.facts.index(chosen[-1])
    later = [f for f in fresh if ledger.facts.index(f) > anchor]
    return (later or fresh or matching or [None])[0]


def _plain(noun: str) -> str:
    """A noun as facts are named: "the doctor's name" asks for the fact "doctor name"."""
    return " ".join(re.sub(r"'s\b", "", noun.casefold()).split())
