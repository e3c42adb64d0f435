"""Ambiguous names: two records share the label a task uses; a second attribute tells them apart.

After a chain whose step names a record by label (with a find call), another record the chain
never touches is given the same label in the initial and final states. The task then says
"Maria Lopez (the one whose email is …)": the reference's find returns both (checked by running
it on the edited state) and the attribute picks the right one. The attribute is one only the
target has among the namesakes, and the chain does not change it.
"""

from __future__ import annotations

import copy
import random
import re
from typing import Any

from envmill.tasks.backends.procedural.checks.derive import words_of
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment
from envmill.tasks.backends.procedural.phrasing.lookup_words import say
from envmill.tasks.backends.procedural.scenarios.chains import (
    ArgMention,
    Chain,
    _ChainSampler,
    _value_at,
)
from envmill.tasks.backends.procedural.scenarios.lookups import shown, sold_by_name
from envmill.tasks.backends.procedural.spec.rules import Unique
from envmill.tasks.backends.procedural.state.contact import email_for
from envmill.tasks.core.facts import name_owner
from envmill.tasks.core.field_words import field_noun, said_apart
from envmill.tasks.core.statekit import diff_states
from envmill.tasks.sandbox import ToolEpisode

MAX_LABEL_CHARS = 40
# labels no two records share in life (two cars never have one plate): no namesakes for them
UNIQUE_LABEL = re.compile(
    r"(?:^|_)(?:plate|email|phone|number|code|sku|serial|vin|tag|isbn|iban|msisdn)(?:_|$)"
)


class NamedSampler(_ChainSampler):
    """A chain whose first step names a record by label after a lookup (for a namesake)."""

    def _wants(self, mentions: list[ArgMention]) -> bool:
        return bool(self.chain.steps) or any(m.by_label for m in mentions)


def disambiguate(
    chain: Chain, compiled: CompiledEnvironment, episode: ToolEpisode, rng: random.Random
) -> bool:
    """Give another record the name a step's lookup uses, and make the task tell them apart by
    a second attribute; False (chain unchanged) when no step can be so."""
    unique = _declared_unique(compiled)
    mentions = [
        m
        for step in chain.steps
        for m in step.mentions
        if m.by_label
        and m.label
        and not UNIQUE_LABEL.search(m.label_field or "")
        and (m.entity, m.label_field) not in unique
    ]
    rng.shuffle(mentions)
    for mention in mentions:
        twin = _twin(chain, compiled, mention, rng)
        if twin is None:
            continue
        other, field = twin
        attr = compiled.entity_attrs[mention.entity or ""]
        initial, final = copy.deepcopy(chain.initial_state), copy.deepcopy(chain.final_state)
        tied = _tied_to_label(compiled, mention)  # as the target started, in both states
        target = chain.initial_state[attr][mention.value]
        for state in (initial, final):
            state[attr][other][mention.label_field] = mention.label
            state[attr][other].update({f: target[f] for f in tied if f in target})
            _own_contact(state[attr], other, str(mention.label))
        if not _finds_both(chain, episode, initial, mention, other):
            continue
        value = chain.initial_state[attr][mention.value][field]
        apart = said_apart(field, value, shown(field, value))  # "(the one on 19 Apr …)"
        hint = (
            f"{mention.label} (the one {apart})"
            if apart
            else say(
                _hint_key(compiled, mention.entity or "", field, value),
                rng,
                label=mention.label,
                entity=words_of(mention.entity or ""),
                field=_said_field(field),
                value=shown(field, value),
            )
        )
        chain.initial_state, chain.final_state = initial, final
        for step in chain.steps:
            step.mentions = [
                _with_hint(m, hint) if m.value == mention.value and m.by_label else m
                for m in step.mentions
            ]
        return True
    return False


def _declared_unique(compiled: CompiledEnvironment) -> set[tuple[str | None, str | None]]:
    """(entity, field) pairs a rule keeps distinct ("Each matter has a distinct title"): two
    records sharing such a name break the policy the agent is given (round 32)."""
    return {
        (rule.entity, rule.field)
        for entity in compiled.spec.entities.values()
        for operation in entity.operations
        for rule in operation.preconditions
        if isinstance(rule, Unique)
    }


def _own_contact(records: dict[Any, Any], other: Any, name: str) -> None:
    """The renamed record's email made from its new name, like every other one: an email that
    fits no name would give the decoy away (a policy learns to pick the one whose email
    matches)."""
    record = records[other]
    taken = {str(r.get(f)) for r in records.values() if isinstance(r, dict) for f in r}
    rng = random.Random(f"namesake:{other}:{name}")
    for field, value in list(record.items()):
        if "email" not in field or not isinstance(value, str):
            continue
        for attempt in range(10):
            fresh = email_for(name, rng, attempt)
            if fresh not in taken:
                record[field] = fresh
                break


