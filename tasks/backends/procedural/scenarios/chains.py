"""Sampling operation chains: seeded tool calls that succeed, run live in one sandbox episode.

The generator never predicts what a tool does: it draws a tool and arguments from the manifest and
the *current* state, runs the call, and keeps it only when it succeeds and adds a fact the earlier
steps did not undo. The calls kept, in the order they ran (label lookups and an occasional
informative query before the change they serve), are the reference solution; replaying them from
the initial state reproduces the final state, created ids included.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from envmill.schemas.ids import canonical_json
from envmill.schemas.scenario import SolutionStep
from envmill.tasks.backends.procedural.manifest import (
    ArgManifest,
    CompiledEnvironment,
    ToolManifest,
)
from envmill.tasks.backends.procedural.scenarios.plausible import (
    Reading,
    later_time,
    plausible_window,
)
from envmill.tasks.backends.procedural.scenarios.round_numbers import SMALLEST_MONEY, round_within
from envmill.tasks.backends.procedural.scenarios.subjects import acting_member, names_id, owned_ids
from envmill.tasks.backends.procedural.scenarios.usual import parents_live, usual_prefer
from envmill.tasks.backends.procedural.spec.domain import DomainSpec, PolicySpec
from envmill.tasks.backends.procedural.state.contact import (
    email_for,
    fake_text,
    is_email_provider,
    person_name,
)
from envmill.tasks.backends.procedural.state.invariants import check_invariants
from envmill.tasks.certify.generated import is_generated
from envmill.tasks.core.field_words import is_money_field
from envmill.tasks.core.statekit import diff_states
from envmill.tasks.sandbox import ToolEpisode, known_state

MAX_ATTEMPTS_PER_STEP = 30
INFORM_CHANCE = 0.35
_MISSING = object()
_OMIT = object()
PLACEHOLDER = re.compile(r"\{(\w+)")  # "{member_id.label}" names member_id
DEFAULT_NOW = "2025-01-06T09:00:00"
PREFER_CHANCE = 0.9
# a sum the user picks (a top-up, a deposit, a withdrawal): said as a round number, as is
# any price or rate a business sets
CHOSEN_SUM = re.compile(r"^(?:amount|credits|.*_amount)$")
# a quantity a person measures or books in round figures ("14 hours", "3,000 kg")
MEASURED = re.compile(
    r"(?:^|_)(?:hours|minutes|days|kg|weight|km|distance|litres|liters|volume)(?:_|$)"
)


@dataclass(frozen=True)
class ArgMention:
    """How the task names one argument: by label (found with a lookup), by id, or by value."""

    name: str
    value: Any
    source: str
    entity: str | None = None
    label: str | None = None
    label_field: str | None = None
    by_label: bool = False
    described: str | None = None  # how the task names the record instead ("her only frozen card")
    hint: str | None = None  # after the label, what tells two same-named records apart
    signed_in: bool = False  # the speaker's own record: the agent reads it from the session
    made: bool = False  # the record an earlier step of the request makes ("them", "Kelsey")


@dataclass(frozen=True)
class Condition:
    """A test on the state that chose between this step and ``otherwise`` (the branch not
    taken): ``{field} of {record} {op} {threshold}``, which ``holds`` says was true."""

    record: ArgMention
    field: str
    op: str
    threshold: float
    holds: bool
    otherwise: ChainStep
    untaken: dict[str, Any]  # the state ``otherwise`` would have made from the initial state
    # the threshold is a mark the number is brought to: each branch moves it by the difference
    target: bool = False
    why: str = ""  # the reason of a declared policy ("long leave needs the head's sign-off")
    policy: PolicySpec | None = None  # that policy, with its own words for the request
    own: bool = False  # the record's holder asks, not staff


@dataclass
class ChainStep:
    """One kept state-changing call, with the mentions the task text needs and its own diff."""

    manifest: ToolManifest
    arguments: dict[str, Any]
    mentions: list[ArgMention]
    changes: list[dict[str, Any]]
    condition: Condition | None = None  # a conditional step: the test and the branch not taken
    result: dict[str, Any] | None = None  # what the call returned: what the agent is shown


@dataclass
class Chain:
    """A sampled chain: the state it started from and ended in, its steps and reference solution."""

    initial_state: dict[str, Any]
    final_state: dict[str, Any]
    steps: list[ChainStep] = field(default_factory=list)
    solution: list[SolutionStep] = field(default_factory=list)
    kind: str = "change"


def sample_chain(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    rng: random.Random,
    faker: Any,
    target_len: int,
    *,
    max_attempts: int = MAX_ATTEMPTS_PER_STEP,
) -> Chain | None:
    """Run state-changing calls in ``episode`` until the solution has ``target_len`` steps.

    Returns None when not even one state change succeeded within ``max_attempts``; a chain that
    stalls later keeps the steps it has.
    """
    sampler = _ChainSampler(compiled, episode, rng, ArgumentDrawer(compiled, rng, faker))
    return sampler.sample(target_len, max_attempts)


def records_by_id(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every record of every collection of ``state``, by its id as text."""
    return {
        str(key): record
        for collection in state.values()
        if isinstance(collection, dict)
        for key, record in collection.items()
        if isinstance(record, dict)
    }


