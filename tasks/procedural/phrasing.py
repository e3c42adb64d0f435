"""Task text and user facts for a sampled chain, in the user's voice, with no tool names.

Each state-change step is phrased from one of its manifest templates (placeholders ``{arg}`` or
``{arg.label}``), filled with the values the chain used; an argument the template leaves out is
appended, because a check may verify it and the agent can only do what it was told. A
conversational scenario keeps the details out of the opening request and hands them to the
simulated user as ``user_facts``.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from envmill.tasks.procedural.chains import ArgMention, ChainStep
from envmill.tasks.procedural.derive_checks import words_of

PLACEHOLDER = re.compile(r"\{(\w+)(\.label)?\}")
OPENERS = (
    "Hi!",
    "Hello, I need help.",
    "Hi there.",
    "Hello.",
    "Good morning!",
    "Hey, quick request.",
    "Hi, could you help me?",
    "",
)
CLOSERS = ("Thanks!", "Thank you.", "Thanks a lot.", "", "")
CONVERSATION_OPENINGS = (
    "I need to sort out my {entity}.",
    "I need some help with my {entity}.",
    "Hi, I have a request about my {entity}.",
    "Hello, can you help me with my {entity}?",
)
FULL_REQUEST_KEY = "full request"
VAGUE_NOUNS = {"int": "number", "float": "amount", "date": "date", "datetime": "time"}


def phrase_task(
    steps: list[ChainStep], rng: random.Random, mode: str, tool_names: list[str]
) -> tuple[str, dict[str, Any]]:
    """The task text and user facts for ``mode`` (``non_conversational`` or ``conversational``)."""
    detailed = [phrase_step(step, rng) for step in steps]
    request = scrub_tool_names(compose_clauses(detailed, rng), tool_names)
    if mode != "conversational":
        opener, closer = rng.choice(OPENERS), rng.choice(CLOSERS)
        return " ".join(part for part in (opener, request, closer) if part), {}
    goals = [phrase_step(step, rng, vague=True) for step in steps]
    opening = rng.choice(CONVERSATION_OPENINGS).format(entity=_entity_words(steps[0]))
    goal = compose_clauses(goals, rng)
    task = scrub_tool_names(f"{opening} {goal}", tool_names)
    facts = collect_user_facts(steps)
    facts[FULL_REQUEST_KEY] = request
    return task, facts


def phrase_step(step: ChainStep, rng: random.Random, *, vague: bool = False) -> str:
    """One clause for a step: a template filled with values (or, when vague, with references)."""
    mentions = {m.name: m for m in step.mentions}
    usable = [p for p in step.manifest.phrases if _names_in(p) <= set(mentions)]
    template = rng.choice(usable) if usable else _fallback_template(step)
    used = _names_in(template)
    both = {
        name for name in used if "{" + name + "}" in template and "{" + name + ".label}" in template
    }
    fill = _vague_text if vague else _exact_text

    def replace(match: re.Match[str]) -> str:
        mention, is_label = mentions[match.group(1)], bool(match.group(2))
        return fill(mention, is_label or (mention.by_label and mention.name not in both))

    clause = PLACEHOLDER.sub(replace, template).strip().rstrip(".!?")
    if vague:  # "return loan the loan" -> "return the loan"
        for noun in sorted({_mention_entity(m) for m in step.mentions if m.source == "entity_id"}):
            clause = re.sub(rf"\b{re.escape(noun)} the {re.escape(noun)}\b", f"the {noun}", clause)
    extras = [m for m in step.mentions if m.name not in used]
    if extras and not vague:
        clause += ", " + " and ".join(_extra_text(m) for m in extras)
    return clause


def compose_clauses(clauses: list[str], rng: random.Random) -> str:
    """Join clauses into natural sentences ("First, …; then …", "Also, …")."""
    if len(clauses) == 1:
        return _cap(clauses[0]) + "."
    if len(clauses) == 2:
        first, second = clauses
        pattern = rng.choice(
            (
                "First, {a}; then {b}.",
                "{A}, and then {b}.",
                "{A}. Also, {b}.",
                "{A}. After that, {b}.",
            )
        )
        return pattern.format(a=first, b=second, A=_cap(first))
    if rng.random() < 0.5:
        middle = "".join(f"; then {c}" for c in clauses[1:-1])
        return f"First, {clauses[0]}{middle}; and finally {clauses[-1]}."
    joiners = ("Then", "After that,", "Also,", "Next,")
    rest = " ".join(f"{rng.choice(joiners)} {c}." for c in clauses[1:])
    return f"{_cap(clauses[0])}. {rest}"


def collect_user_facts(steps: list[ChainStep]) -> dict[str, Any]:
    """What a simulated user may reveal: the labels, ids, amounts and dates the chain used."""
    facts: dict[str, Any] = {}
    for step in steps:
        for mention in step.mentions:
            for key, value in _facts_of(mention):
                _put_fact(facts, key, value)
    return facts


def scrub_tool_names(text: str, tool_names: list[str]) -> str:
    """Replace any tool identifier a template leaked with plain words (``cancel_order``)."""
    for name in sorted(tool_names, key=len, reverse=True):
        if "_" in name:
            text = re.sub(rf"\b{re.escape(name)}\b", words_of(name), text, flags=re.IGNORECASE)
    return text


def _facts_of(mention: ArgMention) -> list[tuple[str, Any]]:
    if mention.source != "entity_id":
        return [(words_of(mention.name), mention.value)]
    entity = _mention_entity(mention)
    label_key = f"{entity} {words_of(mention.label_field or 'name')}"
    if mention.by_label:
        return [(label_key, mention.label)]
    pairs: list[tuple[str, Any]] = [(f"{entity} id", mention.value)]
    return pairs + ([(label_key, mention.label)] if mention.label else [])


def _put_fact(facts: dict[str, Any], key: str, value: Any) -> None:
    """Add a fact; a second, different value under the same name gets a numbered key."""
    candidate, number = key, 1
    while candidate in facts:
        if facts[candidate] == value:
            return
        number += 1
        candidate = f"{key} {number}"
    facts[candidate] = value


def _exact_text(mention: ArgMention, as_label: bool) -> str:
    """The value; for an entity, its label when the task names it by label, else its id."""
    if mention.source != "entity_id":
        return format_value(mention.value)
    if not as_label:
        return str(mention.value)
    if mention.by_label:
        return str(mention.label)
    return f"{mention.label} ({mention.value})" if mention.label else str(mention.value)


def _vague_text(mention: ArgMention, as_label: bool) -> str:
    """A reference that leaves the value to the conversation ("the date I have in mind")."""
    if mention.source == "entity_id":
        return f"the {_mention_entity(mention)}"
    noun = VAGUE_NOUNS.get(mention.source) or words_of(mention.name)
    return f"the {noun} I have in mind"


def _extra_text(mention: ArgMention) -> str:
    if mention.source == "entity_id":
        return f"for the {_mention_entity(mention)} {_exact_text(mention, True)}"
    return f"with the {words_of(mention.name)} set to {format_value(mention.value)}"


def format_value(value: Any) -> str:
    """A value as a user would write it: plain text, numbers without noise, yes/no for booleans."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        text = f"{value:.2f}".rstrip("0").rstrip(".")
        return text if float(text) == value else repr(value)
    if isinstance(value, str | int):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _fallback_template(step: ChainStep) -> str:
    """Used when the manifest has no usable phrase: the tool's words and its main entity."""
    manifest = step.manifest
    target = next((m for m in step.mentions if m.entity == manifest.entity), None)
    if target is None:
        target = next((m for m in step.mentions if m.source == "entity_id"), None)
    if target is None:
        return f"please {words_of(manifest.tool)}"
    return f"please {words_of(manifest.tool)} {{{target.name}.label}}"


def _names_in(template: str) -> set[str]:
    return {match.group(1) for match in PLACEHOLDER.finditer(template)}


def _mention_entity(mention: ArgMention) -> str:
    if mention.entity:
        return words_of(mention.entity)
    return words_of(re.sub(r"_?ids?$", "", mention.name) or mention.name)


def _entity_words(step: ChainStep) -> str:
    return words_of(step.manifest.entity) or "account"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]
