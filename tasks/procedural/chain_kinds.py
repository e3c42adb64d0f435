"""Scenario kinds of the procedural chain sampler, chosen by the scenario's rng.

- ``change``: today's chain (records named by label or id);
- ``filtered_lookup`` / ``aggregate_lookup``: one record named by what a filtered list, or a
  count or total over its related records, reveals (:mod:`lookups`);
- ``disambiguation``: two records share the name the task uses; a second attribute tells them
  apart (the initial state is edited so, before certification ever sees it);
- ``created_chain``: a step acts on the record an earlier step created ("the new account");
- ``conditional``: "if the balance of X is at least $500, do A; otherwise, do B": the reference
  reads X, follows the branch the state makes true, and a check verifies B did not happen.

A kind that cannot be built for an environment or state falls back to the next one, down to
``change``; each try starts again from the same initial state.
"""

from __future__ import annotations

import copy
import math
import random
from typing import Any

from envmill.schemas.scenario import SolutionStep
from envmill.tasks.certify.generated import is_generated
from envmill.tasks.procedural.chains import (
    ArgMention,
    ArgumentDrawer,
    Chain,
    ChainStep,
    Condition,
    _ChainSampler,
    _reads_one,
    _value_at,
)
from envmill.tasks.procedural.derive_checks import words_of
from envmill.tasks.procedural.lookup_words import say
from envmill.tasks.procedural.lookups import LookupSampler, shown
from envmill.tasks.procedural.manifest import ArgManifest, CompiledEnvironment, ToolManifest
from envmill.tasks.sandbox import ToolEpisode
from envmill.tasks.statekit import diff_states

KINDS = (
    "change",
    "filtered_lookup",
    "aggregate_lookup",
    "disambiguation",
    "created_chain",
    "conditional",
)
SHARES = (0.25, 0.15, 0.15, 0.15, 0.15, 0.15)
MAX_TRIES_PER_KIND = 30


def choose_kind(rng: random.Random) -> str:
    """A scenario kind by the shares above."""
    return rng.choices(KINDS, weights=SHARES)[0]


def fallbacks(kind: str) -> list[str]:
    """``kind``, then the kinds after it, then ``change``."""
    if kind == "change":
        return ["change"]
    return [*KINDS[KINDS.index(kind) :], "change"]


def sample_kind_chain(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    rng: random.Random,
    faker: Any,
    target_len: int,
    kind: str,
) -> Chain | None:
    """A chain of ``kind`` (or of the first fallback that can be built); None when not even a
    plain chain can be. ``Chain.kind`` says which kind was built."""
    initial = episode.state()
    for tried in fallbacks(kind):
        if episode.state() != initial:
            episode.load_state(initial)
        chain = _sample_one(compiled, episode, rng, faker, target_len, tried)
        if chain is not None:
            chain.kind = tried
            return chain
    return None


def _sample_one(compiled, episode, rng, faker, target_len, kind) -> Chain | None:
    drawer = ArgumentDrawer(compiled, rng, faker)
    args = (compiled, episode, rng, drawer)
    if kind == "change":
        return _ChainSampler(*args).sample(target_len, MAX_TRIES_PER_KIND)
    if kind in ("filtered_lookup", "aggregate_lookup"):
        sampler = LookupSampler(*args, mode=kind.split("_")[0])
        chain = sampler.sample(target_len, MAX_TRIES_PER_KIND)
        return chain if sampler.done else None
    if kind == "created_chain":
        sampler = CreatedSampler(*args)
        chain = sampler.sample(max(target_len, 2), MAX_TRIES_PER_KIND)
        return chain if sampler.used else None
    if kind == "conditional":
        return ConditionalSampler(*args).sample(target_len, MAX_TRIES_PER_KIND)
    chain = NamedSampler(*args).sample(target_len, MAX_TRIES_PER_KIND)
    return chain if chain is not None and disambiguate(chain, compiled, episode, rng) else None


class NamedSampler(_ChainSampler):
    """A chain whose first step names a record by label after a lookup (for a namesake)."""

    def _wants(self, mentions: list[ArgMention]) -> bool:
        return bool(self.chain.steps) or any(m.by_label for m in mentions)