def linked(one: str, other: str, records: dict[str, dict[str, Any]]) -> bool:
    """The same record, or one whose fields name the other (an invoice and its matter, a
    membership and its member)."""
    return (
        one == other
        or other in {str(v) for v in records.get(one, {}).values()}
        or one in {str(v) for v in records.get(other, {}).values()}
    )


def said_as_mine(manifest: ToolManifest) -> set[str]:
    """The record arguments a phrase says as the speaker's own ("put its money on my new card
    {to_card_id}", "check me out of booking {booking_id}"): a signed-in client's call draws
    them from their own records, whatever the tool checks. The breaker found "my new card"
    filled with another rider's card, moving the user's balance to a stranger."""
    said = set()
    for phrase in manifest.phrases:
        for found in re.finditer(r"\{(\w+)[^{}]*\}", phrase):
            if MINE_BEFORE.search(phrase[: found.start()]):
                said.add(found.group(1))
    return {arg.name for arg in manifest.args if arg.name in said and arg.source == "entity_id"}


# "my new card ", "my bill for ", "me out of booking ": the record after it is the speaker's
MINE_BEFORE = re.compile(
    r"\b(?:[Mm]y (?:[a-z]+ ){0,3}(?:is |for |on |in )?|me (?:in for|out of|off|from) [a-z]+ )$"
)


# a date that has already come: an incident, a pet's birth, a day worked (a breaker found
# file_claim, register_pet and record_time never ran on dates drawn ahead)
PAST = re.compile(r"(?:^|_)(?:incident|birth|born|worked|occurred|happened)(?:_|$)")
# an argument that says when something ends: a campaign, a plan, a lease
ENDS = re.compile(r"(?:^|_)(?:ends?|end_date|until|expires?|expiry)(?:_|$)")


