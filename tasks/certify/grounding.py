"""Whether every argument of a call was visible to the agent before it (DESIGN §3.3, `grounded`).

A trained agent copies its references: one that passes a hospital id no message showed learns to
invent ids. So each argument value must come from what the agent had read by then: the system
message, the user's words, an earlier tool result (its values and its keys, which are often
ids), or a tool's schema (enum values, defaults, the words of its descriptions but not their
figures or codes, which are examples, not records). A value the agent could convert counts:
"23 Dec 2025" grounds ``2025-12-23``, "2:30 pm" grounds ``14:30``, "two" grounds ``2``, "checked
in" grounds ``checked_in``. Text the agent writes itself (a note, a reason: several words, no
digits) is grounded when most of its words were seen; a code, a name or a figure must have
been seen. One computed figure counts: a sum of money that is the difference between an amount
the user gave (with its currency) and one a tool result showed ("bring the retainer to
$8,000": $1,686.70 onto a balance of $6,313.30), and only for a money argument.

The same ``Sight`` serves certification (from a scenario and its step results) and any stored
trajectory (from its messages), so a corpus can be measured by the rule that certifies it.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from envmill.schemas.ids import canonical_json
from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.core.facts import (
    FactLedger,
    argument_leaves,
    ask_and_answer,
    flatten_facts,
)
from envmill.tasks.core.field_words import COUNT_NAMES, field_noun, is_money_field, singular
from envmill.tasks.core.opening import opening_message
from envmill.tasks.core.recent import Recent
from envmill.tasks.core.system_message import TIME_KEYS
from envmill.tasks.judge.reading import ISO_MOMENT, normalize, read

MAX_VALUES = 20_000  # a tool result is bounded; so is what one sight keeps of it
MAX_DEPTH = 12
AUTHORED_SHARE = 0.5  # of an authored text's words, the share that must have been seen
WORD = re.compile(r"[a-z][a-z'-]{2,}")
STOP_WORDS = frozenset(
    "the and for with from that this into onto over under about after before their there"
    " have has had was were are is been being will would could should".split()
)


@dataclass(frozen=True)
class Unseen:
    """An argument value nothing before the call showed."""

    step: int  # 0-based index of the call
    tool: str
    argument: str
    value: Any

    def __str__(self) -> str:
        return (
            f"step {self.step + 1} ({self.tool}) passes {self.argument}={self.value!r}, "
            "which the agent had not seen"
        )


COMPOUND_NUMBER = re.compile(r"(?<![\w.,-])(\d+(?:\.\d+)?)-[a-z]")


@dataclass
class Sight:
    """Everything the agent has seen so far, kept in the forms values are compared in."""

    today: date | None = None
    texts: list[str] = field(default_factory=list)  # normalized
    values: set[str] = field(default_factory=set)  # normalized scalars and keys
    numbers: set[float] = field(default_factory=set)
    dates: set[str] = field(default_factory=set)
    times: set[str] = field(default_factory=set)
    words: set[str] = field(default_factory=set)
    marks: set[float] = field(default_factory=set)  # amounts of money the user gave
    heard: list[str] = field(default_factory=list)  # what the user said, normalized
    results: list[float] = field(default_factory=list)  # numbers tool results showed
    dated: list[str] = field(default_factory=list)  # texts read whose dates depend on the day
    _sorted: bool = True

    def hear(self, text: str) -> None:
        """A message from the user: read, and its amounts kept as marks to measure from."""
        self.marks.update(self.read_text(text))
        self.heard.append(normalize(text))

    def read_text(self, text: str) -> list[float]:
        """A message the agent read: its words, and the values it states in any form; the
        amounts of money it states."""
        if not text:
            return []
        plain = normalize(text)
        self.texts.append(plain)
        self.words.update(WORD.findall(plain))
        reading = read(text, self.today)
        self.numbers.update(reading.numbers)
        # "the 60-credit pack" says 60, though a reply's "3-day" is no count the judge reads
        self.numbers.update(float(n) for n in COMPOUND_NUMBER.findall(plain))
        self.dates.update(reading.dates)
        self.times.update(reading.times)
        if reading.dated:
            self.dated.append(text)
        return reading.money

    def read_value(self, value: Any, depth: int = 0) -> None:
        """A structured value the agent read (a tool result): every scalar and key."""
        if depth > MAX_DEPTH or len(self.values) > MAX_VALUES:
            return
        if isinstance(value, int | float) and not isinstance(value, bool):
            if len(self.results) < MAX_VALUES:  # a number read, bounded as the values are
                self.results.append(float(value))
                self._sorted = False
        if isinstance(value, dict):
            for key, item in value.items():
                self._scalar(key)
                self.read_value(item, depth + 1)
        elif isinstance(value, list | tuple):
            for item in value:
                self.read_value(item, depth + 1)
        else:
            self._scalar(value)

    def add(self, other: Sight) -> None:
        """What ``other`` saw too (a schema's reading; its own day stays)."""
        self.texts += other.texts
        for name in ("values", "numbers", "dates", "times", "words", "marks"):
            getattr(self, name).update(getattr(other, name))
        self.heard += other.heard
        self.results += other.results
        self.dated += other.dated
        self._sorted = self._sorted and not other.results

    def read_tool_schema(self, schema: dict[str, Any]) -> None:
        """What a tool's schema tells: its enum values, defaults and the words of its
        descriptions ("status: scheduled or cancelled"), but no figure or code from them: an
        example there ("the lot id, e.g. LOT-001", "20% off") is not a record or an amount the
        agent looked up."""
        function = schema.get("function", schema)
        self.read_text(_without_figures(str(function.get("description") or "")))
        for spec in _parameter_specs(schema):
            self.read_text(_without_figures(str(spec.get("description") or "")))
            for option in spec.get("enum") or []:
                self._scalar(option)
            if "default" in spec:
                self._scalar(spec["default"])

    def unseen(self, arguments: dict[str, Any]) -> list[tuple[str, Any]]:
        """(argument, value) for each leaf of ``arguments`` the agent could not have known."""
        return [
            (name, value)
            for name, value in argument_leaves(arguments)
            if not self.grounds(name, value)
        ]

    def grounds(self, name: str, value: Any) -> bool:
        """Whether the agent could know ``value`` for the argument ``name``: seen, or an amount
        of money it works out (a mark the user gave less a number a result showed)."""
        if self.sees(value) or (is_money_field(name) and self._a_difference(value)):
            return True
        return value == 1 and not isinstance(value, bool) and self._one_said(name)

    def _one_said(self, name: str) -> bool:
        """The user said "a seat": seats=1. Only the user's words count ("A seat costs the
        fare" in the rules says no count), and only the noun itself, not a compound ("a credit
        purchase")."""
        noun = re.escape(singular(field_noun(name)))
        if field_noun(name) in COUNT_NAMES:  # "buy a ticket": quantity=1
            noun = "[a-z]{3,}"
        elif noun == re.escape(field_noun(name)):  # no plural ("weight"): no "a …" says it
            return False
        one = re.compile(rf"\b(?:a|an|one|single) {noun}\b(?!['-]|\s+{NOUN_AFTER})")
        return any(one.search(text) for text in self.heard)

    def _a_difference(self, value: Any) -> bool:
        """A positive amount that is a mark the user gave less a number a result showed, or
        the other way round (``results`` sorted: a bisection per mark)."""
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            return False
        if not self._sorted:
            self.results.sort()
            self._sorted = True
        for mark in self.marks:
            for seen in (mark - value, mark + value):
                at = bisect_left(self.results, seen - 0.005)
                if at < len(self.results) and self.results[at] <= seen + 0.005:
                    return True
        return False

    def sees(self, value: Any) -> bool:
        if value is None or isinstance(value, bool):
            return True  # a flag says nothing of where a value came from
        if isinstance(value, int | float):
            return self._sees_number(float(value))
        if not isinstance(value, str):
            return True
        text = normalize(value)
        if not text or text in self.values or self._mentioned(text):
            return True
        moment = ISO_MOMENT.fullmatch(text)
        if moment:
            return self._sees_moment(moment)
        if re.fullmatch(r"-?\d+(?:\.\d+)?", text):
            return self._sees_number(float(text))
        if _is_authored(text):
            words = [w for w in WORD.findall(text) if w not in STOP_WORDS]
            seen = sum(w in self.words for w in words)
            return bool(words) and seen >= AUTHORED_SHARE * len(words)
        return False

    def _scalar(self, value: Any) -> None:
        if value is None or isinstance(value, bool):
            return
        if isinstance(value, int | float):
            self.numbers.add(float(value))
            return
        text = normalize(str(value))
        self.values.add(text)
        self.words.update(WORD.findall(text))
        if re.fullmatch(r"-?\d+(?:\.\d+)?", text):
            self.numbers.add(float(text))
        moment = ISO_MOMENT.fullmatch(text)
        if moment:
            year, month, day, hour, minute = moment.groups()
            self.dates.add(f"{year}-{month}-{day}")
            if hour is not None:
                self.times.add(f"{hour}:{minute}")

    def _sees_number(self, number: float) -> bool:
        return any(abs(number - seen) < 0.005 for seen in self.numbers)

    def _sees_moment(self, moment: re.Match[str]) -> bool:
        year, month, day, hour, minute = moment.groups()
        if f"{year}-{month}-{day}" not in self.dates:
            return False
        return hour is None or f"{hour}:{minute}" in self.times

    def _mentioned(self, text: str) -> bool:
        """Said in a message as whole words ("ana ruiz", "checked in" for ``checked_in``)."""
        if len(text) < 2:
            return any(re.search(rf"(?<!\w){re.escape(text)}(?!\w)", t) for t in self.texts)
        holding = [t for t in self.texts if text in t]  # the pattern's premise, far cheaper
        if not holding:
            return False
        pattern = re.compile(rf"(?<![\w-]){re.escape(text)}(?![\w-]|\.\d)")
        return any(pattern.search(t) for t in holding)


def schema_sight(today: date | None, tools: list[dict[str, Any]]) -> Sight:
    """A new ``Sight`` of ``today`` that has read the tools' schemas (every scenario of an
    environment reads the same ones, so each is read once, without a day, and its reading
    added; only its texts that say a day relative to today are read again on the day)."""
    sight = Sight(today=today)
    for tool in tools:
        said = canonical_json(tool)
        schema = _SCHEMA_SIGHTS.get(said, lambda tool=tool: _read_tool_schema(tool))
        sight.add(schema)
        if today is not None and schema.dated:
            sight.dates.update(_dates_on(today, schema.dated))
    return sight


def _read_tool_schema(tool: dict[str, Any]) -> Sight:
    """What one tool's schema shows on no day in particular."""
    sight = Sight()
    sight.read_tool_schema(tool)
    return sight


def _dates_on(today: date, texts: list[str]) -> list[str]:
    """The days ``texts`` state on ``today``: the texts a reading found saying a day relative
    to it ("tomorrow", "March fifth", the one nearest the day), and only their dates (a reading
    on a day holds what one on none does, and those dates): figures are not read."""
    return [day for text in texts for day in read(text, today).dates]


_SCHEMA_SIGHTS: Recent[Sight] = Recent(256)  # tools: a few environments' worth


def ungrounded_reference(
    scenario: ScenarioSpec,
    results: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    system_message: str,
) -> list[Unseen]:
    """Every argument of the reference solution the agent could not have known, reading what its
    reference trajectory would show: the system message, the opening request, each later user
    message (``turns``) once it was sent (from its ``first_step`` on), in conversational mode
    each fact the reference asks for before the step that uses it, and earlier results."""
    sight = schema_sight(_day_of(scenario.initial_state), tools)
    sight.read_text(without_spelled_numbers(system_message))
    opening = opening_message(scenario)
    sight.hear(opening)
    conversational = scenario.mode == "conversational"
    ledger = FactLedger(flatten_facts(scenario.user_facts) if conversational else [])
    ledger.hear(opening)
    found: list[Unseen] = []
    later = list(scenario.turns)
    for index, (step, result) in enumerate(zip(scenario.reference_solution, results, strict=False)):
        while later and later[0].first_step <= index:  # the user's next message, now sent
            sight.hear(later[0].content)
            ledger.hear(later.pop(0).content)
        needed = ledger.needed_for(step)
        if needed:  # the reference asks, and the user answers with the values
            _, answer = ask_and_answer(needed, index)
            ledger.hear(answer, [fact for _, fact in needed])
            sight.hear(answer)
        found += [Unseen(index, step.tool, a, v) for a, v in sight.unseen(step.arguments)]
        sight.read_value(result)
        sight.read_text(canonical_json(result))
    return found


def ungrounded_trajectory(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[Unseen]:
    """Every tool-call argument of a stored conversation that no earlier message showed."""
    sight = schema_sight(_today_of(messages), tools)
    found: list[Unseen] = []
    step = 0
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            arguments = _arguments(function.get("arguments"))
            name = function.get("name", "")
            found += [Unseen(step, name, a, v) for a, v in sight.unseen(arguments)]
            step += 1
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str):
            sight.read_value(_json_or_text(content))
            sight.read_text(content)
        elif isinstance(content, str) and message.get("role") == "user":
            sight.hear(content)
        elif isinstance(content, str) and message.get("role") == "system":
            sight.read_text(without_spelled_numbers(content))
    return found


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    parsed = _json_or_text(raw if isinstance(raw, str) else "")
    return parsed if isinstance(parsed, dict) else {}


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _today_of(messages: list[dict[str, Any]]) -> date | None:
    for message in messages:
        if message.get("role") == "system":
            found = re.search(r"\b(\d{4}-\d{2}-\d{2})\b", str(message.get("content") or ""))
            if found:
                try:
                    return date.fromisoformat(found.group(1))
                except ValueError:
                    return None
    return None


def _day_of(state: dict[str, Any]) -> date | None:
    value = next((state[k] for k in TIME_KEYS if isinstance(state.get(k), str)), "")
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


def _is_authored(text: str) -> bool:
    """Prose the agent composes (a note, a reason), not a code or a name to be looked up."""
    return len(text.split()) >= 3 and not re.search(r"\d", text)


def _without_figures(text: str) -> str:
    """The text without any word that holds a digit (an id, an amount, a date), nor a number
    spelled out."""
    return without_spelled_numbers(
        " ".join(word for word in text.split() if not re.search(r"\d", word))
    )


def without_spelled_numbers(text: str) -> str:
    """A rule's "One reservation covers …", "at most one hour" is no count the user asked
    for: a policy's spelled numbers ground no argument (a breaker found 1 seen in 16 of 24
    domains that way)."""
    return SPELLED.sub(" ", text)


SPELLED = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"hundred|thousand|once|twice|single|first|second|third|dozen|half)\b",
    re.IGNORECASE,
)
# a word after the noun that makes it a compound's first half: "a credit purchase"
NOUN_AFTER = (
    r"(?!(?:on|for|in|at|to|from|with|and|or|please|that|which|so|because|the|my|your|our|this|"
    r"now|today|tomorrow|if|but|is|was|would|will|then)\b)[a-z]+"
)


def _parameter_specs(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The property specs of a tool schema, in OpenAI's function form or bare."""
    function = schema.get("function", schema)
    properties = (function.get("parameters") or {}).get("properties") or {}
    specs: list[dict[str, Any]] = []
    for spec in properties.values():
        if isinstance(spec, dict):
            specs.append(spec)
            items = spec.get("items")
            if isinstance(items, dict):
                specs.append(items)
    return specs