class CreatedSampler(_ChainSampler):
    """First a create, then a step on the record it made, named "the new …" (not by an id the
    task could not know)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.creators = [t for t in self.changers if _creates(t) and self._users_of(t.entity)]
        self.created: tuple[str, Any] | None = None
        self.used = False

    def _users_of(self, entity: str) -> list[ToolManifest]:
        return [t for t in self.changers if _id_arg(t, entity) is not None]

    def _choose_changer(self) -> ToolManifest | None:
        if not self.chain.steps:
            return self.rng.choice(self.creators) if self.creators else None
        if not self.used and self.created is not None:
            return self.rng.choice(self._users_of(self.created[0]))
        return super()._choose_changer()

    def _adjust(self, manifest: ToolManifest, arguments: dict[str, Any]) -> bool:
        if self.used or self.created is None or not self.chain.steps:
            return True
        arg = _id_arg(manifest, self.created[0])
        if arg is None:
            return False
        arguments[arg.name] = self.created[1]
        return True

    def _special_mention(self, arg: ArgManifest, value: Any, calls: list) -> ArgMention | None:
        if self.created is None or value != self.created[1] or arg.entity != self.created[0]:
            return None
        described = say("created", self.rng, entity=words_of(arg.entity))
        return ArgMention(arg.name, value, arg.source, arg.entity, described=described)

    def _kept(self, step: ChainStep) -> None:
        if self.created is None:
            attr = self.compiled.entity_attrs.get(step.manifest.entity, "")
            added = [c["path"][1] for c in step.changes if _is_add(c) and c["path"][0] == attr]
            self.created = (step.manifest.entity, added[0]) if added else None
        elif any(m.described for m in step.mentions):
            self.used = True

    def sample(self, target_len: int, max_attempts: int) -> Chain | None:
        chain = super().sample(target_len, max_attempts)
        return chain if self.created is not None else None


class ConditionalSampler(_ChainSampler):
    """The first step is conditional: a branch not taken (run, then rolled back) and a test on
    a record the taken step names, whose outcome the state decides."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.otherwise: tuple[ChainStep, dict[str, Any]] | None = None

    def sample(self, target_len: int, max_attempts: int) -> Chain | None:
        for _ in range(max_attempts):
            self.otherwise = self._draw_otherwise()
            if self.otherwise is not None:
                break
        if self.otherwise is None:
            return None
        chain = super().sample(target_len, max_attempts)
        if chain is None or chain.steps[0].condition is None:
            return None
        return chain if _not_done(self.otherwise[0], chain.final_state) else None

    def _draw_otherwise(self) -> tuple[ChainStep, dict[str, Any]] | None:
        """A state change that would succeed now; rolled back, with its mentions and state."""
        manifest = self.rng.choice(self.changers)
        arguments = self.drawer.draw_arguments(manifest, self.state)
        if arguments is None:
            return None
        mentions = [
            self._plain_mention(arg, arguments[arg.name], [])
            if arg.source == "entity_id"
            else ArgMention(arg.name, arguments[arg.name], arg.source)
            for arg in manifest.args
            if arg.name in arguments
        ]
        before = self.state
        ok, after, _ = self._run(manifest.tool, arguments)
        self._restore(before, after)
        changes = [c for c in diff_states(before, after) if not is_generated(c)]
        if not ok or not changes:
            return None
        return ChainStep(manifest, arguments, mentions, changes), after

    def _choose_changer(self) -> ToolManifest | None:
        if self.chain.steps or self.otherwise is None:
            return super()._choose_changer()
        other = self.otherwise[0].manifest.tool
        return self.rng.choice([t for t in self.changers if t.tool != other] or [None])

    def _wants(self, mentions: list[ArgMention]) -> bool:
        if self.chain.steps:
            return True
        return any(self._readable(m) for m in mentions)

    def _kept(self, step: ChainStep) -> None:
        if len(self.chain.steps) != 1 or self.otherwise is None:
            return
        other = self.otherwise[0]
        if _records_of(step.changes) & _records_of(other.changes):
            return
        condition, read = self._condition(step)
        if condition is None:
            return
        step.condition = condition
        if read not in self.chain.solution:
            self.chain.solution.insert(len(self.chain.solution) - 1, read)

    def _condition(self, step: ChainStep) -> tuple[Condition | None, Any]:
        """A test on a number of a record the taken step names, true or false by a coin."""
        before = self.chain.initial_state
        for mention in [m for m in step.mentions if self._readable(m)]:
            attr = self.compiled.entity_attrs[mention.entity or ""]
            record = _value_at(before, [attr, mention.value])
            fields = sorted(n for n, v in record.items() if _is_number(v) and n != "id")
            if not fields:
                continue
            field = self.rng.choice(fields)
            holds, op = self.rng.random() < 0.5, self.rng.choice((">=", "<"))
            threshold = _threshold(record[field], op, holds, self.rng)
            if threshold is None:
                continue
            getter = self._getter(mention.entity)
            read = SolutionStep(tool=getter.tool, arguments={getter.args[0].name: mention.value})
            other, untaken = self.otherwise
            condition = Condition(mention, field, op, threshold, holds, other, untaken)
            return condition, read
        return None, None

    def _readable(self, mention: ArgMention) -> bool:
        """An existing record with a number field and a get tool an agent can read it with."""
        if mention.source != "entity_id" or not mention.entity:
            return False
        attr = self.compiled.entity_attrs.get(mention.entity, "")
        record = _value_at(self.state, [attr, mention.value])
        has_number = isinstance(record, dict) and any(_is_number(v) for v in record.values())
        return has_number and self._getter(mention.entity) is not None

    def _getter(self, entity: str | None) -> ToolManifest | None:
        return next((q for q in self.queries.values() if _reads_one(q, entity)), None)