class _ChainSampler:
    def __init__(
        self, compiled: CompiledEnvironment, episode: ToolEpisode, rng, drawer: ArgumentDrawer
    ):
        self.compiled, self.episode, self.rng, self.drawer = compiled, episode, rng, drawer
        self.state = known_state(episode)
        role = self.state.get(compiled.acting_role_attr or "")
        own = compiled.roles[role].entity if role in compiled.roles else None
        self.changers = [
            t
            for t in compiled.tools
            if t.kind == "state_change"
            and (not t.roles or role in t.roles)
            and not (own and t.entity == own and makes_new(t))  # a customer signs up no one
        ]
        self.queries = {t.tool: t for t in compiled.tools if t.kind == "query"}
        member = acting_member(compiled, self.state)
        drawer.acting_id = member[1] if member else None
        self.chain = Chain(initial_state=self.state, final_state=self.state)
        self.inform_left = 1 if rng.random() < INFORM_CHANCE else 0
        self.read: dict[str, dict[str, Any]] = {}  # each query's result, by its call
        self._broken_state: dict[str, Any] | None = None  # see ``_broken_before``
        self._broken_lines: set[str] = set()

    def sample(self, target_len: int, max_attempts: int) -> Chain | None:
        while self.changers and len(self.chain.solution) < target_len:
            if not any(self._attempt() for _ in range(max_attempts)):
                break
        if not self.chain.steps:
            return None
        self.chain.final_state = self.state
        return self.chain

    def _attempt(self) -> bool:
        """Draw and run one state change (with its lookups); keep it or roll the episode back."""
        manifest = self._choose_changer()
        arguments = self.drawer.draw_arguments(manifest, self.state) if manifest else None
        if manifest is None or arguments is None or not self._adjust(manifest, arguments):
            return False
        if self.chain.steps and not self._related(manifest, arguments):
            return False  # one goal: a later step concerns what the earlier ones touched
        before, calls = self.state, []
        mentions = [
            self._mention(arg, arguments, calls) for arg in manifest.args if arg.name in arguments
        ]
        if not self._wants(mentions):
            return False
        self._maybe_inform(manifest, arguments, calls)
        ok, after, result = self._run(manifest.tool, arguments)
        changes = _user_changes(before, after) if ok else []  # a failed call's are never read
        if not ok or not self._accepts(changes, after) or self._breaks_its_domain(before, after):
            self._restore(before, after)
            return False
        calls.append(SolutionStep(tool=manifest.tool, arguments=arguments))
        step = ChainStep(manifest, arguments, mentions, changes, result=result)
        self.chain.solution.extend(calls)
        self.chain.steps.append(step)
        self.state = after
        self._kept(step)
        return True

    def _related(self, manifest: ToolManifest, arguments: dict[str, Any]) -> bool:
        """The call names a record the chain touched (used or created), or one linked to it:
        the same matter, its invoice, the client who owns it. It does not repeat an earlier
        step's tool, nor act on a record an
        earlier step acted on or named ("dispatch it, then return it"; "take in a lot from Ann,
        then suspend Ann"), it names a record an earlier step created only in a kind that says
        "the new …" (no id the user cannot know), and it does not act on another record of a
        kind the chain just made (which would read as it)."""
        if any(step.manifest.tool == manifest.tool for step in self.chain.steps):
            return False  # "take in a lot, then take in another lot": two requests, not a goal
        records, touched = records_by_id(self.state), self._touched()
        named = _named_ids(manifest, arguments)
        acted = acted_on(manifest, arguments)
        if acted is not None and acted in {
            name for s in self.chain.steps for name in _named_ids(s.manifest, s.arguments)
        }:  # "assign adjuster Jo to the claim, then take Jo off the rota" undoes the first
            return False
        if set(named) & (self._created() - self._nameable()):
            return False
        if acted is not None and acted not in self._nameable() and self._made_one_like(manifest):
            return False  # "take in a lot, then reprice the lot" reads as the new one
        return any(linked(name, other, records) for name in named for other in touched)

    def _made_one_like(self, manifest: ToolManifest) -> bool:
        """An earlier step created a record of the entity this call acts on."""
        attr = self.compiled.entity_attrs.get(manifest.entity)
        return any(
            c["op"] == "add" and len(c["path"]) == 2 and c["path"][0] == attr
            for step in self.chain.steps
            for c in step.changes
        )

    def _nameable(self) -> set[str]:
        """Records the chain created that a later step may name ("the new …"): none here."""
        return set()

    def _touched(self) -> set[str]:
        """Each id the chain used or created."""
        used = {
            name for step in self.chain.steps for name in _named_ids(step.manifest, step.arguments)
        }
        return used | self._created()

    def _created(self) -> set[str]:
        return {
            str(c["path"][1]) for step in self.chain.steps for c in step.changes
            if c["op"] == "add" and len(c["path"]) == 2
        }  # fmt: skip

    # hooks a sampler of another scenario kind (chain_kinds.py) overrides
    def _choose_changer(self) -> ToolManifest | None:
        return self.rng.choice(self.changers)

    def _adjust(self, manifest: ToolManifest, arguments: dict[str, Any]) -> bool:
        """Change the drawn arguments in place; False drops the attempt."""
        return True

    def _wants(self, mentions: list[ArgMention]) -> bool:
        """Whether the step's mentions serve the scenario kind (checked before the call)."""
        return True

    def _kept(self, step: ChainStep) -> None:
        """Called after a step is kept."""

    def _special_mention(
        self, arg: ArgManifest, value: Any, calls: list[SolutionStep]
    ) -> ArgMention | None:
        """A kind's own way to name an entity argument, with the queries it needs, or None."""
        return None

    def _run(
        self, tool: str, arguments: dict[str, Any]
    ) -> tuple[bool, dict[str, Any], dict[str, Any]]:
        """Call a tool; (succeeded, state after, result). A host error counts as a failure, and
        leaves the episode in its last good state."""
        outcome = self.episode.call(tool, dict(arguments))
        served = outcome.state if outcome.ok else None
        after = served if served is not None else known_state(self.episode)
        return outcome.succeeded, after, outcome.result

    def _query(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """Run a query; its result when it succeeded without touching the state, else None."""
        ok, after, result = self._run(tool, arguments)
        if after != self.state:
            self._restore(self.state, after)
            return None
        if ok:
            self.read[canonical_json([tool, arguments])] = result
        return result if ok else None

    def _read_before(self, value: Any, calls: list[SolutionStep]) -> bool:
        """An earlier read among ``calls`` showed the record ``value`` names."""
        for step in calls:
            result = self.read.get(canonical_json([step.tool, step.arguments]))
            if result is not None and _shows_record(result.get("data"), value):
                return True
        return False

    def _restore(self, before: dict[str, Any], after: dict[str, Any]) -> None:
        if after != before:
            self.episode.load_state(before)

    def _accepts(self, changes: list[dict[str, Any]], after: dict[str, Any]) -> bool:
        """Keep a step that adds a user fact, undoes none, and keeps a fact of each earlier step."""
        if not changes:
            return False
        for earlier in self.chain.steps:
            if not any(_survives(after, change) for change in earlier.changes):
                return False
            for change in earlier.changes:
                if _same(
                    _value_at(after, change["path"]),
                    _value_at(self.chain.initial_state, change["path"]),
                ):
                    return False
        return True

    def _breaks_its_domain(self, before: dict[str, Any], after: dict[str, Any]) -> bool:
        """A step whose state breaks an invariant the state before kept: the tools let a
        collision claim onto a travel policy, the domain does not (round 74)."""
        kept, broken = self._broken_before(before), _broken_in(self.compiled.spec, after)
        if not broken <= kept:
            return True
        self._broken_state, self._broken_lines = after, broken  # the next attempts start there
        return False

    def _broken_before(self, before: dict[str, Any]) -> set[str]:
        """``_broken_in`` of the state the attempts start from, kept: every attempt from one
        state asks again (states are never changed in place: each call's reply is a new one)."""
        if self._broken_state is not before:
            self._broken_state = before
            self._broken_lines = _broken_in(self.compiled.spec, before)
        return self._broken_lines

    def _mention(
        self, arg: ArgManifest, arguments: dict[str, Any], calls: list[SolutionStep]
    ) -> ArgMention:
        value = arguments[arg.name]
        if arg.source != "entity_id":
            return ArgMention(arg.name, value, arg.source)
        special = self._special_mention(arg, value, calls)
        return special if special is not None else self._plain_mention(arg, value, calls)

    def _plain_mention(self, arg: ArgManifest, value: Any, calls: list[SolutionStep]) -> ArgMention:
        """An entity named by its label (after a find that shows its id) or else by its id."""
        entity = arg.entity
        attr = arg.state_attr or self.compiled.entity_attrs.get(entity or "", "")
        label_field = arg.label_field or self.compiled.label_fields.get(entity or "")
        label = _label_of(self.state, attr, value, label_field)
        mention = ArgMention(arg.name, value, arg.source, entity, label, label_field)
        session = self.compiled.session_tool
        if session and label is not None and value == self.drawer.acting_id:
            look = SolutionStep(tool=session, arguments={})  # "my email": who "my" is
            if look not in calls and look not in self.chain.solution:
                calls.append(look)
            return replace(mention, by_label=True, signed_in=True)
        if label is None or not arg.lookup_tool or not arg.lookup_arg:
            return mention
        if not _label_is_unique(self.state, attr, label_field, label):
            return mention
        lookup = SolutionStep(tool=arg.lookup_tool, arguments={arg.lookup_arg: label})
        if lookup in calls or lookup in self.chain.solution:
            return ArgMention(
                arg.name, value, arg.source, entity, label, label_field, by_label=True
            )
        result = self._query(lookup.tool, lookup.arguments)
        if result is None or not names_id(result.get("data"), value):
            return mention
        calls.append(lookup)
        return ArgMention(arg.name, value, arg.source, entity, label, label_field, by_label=True)

    def _maybe_inform(self, manifest: ToolManifest, arguments: dict[str, Any], calls: list) -> None:
        """Look at the record a change acts on (a create: the record it is made on) before
        changing it, as a careful agent does (the shipment before dispatching it): unless the
        chain made it (its create showed it), a lookup already found it, or an earlier call
        read it. Now and then, also another record the call names."""
        named = _named_ids(manifest, arguments)  # a create: the record it is made on
        acted = acted_on(manifest, arguments) or (named[0] if named else None)
        extra = self.inform_left and self.rng.random() < 0.5
        for arg in manifest.args:
            value = arguments.get(arg.name)
            if arg.source != "entity_id" or value is None or str(value) in self._created():
                continue
            if str(value) != acted and not extra:
                continue
            query = next((q for q in self.queries.values() if _reads_one(q, arg.entity)), None)
            if query is None:
                continue
            step = SolutionStep(tool=query.tool, arguments={query.args[0].name: value})
            if self._read_before(value, [*self.chain.solution, *calls]):
                continue
            if self._query(step.tool, step.arguments) is not None:
                calls.append(step)
                if str(value) != acted:
                    self.inform_left, extra = 0, False
        self._read_whose(manifest, arguments, calls)

    def _read_whose(self, manifest: ToolManifest, arguments: dict[str, Any], calls: list) -> None:
        """For a signed-in customer, the records between the one a call acts on and its owner
        (a claim's policy, whose holder it names): an agent that withdrew "my claim" having read
        only the claim never checked it was theirs (round 73)."""
        if self.drawer.acting_id is None:
            return
        for rule in manifest.owned:
            entity = next((a.entity for a in manifest.args if a.name == rule.arg), None)
            value = arguments.get(rule.arg)
            for hop in rule.hops[:-1]:
                spec = self.compiled.spec.entities.get(entity or "")
                records = self.state.get(self.compiled.entity_attrs.get(entity or "", "")) or {}
                record = records.get(value) if isinstance(records, dict) else None
                if spec is None or hop not in spec.fields or not isinstance(record, dict):
                    break
                entity, value = spec.fields[hop].entity, record.get(hop)
                query = next((q for q in self.queries.values() if _reads_one(q, entity)), None)
                if query is None or value is None:
                    break
                step = SolutionStep(tool=query.tool, arguments={query.args[0].name: value})
                seen = self._read_before(value, [*self.chain.solution, *calls])
                if not seen and self._query(step.tool, step.arguments) is not None:
                    calls.append(step)


def _user_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The changes from ``before`` to ``after`` a user could ask for (no generated values)."""
    return [c for c in diff_states(before, after) if not is_generated(c)]


def _broken_in(spec: DomainSpec, state: dict[str, Any]) -> set[str]:
    """Which records break which rules in ``state`` (``_broken``)."""
    return {_broken(line) for line in check_invariants(spec, state)}


def _broken(violation: str) -> str:
    """Which record broke which rule ("book B-3 (Copies available are …)"), not the figures a
    violation line quotes, which a step may move without breaking anything new."""
    record, _, said = violation.partition(":")
    rule = re.search(r"\(([^()]*)\)$", said)
    return f"{record} ({rule[1]})" if rule else violation


def _shows_record(data: Any, rid: Any) -> bool:
    """Whether ``data`` holds the record ``rid`` itself (its id first, or keyed by it), not
    only a record that points at it (a loan naming the book)."""
    if isinstance(data, dict):
        first = next(iter(data.values()), None)
        return first == rid or rid in data or any(_shows_record(v, rid) for v in data.values())
    return isinstance(data, list) and any(_shows_record(v, rid) for v in data)


def _reads_one(query: ToolManifest, entity: str | None) -> bool:
    return (
        len(query.args) == 1
        and query.args[0].source == "entity_id"
        and query.args[0].entity == entity
    )


def _label_of(
    state: dict[str, Any], attr: str, entity_id: Any, label_field: str | None
) -> str | None:
    record = _value_at(state, [attr, entity_id])
    label = record.get(label_field) if isinstance(record, dict) and label_field else None
    return label if isinstance(label, str) and label.strip() else None


def _label_is_unique(state: dict[str, Any], attr: str, label_field: str | None, label: str) -> bool:
    collection = state.get(attr)
    if not isinstance(collection, dict):
        return False
    same = [
        r
        for r in collection.values()
        if isinstance(r, dict) and str(r.get(label_field, "")).lower() == label.lower()
    ]
    return len(same) == 1


def _value_at(state: Any, path: list[Any]) -> Any:
    for key in path:
        if isinstance(state, dict) and key in state:
            state = state[key]
        elif isinstance(state, list) and isinstance(key, int) and 0 <= key < len(state):
            state = state[key]
        else:
            return _MISSING
    return state


def _same(a: Any, b: Any) -> bool:
    return a is b if a is _MISSING or b is _MISSING else a == b


def _survives(state: dict[str, Any], change: dict[str, Any]) -> bool:
    """Whether an earlier step's change still shows in ``state`` (no later step overwrote it)."""
    value = _value_at(state, change["path"])
    if change["op"] == "remove":
        return value is _MISSING
    if change["op"] == "add" and len(change["path"]) <= 2:
        return value is not _MISSING
    return _same(value, change["new"])


class ArgumentDrawer:
    """Draws tool arguments from the manifest and the current state, seeded by the scenario rng."""

    def __init__(self, compiled: CompiledEnvironment, rng: random.Random, faker: Any):
        self.compiled, self.rng, self.faker = compiled, rng, faker
        # a signed-in customer's id: arguments an ``owned`` rule guards are drawn from their own
        # records, so a chain asks for what they may do (a refusal sampler leaves it None)
        self.acting_id: str | None = None
        self._mine_of: tuple[dict[str, Any], str, set[str]] | None = None  # see ``_mine``

    def draw_arguments(
        self, manifest: ToolManifest, state: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Arguments for one call, or None when a required entity has no candidate in the state."""
        arguments: dict[str, Any] = {}
        guarded = {rule.arg for rule in manifest.owned} | said_as_mine(manifest)
        guarded = guarded if self.acting_id else set()
        phrased = {name for p in manifest.phrases for name in PLACEHOLDER.findall(p)}
        for arg in manifest.args:
            unsaid = bool(phrased) and arg.name not in phrased
            if not arg.required and (self.rng.random() < 0.5 or unsaid):
                continue  # a value no phrase says is a change no request asks for (round 34)
            if arg.name in guarded:
                value = self._own_id(arg, state, arguments)
            else:
                value = self.draw_value(arg, state, arguments)
            if value is None:
                return None
            if value is not _OMIT:
                arguments[arg.name] = value
        if manifest.examples:  # values that belong together: a part's name and its category
            example = self.rng.choice(self._unused_examples(manifest, state) or manifest.examples)
            arguments |= {name: v for name, v in example.items() if name in arguments}
        self._not_as_it_is(manifest, arguments, state)
        return self._own_email(manifest, arguments, state)

    def redraw_readers(
        self, manifest: ToolManifest, arguments: dict[str, Any], changed: str, state: dict
    ) -> None:
        """The numbers of ``arguments`` that read the record ``changed`` names, drawn again
        now that it names another."""
        for arg in manifest.args:
            reads = [arg.near, arg.since, arg.share_of, arg.share_by, *arg.at_most, *arg.at_least]
            reading = any(read is not None and read.arg == changed for read in reads)
            if reading and arg.name in arguments and arg.source in ("int", "float"):
                arguments[arg.name] = self._number(arg, state, arguments)

    def _not_as_it_is(
        self, manifest: ToolManifest, arguments: dict[str, Any], state: dict[str, Any]
    ) -> None:
        """A choice the record already has is drawn again: no one asks to set a request "to
        urgent" that is urgent (round 44)."""
        target = next(
            (a for a in manifest.args if a.source == "entity_id" and a.entity == manifest.entity),
            None,
        )
        records = state.get(self.compiled.entity_attrs.get(manifest.entity or "", "")) or {}
        record = records.get(arguments.get(target.name)) if target else None
        if not isinstance(record, dict):
            return
        for arg in manifest.args:
            current = record.get(arg.name)
            others = [v for v in arg.values or [] if v != current]
            if arg.source == "enum" and arguments.get(arg.name) == current and others:
                arguments[arg.name] = self.rng.choice(others)

    def _unused_examples(self, manifest: ToolManifest, state: dict[str, Any]) -> list[dict]:
        """The examples whose name no record of the entity has yet: a new client named like
        one on file ("Rivera Auto Body" twice) is a duplicate, not a new client."""
        label = self.compiled.label_fields.get(manifest.entity)
        records = state.get(self.compiled.entity_attrs.get(manifest.entity, ""))
        rows = records.values() if isinstance(records, dict) and label else []
        taken = {str(r.get(label)).casefold() for r in rows if isinstance(r, dict)}
        return [e for e in manifest.examples if str(e.get(label or "")).casefold() not in taken]

    def _own_email(
        self, manifest: ToolManifest, arguments: dict[str, Any], state: dict[str, Any]
    ) -> dict[str, Any]:
        """An email drawn beside a name is made from it ("Hunter Gomez", hunter.gomez@…), and
        a new email for a person from their name on record."""
        name = next(
            (arguments[a.name] for a in manifest.args if a.faker == "name" and a.name in arguments),
            None,
        ) or self._name_on_record(manifest, arguments, state)
        for arg in manifest.args:
            if isinstance(name, str) and arg.name in arguments and is_email_provider(arg.faker):
                arguments[arg.name] = email_for(name, self.rng)
        return arguments

    def _name_on_record(
        self, manifest: ToolManifest, arguments: dict[str, Any], state: dict[str, Any]
    ) -> str | None:
        """The person's name on the record the call acts on ("change my email"), if a name."""
        target = id_arg(manifest, manifest.entity)
        if target is None or target.name not in arguments:
            return None
        attr = self.compiled.entity_attrs.get(manifest.entity or "", "")
        record = (state.get(attr) or {}).get(arguments[target.name])
        return person_name(self.compiled.spec.entities.get(manifest.entity or ""), record)

    def draw_value(self, arg: ArgManifest, state: dict[str, Any], chosen: dict[str, Any]) -> Any:
        """One value for ``arg``; None when impossible, ``_OMIT`` when an optional arg has none."""
        if arg.source == "entity_id":
            return self._entity_id(arg, state, chosen)
        if arg.source == "enum":
            return self.rng.choice(arg.values) if arg.values else (None if arg.required else _OMIT)
        if arg.source in ("int", "float"):
            return self._number(arg, state, chosen)
        if arg.source == "bool":
            return self.rng.random() < 0.5
        if arg.source in ("date", "datetime"):
            now = _parse_time(state.get("current_time"))
            later = later_time(arg, Reading(state, chosen, now), self.rng)
            return later if later is not None else self._moment(arg.source, state, arg.name)
        return self._text(arg)

    def _number(self, arg: ArgManifest, state: dict[str, Any], chosen: dict[str, Any]) -> Any:
        """An int or a 2-decimal float within the manifest's bounds (defaults 1..10, 1..100),
        narrowed to what the records make plausible (see ``plausible``)."""
        whole = arg.source == "int"
        low, high = _bounds(arg, 1, 10) if whole else _bounds(arg, 1.0, 100.0)
        now = _parse_time(state.get("current_time"))
        low, high = plausible_window(arg, Reading(state, chosen, now), low, high, self.rng)
        if whole:
            return self.rng.randint(math.ceil(low), max(math.ceil(low), math.floor(high)))
        value = min(high, max(low, round(self.rng.uniform(low, high), 2)))
        if CHOSEN_SUM.search(arg.name) and high < SMALLEST_MONEY:
            return round(high, 2)  # a small balance is settled whole: "$6.74", not "$1" of it
        if CHOSEN_SUM.search(arg.name):  # "top up $250", not $259.64
            return round_within(value, max(low, min(SMALLEST_MONEY, high)), high)
        if is_money_field(arg.name):  # a new rate or price a business sets: "$350 an hour"
            return round_within(value, low, high)
        if MEASURED.search(arg.name) and high - low >= 1:  # 14 hours, not 14.01; a grade of
            return round_within(value, low, high)  # 87.5 stays as it is
        return value

    def _entity_id(self, arg: ArgManifest, state: dict[str, Any], chosen: dict[str, Any]) -> Any:
        attr = arg.state_attr or self.compiled.entity_attrs.get(arg.entity or "", "")
        collection = state.get(attr)
        if not isinstance(collection, dict) or not collection:
            return None if arg.required else _OMIT
        ids = sorted(collection, key=str)
        fresh = [i for i in ids if i not in chosen.values()] or ids
        preferred = self._usual(arg, collection, fresh, state) or [
            i for i in fresh if _matches(collection[i], arg.prefer)
        ]
        if preferred and self.rng.random() < PREFER_CHANCE:
            return self.rng.choice(preferred)
        return self.rng.choice(fresh)

    def _usual(self, arg: ArgManifest, records: dict, ids: list, state: dict[str, Any]) -> list:
        """The ids of records a request is usually about (see ``usual``)."""
        spec = self.compiled.spec
        prefer = usual_prefer(spec.entities.get(arg.entity or ""), arg.prefer)
        attrs = self.compiled.entity_attrs
        return [
            i
            for i in ids
            if _matches(records[i], prefer)
            and parents_live(spec, attrs, arg.entity, records[i], state)
        ]

    def _own_id(self, arg: ArgManifest, state: dict[str, Any], chosen: dict[str, Any]) -> Any:
        """An id of a record the signed-in customer owns (or their own id), else None."""
        attr = arg.state_attr or self.compiled.entity_attrs.get(arg.entity or "", "")
        collection = state.get(attr)
        if self.acting_id is None:  # only a signed-in customer's arguments are guarded
            return None if arg.required else _OMIT
        mine = self._mine(state, self.acting_id)
        ids = sorted((i for i in collection or {} if i in mine), key=str)
        if not ids:
            return None if arg.required else _OMIT
        fresh = [i for i in ids if i not in chosen.values()] or ids
        usual = self._usual(arg, collection or {}, fresh, state)
        if not usual and self._guard_allows_several(arg):
            return None if arg.required else _OMIT  # not a premium on their lapsed policy
        return self.rng.choice(usual or fresh)

    def _mine(self, state: dict[str, Any], acting_id: str) -> set[str]:
        """The acting record's id and those it owns (``owned_ids``), kept for the last state
        and id asked about: each draw from one state asks again (a state is never changed in
        place: each call's reply is a new one)."""
        if self._mine_of is None or self._mine_of[0] is not state or self._mine_of[1] != acting_id:
            self._mine_of = (state, acting_id, owned_ids(state, acting_id) | {acting_id})
        return self._mine_of[2]

    def _guard_allows_several(self, arg: ArgManifest) -> bool:
        """The tool takes the record in more than one state (a premium on an active or a lapsed
        policy): a customer asks it of the earliest, never only of the later (``usual``)."""
        entity = self.compiled.spec.entities.get(arg.entity or "")
        machine = entity.status if entity else None
        return machine is not None and len(arg.prefer.get(machine.field, [])) > 1

    def _moment(self, source: str, state: dict[str, Any], name: str = "") -> str:
        """A working day in the two weeks after the environment's current time (an end date:
        one to four months on), or a time in office hours on a working day of the week ahead:
        not a Sunday 19:00 appointment (round 41), nor a $30,000 appeal that ends in two days
        (round 57)."""
        now = _parse_time(state.get("current_time")).replace(minute=0, second=0, microsecond=0)
        ahead = range(30, 121) if ENDS.search(name) else range(1, 15)
        if source == "date" and PAST.search(name):  # an incident, a birth: already happened
            back = range(365, 15 * 365) if "birth" in name else range(1, 30)
            return (now - timedelta(days=self.rng.choice(back))).date().isoformat()
        if source == "date":  # a working day: no pay date on a Saturday (round 42)
            days = [now + timedelta(days=d) for d in ahead]
            return self.rng.choice([d for d in days if d.weekday() < 5]).date().isoformat()
        days = [now + timedelta(days=d) for d in range(8)]
        working = [d for d in days if d.weekday() < 5 and (d > now or now.hour < OFFICE_LAST)]
        day = self.rng.choice(working or days)
        first = now.hour + 1 if day == now else OFFICE_FIRST
        hour = self.rng.randint(max(first, OFFICE_FIRST), max(first, OFFICE_LAST))
        return day.replace(hour=hour).isoformat()

    def _text(self, arg: ArgManifest) -> str:
        """Free text from the named faker provider, else a plain word."""
        try:
            value = fake_text(self.faker, arg.faker) if arg.faker else self.faker.word()
        except (TypeError, ValueError, AttributeError):
            value = self.faker.word()
        isoformat = getattr(value, "isoformat", None)
        return str(isoformat()) if callable(isoformat) else str(value)


OFFICE_FIRST, OFFICE_LAST = 9, 16  # the hours a booking starts in


def _bounds(arg: ArgManifest, low: float, high: float) -> tuple[float, float]:
    lo = arg.minimum if arg.minimum is not None else min(low, arg.maximum or low)
    hi = arg.maximum if arg.maximum is not None else max(high, lo + (high - low))
    return lo, max(lo, hi)


def _matches(record: Any, prefer: dict[str, list[Any]]) -> bool:
    if not isinstance(record, dict):
        return False
    return all(record.get(name) in values for name, values in sorted(prefer.items()))


def _parse_time(value: Any) -> datetime:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    return datetime.fromisoformat(DEFAULT_NOW)


def _named_ids(manifest: ToolManifest, arguments: dict[str, Any]) -> list[str]:
    """The ids of records a call names."""
    return [
        str(arguments[arg.name])
        for arg in manifest.args
        if arg.source == "entity_id" and arguments.get(arg.name) is not None
    ]


def acted_on(manifest: ToolManifest, arguments: dict[str, Any]) -> str | None:
    """The record a call acts on (its id argument of the tool's own entity), None for a create."""
    own = [a for a in manifest.args if a.source == "entity_id" and a.entity == manifest.entity]
    value = arguments.get(own[0].name) if own else None
    return None if value is None else str(value)


def id_arg(tool: ToolManifest, entity: str) -> ArgManifest | None:
    """The argument of ``tool`` that names a record of ``entity``, or None."""
    return next((a for a in tool.args if a.source == "entity_id" and a.entity == entity), None)


def makes_new(tool: ToolManifest) -> bool:
    """A create: no id argument names a record of the tool's own entity."""
    return not any(a.source == "entity_id" and a.entity == tool.entity for a in tool.args)