def _twin(chain: Chain, compiled, mention: ArgMention, rng) -> tuple[Any, str] | None:
    """Another record to share ``mention``'s label, and a field that tells them apart. Only
    what the examples tie to the label is shared: a record that happens to hold the target's
    example values untied to it (85000 and 734 for two Pamela Austins) would read as a copy."""
    attr = compiled.entity_attrs.get(mention.entity or "", "")
    records = chain.initial_state.get(attr) or {}
    target = records.get(mention.value)
    if not isinstance(target, dict):
        return None
    used = {v for step in chain.solution for v in step.arguments.values() if isinstance(v, str)}
    touched = {tuple(c["path"][:2]) for c in diff_states(chain.initial_state, chain.final_state)}
    tied = _tied_to_label(compiled, mention)
    copied = _example_fields(compiled, mention) - tied
    others = [
        k
        for k in sorted(records, key=str)
        if k not in used and (attr, k) not in touched and not _copies(records[k], target, copied)
    ]
    # a twin in the target's own status: "one of the two Kenneth Roses is already cancelled"
    # tells them apart before anyone asks (round 39), and a completed or draft show beside the
    # one on sale is no choice to ask the user about (round 54, a breaker's)
    others = [k for k in others if records[k].get("status") == target.get("status")]
    rng.shuffle(others)
    for other in others:
        fields = [f for f in _telling_fields(records, target, mention, other) if f not in tied]
        fields = [
            f for f in fields if _value_at(chain.final_state, [attr, mention.value, f]) == target[f]
        ]
        if fields:
            return other, rng.choice(fields)
    return None


def _copies(record: dict, target: dict, fields: set[str]) -> bool:
    """The record holds every one of the target's values of ``fields`` (one example twice)."""
    held = [f for f in fields if target.get(f) is not None]
    return bool(held) and all(record.get(f) == target[f] for f in held)


def _example_fields(compiled: CompiledEnvironment, mention: ArgMention) -> set[str]:
    """Fields the entity's examples fill together (a borrower's income and FICO score)."""
    entity = compiled.spec.entities.get(mention.entity or "")
    return {f for e in (entity.examples if entity else []) for f in e}


def _tied_to_label(compiled: CompiledEnvironment, mention: ArgMention) -> set[str]:
    """Fields the entity's examples keep with its label (an Air Filter is in filters): the
    namesake takes them too, and they never tell the two apart."""
    entity = compiled.spec.entities.get(mention.entity or "")
    examples = entity.examples if entity else []
    label = mention.label_field or ""
    return {f for e in examples if label in e for f in e if f != label}


def _telling_fields(records: dict, target: dict, mention: ArgMention, other: Any) -> list[str]:
    """Short fields whose value only the target has among the records that will share its
    label."""
    label_field = mention.label_field
    namesakes = [
        r
        for k, r in records.items()
        if k == other or str(r.get(label_field, "")).lower() == str(mention.label).lower()
    ]
    found = []
    for name, value in target.items():
        if name in (label_field, "id") or name.endswith("_id") or value is None:
            continue
        if not isinstance(value, str):  # "the one whose stock is 19", "my price is $308.34":
            continue  # a count or an amount is no one's way to say which (round 28)
        if name == "status" and sold_by_name(target):  # "Copper Watering Can (the active one)"
            continue  # is the shop's bookkeeping, not a buyer's words (round 38)
        if len(str(value)) > MAX_LABEL_CHARS:
            continue
        if sum(r.get(name) == value for r in namesakes) == 1:
            found.append(name)
    # "City Hall Garage (the open one)" reads as the system's bookkeeping (round 42): a status
    # tells apart only where nothing a person would say does
    return [n for n in found if n != "status"] or found


def _finds_both(chain: Chain, episode, state: dict, mention: ArgMention, other: Any) -> bool:
    """The reference's own lookup, run on the edited state, returns both namesakes."""
    lookups = [s for s in chain.solution if mention.label in s.arguments.values() and s.arguments]
    if not lookups or not episode.load_state(state).ok:
        return False
    outcome = episode.call(lookups[0].tool, dict(lookups[0].arguments))
    data = outcome.result.get("data") if outcome.succeeded else None
    text = repr(data)
    return repr(mention.value) in text and repr(other) in text


def _with_hint(mention: ArgMention, hint: str) -> ArgMention:
    return ArgMention(
        mention.name,
        mention.value,
        mention.source,
        mention.entity,
        mention.label,
        mention.label_field,
        by_label=True,
        hint=hint,
    )


def _said_field(field: str) -> str:
    """ "whose manager is Ann Lee", not "whose manager name is": a person's name field is said
    by whose name it is ("first name" stays: it says which name)."""
    noun = field_noun(field)
    return name_owner(noun) or noun


def _hint_key(compiled: CompiledEnvironment, entity: str, field: str, value: object) -> str:
    """How the second attribute is said: "(the active one)" for a status, "(the one with the
    team plan)" for another enum, "(whose email is …)" for anything else."""
    spec = compiled.spec.entities.get(entity)
    kind = spec.fields.get(field) if spec is not None else None
    if kind is None or not getattr(kind, "values", None) or value in ("none", "other", "unknown"):
        return "disambiguation"  # "(the one with the none loyalty tier)" says nothing
    if field in PLACES:  # "the one in the east region", not "the one with the east region"
        return "disambiguation_place"
    return "disambiguation_status" if field == "status" else "disambiguation_enum"


PLACES = frozenset(
    "region district zone area city county neighborhood department branch floor wing ward".split()
)
