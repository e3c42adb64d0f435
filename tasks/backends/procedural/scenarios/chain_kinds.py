"""Scenario kinds of the procedural chain sampler, chosen by the scenario's rng.

- ``change``: today's chain (records named by label or id);
- ``filtered_lookup``: one record named by what a filtered list reveals ("Ann's only pending
  order", "my latest booking"; :mod:`lookups`);
- ``disambiguation``: two records share the name the task uses; a second attribute tells them
  apart (the initial state is edited so, before certification ever sees it);
- ``created_chain``: a step acts on the record an earlier step created ("the new account");
- ``conditional``: "if the balance of X is at least $500, do A; otherwise, do B": the reference
  reads X, follows the branch the state makes true, and a check verifies B did not happen.

A kind that cannot be built for an environment or state falls back to the next one, down to
``change``; each try starts again from the same initial state.
"""

from __future__ import annotations

import random
import re
from typing import Any

from envmill.tasks.backends.procedural.manifest import (
    ArgManifest,
    CompiledEnvironment,
    ToolManifest,
)
from envmill.tasks.backends.procedural.scenarios.chains import (
    ArgMention,
    ArgumentDrawer,
    Chain,
    ChainStep,
    _ChainSampler,
    id_arg,
    makes_new,
)
from envmill.tasks.backends.procedural.scenarios.conditions import ConditionalSampler
from envmill.tasks.backends.procedural.scenarios.lookups import LookupSampler
from envmill.tasks.backends.procedural.scenarios.namesakes import NamedSampler, disambiguate
from envmill.tasks.sandbox import ToolEpisode, known_state

# in fallback order: a namesake needs only a label lookup, so it comes last before a plain change
# (an ``aggregate_lookup``, a record picked by a count or total over its own records, is left
# out: no business picks "the lot with the biggest sales total" to spoil; aggregates stay as
# questions, "how many …", in the answer kind)
KINDS = (
    "change",
    "filtered_lookup",
    "created_chain",
    "conditional",
    "disambiguation",
)
SHARES = (0.3, 0.2, 0.2, 0.15, 0.15)
MAX_TRIES_PER_KIND = 30
CREATED_CHAIN_STEPS = 2


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
    initial = known_state(episode)
    for tried in fallbacks(kind):
        if episode.state() != initial:
            episode.load_state(initial)
        chain = _sample_one(compiled, episode, rng, faker, target_len, tried)
        if chain is not None:
            chain.kind = tried
            return chain
    return None


def _sample_one(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    rng: random.Random,
    faker: Any,
    target_len: int,
    kind: str,
) -> Chain | None:
    drawer = ArgumentDrawer(compiled, rng, faker)
    args = (compiled, episode, rng, drawer)
    if kind == "change":
        return _ChainSampler(*args).sample(target_len, MAX_TRIES_PER_KIND)
    if kind == "filtered_lookup":
        sampler = LookupSampler(*args)
        chain = sampler.sample(target_len, MAX_TRIES_PER_KIND)
        return chain if sampler.done else None
    if kind == "created_chain":
        sampler = CreatedSampler(*args)  # make one record, use it once: a goal, not a list
        chain = sampler.sample(CREATED_CHAIN_STEPS, MAX_TRIES_PER_KIND)
        return chain if sampler.used else None
    if kind == "conditional":
        return ConditionalSampler(*args).sample(1, MAX_TRIES_PER_KIND)  # the condition is the goal
    chain = NamedSampler(*args).sample(target_len, MAX_TRIES_PER_KIND)
    return chain if chain is not None and disambiguate(chain, compiled, episode, rng) else None


# tools that take back what was just made ("cancel that new order"): a follow-up a person
# would not ask for in the same breath
UNDOING = re.compile(r"^(?:cancel|delete|remove|void|withdraw|retract|revoke|discard|undo|drop)")


class CreatedSampler(_ChainSampler):
    """First a create, then a step that uses the record it made, named "the new …" (not by an
    id the task could not know): an account opened for the new customer, not an edit of the
    customer just registered."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.creators = [t for t in self.changers if makes_new(t) and self._others_using(t.entity)]
        self.created: tuple[str, Any] | None = None
        self.used = False

    def _nameable(self) -> set[str]:
        return {str(self.created[1])} if self.created else set()

    def _others_using(self, entity: str) -> list[ToolManifest]:
        """Tools of another entity that take an id of ``entity`` (an account for a customer)."""
        return [t for t in self.changers if t.entity != entity and id_arg(t, entity) is not None]

    def _choose_changer(self) -> ToolManifest | None:
        if not self.chain.steps:
            return self.rng.choice(self.creators) if self.creators else None
        if not self.used and self.created is not None:
            keeping = [t for t in self._others_using(self.created[0]) if not UNDOING.match(t.tool)]
            return self.rng.choice(keeping) if keeping else None  # not made and undone at once
        return super()._choose_changer()

    def _adjust(self, manifest: ToolManifest, arguments: dict[str, Any]) -> bool:
        if self.used or self.created is None or not self.chain.steps:
            return True
        arg = id_arg(manifest, self.created[0])
        if arg is None:
            return False
        arguments[arg.name] = self.created[1]
        # a number drawn against the record it replaced is drawn again against the new one: a
        # new employee's first payslip is a share of their salary (breaker: $3,347 a month of
        # $185,000)
        self.drawer.redraw_readers(manifest, arguments, arg.name, self.state)
        return True

    def _special_mention(self, arg: ArgManifest, value: Any, calls: list) -> ArgMention | None:
        if self.created is None or value != self.created[1] or arg.entity != self.created[0]:
            return None
        # "book a class for them", not "for that new member"; "issue a permit for it", not
        # "for that new vehicle" (round 56: read as a template); a person just registered by
        # name is called by their first name ("add Kelsey to Cell Biology": round 62 read
        # "book them with doctor Hall" as a template)
        described = (self._first_name() or "them") if self._is_person(self.created[0]) else "it"
        return ArgMention(arg.name, value, arg.source, arg.entity, described=described, made=True)

    def _first_name(self) -> str | None:
        """The first name the creating step gave ("Kelsey" of "Kelsey McLaughlin"), if any."""
        label = self.compiled.label_fields.get(self.created[0] if self.created else "")
        name = self.chain.steps[0].arguments.get(label or "") if self.chain.steps else None
        words = name.split() if isinstance(name, str) else []
        return words[0] if len(words) >= 2 and words[0].isalpha() else None

    def _is_person(self, entity: str) -> bool:
        spec = self.compiled.spec.entities.get(entity)
        return spec is not None and bool({"email", "phone"} & set(spec.fields))

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


def _is_add(change: dict[str, Any]) -> bool:
    return change["op"] == "add" and len(change["path"]) == 2 and isinstance(change["new"], dict)
