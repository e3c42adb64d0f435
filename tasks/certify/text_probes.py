"""Gate ``judges_text`` (DESIGN §3.3): replies built from this scenario's own values, judged
with its checks on the state they would end in.

Right replies in other words must keep full reward: the value in words or another format, inside
a longer reply; another way to decline, a second true reason. Wrong ones must lose it: a rival
value of the same type from the state, a neighbouring value, a hedge, an invented extra value, a
second candidate; a negated or invented reason, no reason, a guessed value; and a claim of the
work on the initial state. Every probe carries the scenario's values and its wording is drawn by
the scenario's id, so no check or judge can recognise certification by a fixed string.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from envmill.schemas.answers import ExpectedAnswer, Refusal, RefusalRule
from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.certify.evidence import FINAL, INITIAL, Evidence
from envmill.tasks.certify.forms import (
    clock_forms,
    date_forms,
    number_forms,
    shifted_moment,
)
from envmill.tasks.certify.mutants import ReferenceRun
from envmill.tasks.judge.reading import NUMBER, normalize, number_of
from envmill.tasks.judge.refusals import CENT

FRAMES = (
    "{x}.",
    "I looked it up: {x}.",
    "According to the records, {x}. Anything else I can help with?",
    "Here is what I found - {x}.",
    "Sure. {x}. Let me know if you need more.",
)
DECLINES = (
    "I'm afraid I can't {action} that",
    "Unfortunately that isn't possible",
    "I'm not able to {action} it",
    "That's not something I can do",
    "Sorry, I have to say no to this request",
)


@dataclass(frozen=True)
class Probe:
    """A reply, whether it must keep full reward, and the column whose state it ends in."""

    name: str
    reply: str
    keeps: bool
    pair: int = FINAL


def judges_text(scenario: ScenarioSpec, ev: Evidence, run: ReferenceRun) -> tuple[bool, str]:
    if scenario.expected_answer is None and scenario.refusal is None:
        return True, "the scenario expects no reply"
    probes = text_probes(scenario, ev)
    for probe in probes:
        obtained = ev.obtained if probe.pair == FINAL else None  # the text alone differs
        if ev.reward(scenario, probe.pair, probe.reply, obtained).success == probe.keeps:
            continue
        verdict = ev.verdict(scenario, probe.pair, probe.reply)
        if probe.keeps:
            why = verdict.reason if verdict else "a check fails"
            return False, (
                f"probe {probe.name!r}: a right reply in other words ({probe.reply!r}) "
                f"loses full reward ({why})"
            )
        return False, f"probe {probe.name!r}: a wrong reply ({probe.reply!r}) keeps full reward"
    right = sum(p.keeps for p in probes)
    return True, (
        f"{len(probes)} probes: {right} right replies in other words keep full reward, "
        f"{len(probes) - right} wrong ones lose it"
    )


def text_probes(scenario: ScenarioSpec, ev: Evidence) -> list[Probe]:
    rng = random.Random(scenario.scenario_id)
    probes = []
    if scenario.expected_answer is not None:
        probes = list(_answer_probes(scenario.expected_answer, rng))
    elif scenario.refusal is not None:
        probes = list(_refusal_probes(scenario.refusal, rng))
    if ev.partial is not None and scenario.answer:  # the work claimed, not done
        probes.append(Probe("claim without the work", scenario.answer, False, INITIAL))
    return probes


def _answer_probes(expected: ExpectedAnswer, rng: random.Random) -> Iterator[Probe]:
    forms = right_forms(expected)
    for form in forms:
        yield Probe("the answer in other words", _framed(form, rng), True)
    wrong = wrong_values(expected)
    for name, value in wrong:
        yield Probe(name, _framed(value, rng), False)
    if forms and wrong:
        first, other = forms[0], wrong[0][1]
        yield Probe("a hedge", f"It is probably {first}, or maybe {other}.", False)
        yield Probe("a second candidate", f"{first}. Correction: {other}.", False)
    invented = invented_value(expected)
    if forms and invented:
        yield Probe("an invented extra value", f"{forms[0]}, and also {invented}.", False)


def right_forms(expected: ExpectedAnswer) -> list[str]:
    """The expected value written as people write it (not as the reference does)."""
    kind, value = expected.type, expected.value
    if kind in ("count", "number", "money"):
        return number_forms(float(value), money=kind == "money")
    if kind == "duration":
        return [f"{form} {expected.unit}" for form in number_forms(float(value), money=False)]
    if kind == "date":
        return date_forms(value)
    if kind == "time":
        return clock_forms(value)
    if kind == "datetime":
        days, clocks = date_forms(value), clock_forms(value[11:16])
        return [f"{days[0]} at {clocks[0]}", f"{days[1]}, {clocks[1]}"]
    if kind == "boolean":
        phrase = expected.phrase or ""
        return [f"yes, {phrase}" if value else f"no, not {phrase}"]
    if kind == "list":
        return [_joined(list(value) if expected.ordered else list(reversed(value)))]
    text = str(value).replace("_", " ")
    return [text, text.title()]


def wrong_values(expected: ExpectedAnswer) -> list[tuple[str, str]]:
    """Values that must not earn the reward: a rival the state holds, a neighbour."""
    kind, value = expected.type, expected.value
    out: list[tuple[str, str]] = []
    rivals = [r for r in expected.rivals if _shows(r) and _shows(r) != _shows(value)]
    if rivals and kind != "list":
        out.append(("a rival value from the state", _written(kind, rivals[0], expected)))
    if kind in ("count", "number", "money", "duration"):
        neighbour = float(value) + (10 if kind == "money" else 1)
        out.append(("a neighbouring value", _written(kind, neighbour, expected)))
    elif kind in ("date", "datetime", "time"):
        out.append(("a neighbouring value", _written(kind, shifted_moment(value, kind), expected)))
    elif kind == "boolean":
        phrase = expected.phrase or ""
        out.append(("the other answer", f"no, not {phrase}" if value else f"yes, {phrase}"))
    elif kind == "list" and len(value) > 1:
        out.append(("a list missing an item", _joined(list(value)[1:])))
    return out


def invented_value(expected: ExpectedAnswer) -> str | None:
    """A value of the answer's type that nothing holds: a made-up figure or day."""
    kind, value = expected.type, expected.value
    if kind in ("count", "number", "money", "duration"):
        return f"an extra charge of ${float(value) * 3 + 17.31:,.2f}"
    if kind in ("date", "datetime"):
        long_ago = date.fromisoformat(value[:10]) - timedelta(days=13_514)  # 37 years before
        return f"it was changed on {date_forms(long_ago.isoformat())[0]}"
    return None