def disambiguate(
    chain: Chain, compiled: CompiledEnvironment, episode: ToolEpisode, rng: random.Random
) -> bool:
    """Give another record the name a step's lookup uses, and make the task tell them apart by
    a second attribute; False (chain unchanged) when no step can be so."""
    mentions = [m for step in chain.steps for m in step.mentions if m.by_label and m.label]
    rng.shuffle(mentions)
    for mention in mentions:
        twin = _twin(chain, compiled, mention, rng)
        if twin is None:
            continue
        other, field = twin
        attr = compiled.entity_attrs[mention.entity or ""]
        initial, final = copy.deepcopy(chain.initial_state), copy.deepcopy(chain.final_state)
        for state in (initial, final):
            state[attr][other][mention.label_field] = mention.label
        if not _finds_both(chain, episode, initial, mention, other):
            continue
        value = chain.initial_state[attr][mention.value][field]
        hint = say(
            "disambiguation",
            rng,
            label=mention.label,
            entity=words_of(mention.entity or ""),
            field=words_of(field),
            value=shown(field, value),
        )
        chain.initial_state, chain.final_state = initial, final
        for step in chain.steps:
            step.mentions = [
                _with_hint(m, hint) if m.value == mention.value and m.by_label else m
                for m in step.mentions
            ]
        return True
    return False


def _twin(chain: Chain, compiled, mention: ArgMention, rng) -> tuple[Any, str] | None:
    """Another record to share ``mention``'s label, and a field that tells them apart."""
    attr = compiled.entity_attrs.get(mention.entity or "", "")
    records = chain.initial_state.get(attr) or {}
    target = records.get(mention.value)
    if not isinstance(target, dict):
        return None
    used = {v for step in chain.solution for v in step.arguments.values() if isinstance(v, str)}
    touched = {tuple(c["path"][:2]) for c in diff_states(chain.initial_state, chain.final_state)}
    others = [k for k in sorted(records, key=str) if k not in used and (attr, k) not in touched]
    rng.shuffle(others)
    for other in others:
        fields = _telling_fields(records, target, mention, other)
        fields = [
            f for f in fields if _value_at(chain.final_state, [attr, mention.value, f]) == target[f]
        ]
        if fields:
            return other, rng.choice(fields)
    return None


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
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            continue
        if len(str(value)) > 40:
            continue
        if sum(r.get(name) == value for r in namesakes) == 1:
            found.append(name)
    return found


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


def _creates(tool: ToolManifest) -> bool:
    return not any(a.source == "entity_id" and a.entity == tool.entity for a in tool.args)


def _id_arg(tool: ToolManifest, entity: str) -> ArgManifest | None:
    return next((a for a in tool.args if a.source == "entity_id" and a.entity == entity), None)


def _is_add(change: dict[str, Any]) -> bool:
    return change["op"] == "add" and len(change["path"]) == 2 and isinstance(change["new"], dict)


def _records_of(changes: list[dict[str, Any]]) -> set[tuple]:
    return {tuple(c["path"][:2]) for c in changes}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _threshold(value: float, op: str, holds: bool, rng: random.Random) -> float | None:
    """A round number near ``value`` on the side that makes ``value op threshold`` == holds."""
    above = (op == "<") == holds  # the threshold lies above the value
    if value <= 0 and not above:
        return None
    factor = rng.uniform(1.15, 1.6) if above else rng.uniform(0.5, 0.85)
    raw = max(value * factor, value + 1) if above else value * factor
    step = 10 ** max(0, int(math.log10(max(raw, 1))) - 1)
    threshold = (math.ceil(raw / step) if above else math.floor(raw / step)) * step
    truth = value >= threshold if op == ">=" else value < threshold
    return float(threshold) if truth == holds and threshold > 0 else None


def _not_done(otherwise: ChainStep, final: dict[str, Any]) -> bool:
    """The branch not taken left no trace in the final state: none of its field values."""
    for change in otherwise.changes:
        if change["op"] == "change" and _value_at(final, change["path"]) == change["new"]:
            return False
    return True