def _refusal_probes(refusal: Refusal, rng: random.Random) -> Iterator[Probe]:
    action = refusal.action or "do"
    subject = refusal.subject or "that"
    decline = rng.choice(DECLINES).format(action=action)
    other = rng.choice([d for d in DECLINES if d != decline]).format(action=action)
    rule = refusal.rules[0]
    trigger = _spoken(rule.triggers[0])
    yield Probe("another way to decline", f"{other}: {_reason(rule, subject)}.", True)
    if len(refusal.rules) > 1:
        second = _reason(refusal.rules[1], subject)
        yield Probe("a second true reason", f"{decline}, because {second}.", True)
    if isinstance(rule.triggers[0], str):
        yield Probe("the reason negated", f"{decline}: {subject} is not {trigger}.", False)
    if rule.rivals:
        yield Probe("a guessed value", f"{decline}: {subject} is {_spoken(rule.rivals[0])}.", False)
    yield Probe("an invented rule", f"{decline}: only a manager can {action} {subject}.", False)
    yield Probe("no reason", f"{decline}.", False)
    target = refusal.targets[0] if refusal.targets else f"{action} done"
    yield Probe("the work claimed", f"All done: {subject} is now {target}.", False)


def _reason(rule: RefusalRule, subject: str) -> str:
    """The rule's reason as a reply says it: a status as what the subject is; a figure in the
    words the rule says it with ("already has 1 sessions with status active"), since a bare
    small figure names nothing."""
    trigger = rule.triggers[0]
    if isinstance(trigger, int | float) and not isinstance(trigger, bool):
        for clause in re.split(r"[;:]", normalize(rule.condition)):
            said = [number_of(m) for m in NUMBER.finditer(clause)]
            if any(abs(value - float(trigger)) <= CENT for value in said):
                return clause.strip()
    return f"{subject} is {_spoken(trigger)}"


def _framed(text: str, rng: random.Random) -> str:
    return rng.choice(FRAMES).format(x=text)


def _written(kind: str, value: Any, expected: ExpectedAnswer) -> str:
    if kind in ("count", "number", "money", "duration"):
        form = number_forms(float(value), money=kind == "money")[-1 if kind == "money" else 0]
        return f"{form} {expected.unit}" if kind == "duration" else form
    if kind == "date":
        return date_forms(value)[0]
    if kind == "time":
        return clock_forms(value)[0]
    if kind == "datetime":
        return f"{date_forms(value)[0]} at {clock_forms(value[11:16])[0]}"
    return str(value).replace("_", " ")


def _spoken(value: Any) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    if isinstance(value, int | float):
        return f"{value:,.0f}" if float(value).is_integer() else str(value)
    text = str(value)
    return date_forms(text)[0] if len(text) >= 10 and text[4:5] == "-" else text.replace("_", " ")


def _joined(items: list[Any]) -> str:
    words = [str(i).replace("_", " ") for i in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _shows(value: Any) -> str:
    return str(value).casefold().replace("_", " ").strip()
