"""Conditional sub-goals: "if the stock of X is below 30, restock it; otherwise, lower its price".

The first step of the chain is conditional. The branch not taken (B) is drawn and run first, then
rolled back: it must succeed on the same state, so both branches are plausible. Both act on one
record, and the test reads a number of it that a branch changes, with a get tool, so the test
is about what the action does; A leaves none of B's values (``_not_done``). The threshold is a
round number near that value, on the side a coin chose, so the condition is true or false in
the state and the reference (which reads the record first, unless the search that found it
already showed that number) follows the branch it makes true.
``derive_checks.derive_absence_check`` then verifies that B's changes did not happen.

The numbers are a person's (:mod:`round_numbers`): the branches' amounts and the threshold are
round, and a threshold over a branch that takes some of the number away is at least what it
takes ("if it has $500 or more, move $200 out of it"), so the test is the reason for the choice.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from typing import Any

from envmill.schemas.answers import ExpectedAnswer
from envmill.schemas.scenario import SolutionStep
from envmill.tasks.backends.procedural.checks.answers import expected_answer
from envmill.tasks.backends.procedural.checks.derive import words_of
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment, ToolManifest
from envmill.tasks.backends.procedural.phrasing.task import condition_subject
from envmill.tasks.backends.procedural.phrasing.words import is_money, order_phrases
from envmill.tasks.backends.procedural.plan import plan_environment
from envmill.tasks.backends.procedural.scenarios.chains import (
    ArgMention,
    Chain,
    ChainStep,
    Condition,
    _ChainSampler,
    _reads_one,
    _value_at,
    id_arg,
)
from envmill.tasks.backends.procedural.scenarios.lookups import shown
from envmill.tasks.backends.procedural.scenarios.questions import say
from envmill.tasks.backends.procedural.scenarios.round_numbers import (
    grid_near,
    round_down,
    round_up,
    round_within,
    rounded_amount,
)
from envmill.tasks.backends.procedural.scenarios.subjects import read_by_id
from envmill.tasks.backends.procedural.spec.domain import PolicySpec
from envmill.tasks.backends.procedural.spec.rules import Compare
from envmill.tasks.certify.generated import is_generated
from envmill.tasks.core.facts import is_plural
from envmill.tasks.core.field_words import field_noun, singular
from envmill.tasks.core.statekit import diff_states
from envmill.tasks.rollout.closing import changed_numbers, what_changed

UNDOING = re.compile(
    r"^(?:cancel|void|reject|decline|deny|refuse|remove|delete|close|terminate|end|withdraw|"
    r"suspend|block|bar|flag|dispute|appeal|open_appeal|open_audit|scrap|write_off|retire)"
)


CAUTIOUS = re.compile(
    r"^(?:review|hold|put_on_hold|flag|escalate|refer|assign|inspect|audit|verify|dispute|"
    r"appeal|open_appeal|open_audit|open_dispute|send_for|submit_for|request_review)"
)


PAIRS_TRIED = 4


class ConditionalSampler(_ChainSampler):
    """The first step is conditional: a branch not taken (run, then rolled back) and a test on
    a record the taken step names, whose outcome the state decides."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.otherwise: tuple[ChainStep, dict[str, Any]] | None = None
        self.mark: Mark | None = None
        self.declared = declared_policies(self.compiled, self.changers)
        self.policy: Declared | None = None

    def sample(self, target_len: int, max_attempts: int) -> Chain | None:
        """A few pairs of branches are tried: most pairs make no policy together ("void the
        sale if it is $210 or more; if not, ship it"), and those are refused."""
        for _ in range(PAIRS_TRIED):
            chain = self._sample_pair(target_len, max_attempts)
            if chain is not None:
                return chain
        return None

    def _sample_pair(self, target_len: int, max_attempts: int) -> Chain | None:
        initial = self.chain.initial_state
        if self.chain.steps:  # the last pair's chain made no condition: start again
            self.episode.load_state(initial)
            self.state, self.chain = initial, Chain(initial_state=initial, final_state=initial)
        for _ in range(max_attempts):
            self.otherwise = self._draw_otherwise()
            if self.otherwise is not None:
                break
        if self.otherwise is None:
            return None
        chain = super().sample(target_len, max_attempts)
        if chain is None or chain.steps[0].condition is None:
            return None
        return chain if _not_done(self.otherwise[0], chain.final_state, chain.steps[0]) else None

    def _draw_otherwise(self) -> tuple[ChainStep, dict[str, Any]] | None:
        """A state change that would succeed now; rolled back, with its mentions and state."""
        if self.declared:  # the domain says which choices it makes: only those
            policy = self.policy = self.rng.choice(self.declared)
            manifest = self.rng.choice((policy.high, policy.low))
        else:
            acting = [t for t in self.changers if id_arg(t, t.entity) is not None and _orders(t)]
            paired = [t for t in acting if any(o.entity == t.entity and o is not t for o in acting)]
            if not paired:
                return None
            manifest = self.rng.choice(paired)
        arguments = self.drawer.draw_arguments(manifest, self.state)
        if arguments is None:
            return None
        in_round_numbers(manifest, arguments)
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
        if not ok:
            return None
        changes = [c for c in diff_states(before, after) if not is_generated(c)]
        if not changes:
            return None
        return ChainStep(manifest, arguments, mentions, changes), after

    def _choose_changer(self) -> ToolManifest | None:
        if self.chain.steps or self.otherwise is None:
            return super()._choose_changer()
        other = self.otherwise[0].manifest
        if self.policy is not None:
            return self.policy.low if other is self.policy.high else self.policy.high
        alike = [
            t
            for t in self.changers
            if t.tool != other.tool and t.entity == other.entity and _orders(t)
        ]
        return self.rng.choice(alike or [None])

    def _adjust(self, manifest: ToolManifest, arguments: dict[str, Any]) -> bool:
        """The first step acts on the record the other branch acts on."""
        if self.chain.steps or self.otherwise is None:
            return True
        other = self.otherwise[0]
        arg = id_arg(manifest, manifest.entity)
        record = id_arg(other.manifest, manifest.entity)
        if arg is None or record is None or record.name not in other.arguments:
            return False
        arguments[arg.name] = other.arguments[record.name]
        in_round_numbers(manifest, arguments)
        self.mark = None
        moves = _record_moves(other.changes, arguments)
        # only a sum kept at a level is brought to a mark: "they keep its balance at $1,000" is
        # no one's request (round 39)
        kept = any(self._kept_level(manifest.entity, c["path"][-1]) for c in moves)
        if self.policy is None and kept and _money_args(manifest, arguments):
            before = self.state  # which way this branch moves the number: tried, rolled back
            _, after, _ = self._run(manifest.tool, arguments)
            self._restore(before, after)
            self.mark = _aim(manifest, arguments, other, before, diff_states(before, after))
        return True

    def _kept_level(self, entity: str | None, field: str) -> bool:
        """A sum the domain says its holder keeps at a level (an evergreen retainer): only
        there does "bring it back to $X" have a reason (round 39: a bank balance "kept at
        $1,000" read as contrived to every rater)."""
        spec = self.compiled.spec.entities.get(entity or "")
        kept = spec.fields.get(field) if spec is not None else None
        return kept is not None and kept.kept_level

    def _maybe_inform(self, manifest: ToolManifest, arguments: dict[str, Any], calls: list) -> None:
        """No look before the conditional step: the read the condition needs is that look, and
        is left out when the search that found the record showed the number (``_shown``)."""
        if self.chain.steps:
            super()._maybe_inform(manifest, arguments, calls)

    def _wants(self, mentions: list[ArgMention]) -> bool:
        if self.chain.steps:
            return True
        other = self.otherwise[0] if self.otherwise else None
        return any(
            self._readable(m) and other is not None and _concerns(other, m, self.state)
            for m in mentions
        )

    def _kept(self, step: ChainStep) -> None:
        if len(self.chain.steps) != 1 or self.otherwise is None:
            return
        if self.policy is not None:
            condition, read = self._declared(step, self.policy)
        elif self.mark:
            condition, read = self._aimed(step, self.mark)
        else:
            condition, read = self._condition(step)
        if condition is None:
            return
        step.condition = condition
        if read not in self.chain.solution and not self._shown(condition):
            self.chain.solution.insert(len(self.chain.solution) - 1, read)
        for cover in self._covering_reads(step, condition.record.value):
            if cover not in self.chain.solution:
                self.chain.solution.insert(len(self.chain.solution) - 1, cover)

    def _covering_reads(self, step: ChainStep, record_id: Any) -> list[SolutionStep]:
        """The reads of the records a rule of the taken step compares through a link ("store
        credit covers the full total": the customer's credit), so the agent looks before it
        acts; raters of rounds 42 to 44 marked "pays with store credit without checking that
        the credit covers it" every time."""
        plan = plan_environment(self.compiled.spec, self.compiled.seed)
        tool = next((t for t in plan.tools if t.name == step.manifest.tool), None)
        attr = self.compiled.entity_attrs.get(step.manifest.entity, "")
        record = (self.chain.initial_state.get(attr) or {}).get(record_id) or {}
        reads = []
        for rule in tool.op.preconditions if tool else []:
            if not isinstance(rule, Compare):
                continue
            for side in (rule.left, rule.right):
                parts = str(side).split(".")
                if len(parts) == 3 and parts[0] == "target" and record.get(parts[1]):
                    read = read_by_id(self.compiled, self.chain.initial_state, record[parts[1]])
                    reads += [read] if read is not None and read not in reads else []
        return reads

    def _shown(self, condition: Condition) -> bool:
        """A query the reference already made (the search that found the client by name)
        showed the number the condition reads: a second read of the record adds nothing."""
        record, field = condition.record.value, condition.field
        for earlier in self.chain.solution[:-1]:
            if earlier.tool in self.queries:
                result = self._query(earlier.tool, earlier.arguments) or {}
                if shows_field(result.get("data"), record, field):
                    return True
        return False

    def _condition(self, step: ChainStep) -> tuple[Condition | None, Any]:
        """A test on a number of the record both steps act on that one of them changes; the
        branch that raises it goes with low values, the one that lowers it with high ones."""
        before = self.chain.initial_state
        if self.otherwise is None:
            return None, None
        other = self.otherwise[0]
        own = [m for m in step.mentions if m.entity == step.manifest.entity and self._readable(m)]
        for mention in own:  # the record the taken step acts on: "if its fee …, cancel it"
            if not _concerns(other, mention, before):
                continue  # both branches are about the record the condition tests
            attr = self.compiled.entity_attrs[mention.entity or ""]
            record = _value_at(before, [attr, mention.value])
            fields = _testable_fields(step, other, attr, mention.value, record)
            if not fields:
                continue
            field = self.rng.choice(fields)
            holds, op = self.rng.random() < 0.5, self.rng.choice((">=", "<"))
            moved = _moved_by(step, other, [attr, mention.value, field])
            if _no_policy(step, other, [attr, mention.value, field]):
                continue
            if moved is not None:  # "below 30, restock it": the branch for low values raises it
                by_taken, raises = moved
                holds = by_taken == ((op == "<") == raises)
            elif _defers_the_large(step, other):  # "$10,000 or more, send it for review; …"
                op, holds = ">=", _cautious(step)
            else:
                continue  # "void the sale if it is $210 or more; if not, ship it": no policy
            least = _lowered_by(step, other, [attr, mention.value, field])
            threshold = _threshold(record[field], op, holds, self.rng, least)
            if threshold is None:
                continue
            getter = self._getter(mention.entity)  # a readable mention has one
            if getter is None or self.otherwise is None:
                continue
            read = SolutionStep(tool=getter.tool, arguments={getter.args[0].name: mention.value})
            other, untaken = self.otherwise
            condition = Condition(mention, field, op, threshold, holds, other, untaken)
            return condition, read
        return None, None

    def _declared(self, step: ChainStep, policy: Declared) -> tuple[Condition | None, Any]:
        """The condition of a policy the domain declares: the taken branch is ``high`` when
        the record's number is at or above a round threshold near it, ``low`` below it."""
        assert self.otherwise is not None
        other, untaken = self.otherwise
        before = self.chain.initial_state
        for mention in step.mentions:
            if mention.entity != step.manifest.entity or not self._readable(mention):
                continue
            if not _concerns(other, mention, before):
                continue
            attr = self.compiled.entity_attrs[mention.entity or ""]
            value = _value_at(before, [attr, mention.value, policy.spec.field])
            if not _applies(policy.spec, _value_at(before, [attr, mention.value])):
                continue
            getter = self._getter(mention.entity)
            if not _is_number(value) or getter is None:
                continue
            holds = step.manifest is policy.high
            threshold = _threshold(float(value), ">=", holds, self.rng, policy.spec.least)
            if threshold is None:
                continue
            read = SolutionStep(tool=getter.tool, arguments={getter.args[0].name: mention.value})
            own = self._voice_is_own()
            why = policy.spec.why_own if own and policy.spec.why_own else policy.spec.why
            field = policy.spec.field
            condition = Condition(
                mention,
                field,
                ">=",
                threshold,
                holds,
                other,
                untaken,
                why=why,
                policy=policy.spec,
                own=own,
            )
            return condition, read
        return None, None

    def _voice_is_own(self) -> bool:
        """Whether the signed-in person acts as their own record (a customer, not staff)."""
        return _speaks_as_self(self.compiled, self.state)

    def _aimed(self, step: ChainStep, mark: Mark) -> tuple[Condition | None, Any]:
        """The condition of branches aimed at a mark (``_aim``): the number is below the mark
        and the taken branch adds the difference, or above it and the branch takes the excess
        away; each branch's amount is said as that ("add the difference to their retainer")."""
        assert self.otherwise is not None
        other, untaken = self.otherwise
        for mention in step.mentions:
            if mention.entity != step.manifest.entity or not self._readable(mention):
                continue
            path = [self.compiled.entity_attrs[mention.entity or ""], mention.value, mark.field]
            value = _value_at(self.chain.initial_state, path)
            moved = [c["new"] - c["old"] for c in step.changes if c["path"] == path]
            getter = self._getter(mention.entity)
            if not _is_number(value) or len(moved) != 1 or getter is None:
                continue
            if abs(value + moved[0] - mark.value) > 0.005:
                continue
            for branch in (step, other):
                said = "the difference" if mark.raises == (branch is step) else "the excess"
                branch.mentions = [
                    replace(m, described=said) if m.name == mark.amount(branch) else m
                    for m in branch.mentions
                ]
            read = SolutionStep(tool=getter.tool, arguments={getter.args[0].name: mention.value})
            op = "<" if mark.raises else ">="
            return Condition(mention, mark.field, op, mark.value, True, other, untaken, True), read
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


@dataclass(frozen=True)
class Declared:
    """A policy of the domain (``PolicySpec``) with the two tools it chooses between."""

    spec: PolicySpec
    high: ToolManifest
    low: ToolManifest


def declared_policies(
    compiled: CompiledEnvironment, changers: list[ToolManifest]
) -> list[Declared]:
    """The domain's policies whose two operations this environment has as tools."""
    names = plan_environment(compiled.spec, compiled.seed).tool_names
    by_tool = {t.tool: t for t in changers}
    found = []
    for entity in compiled.spec.entities.values():
        for policy in entity.policies:
            high = by_tool.get(names.get(policy.high, ""))
            low = by_tool.get(names.get(policy.low, ""))
            if high is not None and low is not None:
                found.append(Declared(policy, high, low))
    return found


@dataclass(frozen=True)
class Mark:
    """A round number the branches bring a field to: the taken one ``raises`` it to the mark
    from below (adding the difference), or lowers it from above (taking the excess away)."""

    field: str
    value: float
    raises: bool
    amounts: tuple[tuple[str, str], ...]  # (tool, its amount argument) of each branch

    def amount(self, branch: ChainStep) -> str | None:
        return dict(self.amounts).get(branch.manifest.tool)


MARK_BEYOND = 0.15  # the share of the number the mark lies past it, then made round


def _aim(
    manifest: ToolManifest,
    arguments: dict[str, Any],
    other: ChainStep,
    state: dict[str, Any],
    ours: list[dict[str, Any]],
) -> Mark | None:
    """Branches that move one money field of the record in opposite directions (a deposit
    and a refund on a retainer; ``ours``: this branch's changes, tried) aim at a mark: this
    branch's amount becomes the difference between the field and a round number past it,
    within what the tool takes, so the request is "bring it to $8,000" and each amount has its
    reason (raters read "if below $8,000, add $20; if not, refund $400" as a logic puzzle).
    None when the branches are of another shape, or move the number the same way."""
    theirs = _record_moves(other.changes, arguments)
    ours_args = _money_args(manifest, arguments)
    theirs_args = _money_args(other.manifest, other.arguments)
    if len(theirs) != 1 or len(ours_args) != 1 or len(theirs_args) != 1:
        return None
    path = theirs[0]["path"]
    mine = [c for c in _record_moves(ours, arguments) if c["path"] == path]
    value, arg = _value_at(state, path), ours_args[0]
    if len(mine) != 1 or not _is_number(value) or value <= 0 or arg.source == "int":
        return None  # (a count moved to a mark: a whole-number difference is a coincidence)
    raises = mine[0]["new"] > mine[0]["old"]
    if raises == (theirs[0]["new"] > theirs[0]["old"]):
        return None  # both one way: "if below, withdraw; if not, refund" has no mark
    reach = float(arg.maximum) if arg.maximum is not None else float(value)
    step = min(value * MARK_BEYOND, reach)  # how far past the number, within the tool's reach
    if raises:
        mark = round_within(value + step, value + 1, value + reach)
    else:
        mark = round_within(value - step, max(value - reach, 1.0), value - 1)
    amount = round(abs(mark - value), 2)
    round_mark = any(abs(mark - g) < 1e-6 for g in grid_near(mark)) if mark > 0 else False
    if not round_mark or amount < 1 or amount > reach or (mark > value) != raises:
        return None  # "$6,957" is no one's mark
    arguments[arg.name] = amount
    amounts = ((manifest.tool, arg.name), (other.manifest.tool, theirs_args[0].name))
    return Mark(path[-1], float(mark), raises, amounts)


def _record_moves(changes: list[dict[str, Any]], arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """Numbers moved on a record the call names (a transfer moves the receiving account too)."""
    return [
        c
        for c in changes
        if len(c.get("path", [])) == 3
        and c["path"][1] in arguments.values()
        and _is_number(c.get("old"))
        and _is_number(c.get("new"))
    ]


def _money_args(manifest: ToolManifest, arguments: dict[str, Any]) -> list[Any]:
    return [
        a
        for a in manifest.args
        if a.source == "float" and a.name in arguments and is_money(a.name, arguments[a.name])
    ]


def _applies(policy: PolicySpec, record: Any) -> bool:
    """Whether the policy concerns the record: no one declines sick leave for want of cover
    (round 53)."""
    return isinstance(record, dict) and all(
        str(record.get(name)) in values for name, values in policy.when.items()
    )


def _no_policy(taken: ChainStep, other: ChainStep, path: list) -> bool:
    """Branches no one would pair on this number: moves both ways with amounts chosen apart
    ("below $8,000, add $20; if not, refund $400": ``_aim`` pairs them by a mark instead), or
    an ending for a number that moves ("arrears under $3,000: terminate the lease")."""
    moves = _moves(taken, other, path)
    if len({raises for _, raises in moves}) > 1:
        return True
    return bool(moves) and any(_undoes(b) for b in (taken, other))


def _undoes(branch: ChainStep) -> bool:
    """The branch refuses or ends something (cancel, void, reject …): never the branch that
    goes ahead while the other defers."""
    return bool(UNDOING.match(branch.manifest.tool))


def _defers_the_large(step: ChainStep, other: ChainStep) -> bool:
    """One branch defers the decision and the other goes ahead with the work (not cancels it:
    "review the big claims, cancel the small ones" is no one's policy)."""
    cautious = [_cautious(b) for b in (step, other)]
    ahead = other if cautious[0] else step
    return cautious.count(True) == 1 and not _undoes(ahead)


def _cautious(branch: ChainStep) -> bool:
    """The branch defers the decision (review, appeal, hold, escalate …): what a policy does
    with the large sums, while the small ones go ahead."""
    return bool(CAUTIOUS.match(branch.manifest.tool))


def _orders(tool: ToolManifest) -> bool:
    """The tool has a phrase that asks for its act, so it can be a branch ("void it"), not
    only ones that tell what happened ("the truck just left")."""
    return bool(order_phrases(tool.phrases))


def _concerns(step: ChainStep, mention: ArgMention, state: dict[str, Any]) -> bool:
    """``step`` acts on the record ``mention`` names, so both branches are about one thing
    ("if its fee is below $140, cancel it; otherwise, mark it completed")."""
    return any(
        m.source == "entity_id" and m.entity == step.manifest.entity and m.value == mention.value
        for m in step.mentions
    )


def _testable_fields(
    step: ChainStep, other: ChainStep, attr: str, record_id: Any, record: dict[str, Any]
) -> list[str]:
    """Numbers of the record a test may read so that the two branches make sense together:
    when both branches decide the record's state ("approve it" / "reject it"), a sum of money
    neither changes ("if the claimed amount is below $500, approve it; otherwise, reject it");
    else a number both move, in opposite directions ("if the stock is below 30, restock it;
    otherwise, write off the damaged units"). Two unrelated changes get no test."""
    numbers = {n for n, v in record.items() if _is_number(v)}
    if _decides_between(step, other, attr, record_id):  # on a sum of money, as a policy would
        moved = {str(c["path"][2]) for b in (step, other) for c in _own_changes(b, attr, record_id)}
        return sorted(n for n in numbers - moved if is_money(n, record[n]))
    touched = _fields_changed(step, other, attr, record_id)
    return sorted(
        n
        for n in numbers & touched
        if len({up for _, up in _moves(step, other, [attr, record_id, n])}) == 2
    )


def _decides_between(step: ChainStep, other: ChainStep, attr: str, record_id: Any) -> bool:
    """Both branches set one text field of the record (its status) to different values."""
    said = [
        {str(c["path"][2]): c.get("new") for c in _own_changes(b, attr, record_id)
         if isinstance(c.get("new"), str)}
        for b in (step, other)
    ]  # fmt: skip
    return any(said[1].get(name, value) != value for name, value in said[0].items())


def _own_changes(branch: ChainStep, attr: str, record_id: Any) -> list[dict[str, Any]]:
    """The branch's changes to fields of the record (not to its children)."""
    return [c for c in branch.changes if c["path"][:2] == [attr, record_id] and len(c["path"]) == 3]


def _fields_changed(step: ChainStep, other: ChainStep, attr: str, record_id: Any) -> set[str]:
    """Fields of the record a branch moves: the test reads what the action is about ("if the
    stock is below 30, restock it"), not a number beside it, nor one a branch sets to a value
    it was given ("if the price is below $80, set it to $245" has no reason)."""
    return {
        str(c["path"][2])
        for branch in (step, other)
        for c in _own_changes(branch, attr, record_id)
        if c.get("new") not in branch.arguments.values()
    }


def _moved_by(taken: ChainStep, other: ChainStep, path: list) -> tuple[bool, bool] | None:
    """How a branch moves the number at ``path`` (the taken one's move first): (it is the taken
    one, it raises the number); None when neither moves it."""
    moves = _moves(taken, other, path)
    return moves[0] if moves else None


def _moves(taken: ChainStep, other: ChainStep, path: list) -> list[tuple[bool, bool]]:
    """(by the taken branch, raises) for each branch's move of the number at ``path``."""
    return [
        (branch is taken, c["new"] > c["old"])
        for branch in (taken, other)
        for c in branch.changes
        if c["path"] == path and _is_number(c.get("old")) and _is_number(c.get("new"))
    ]


def _lowered_by(taken: ChainStep, other: ChainStep, path: list) -> float:
    """How much a branch takes away from the number at ``path`` (0 when none lowers it): the
    least a threshold over that branch may be, so "if it has $X or more" covers what it takes."""
    drops = [
        c["old"] - c["new"]
        for branch in (taken, other)
        for c in branch.changes
        if c["path"] == path and _is_number(c.get("old")) and _is_number(c.get("new"))
    ]
    return max([0.0, *drops])


def in_round_numbers(manifest: ToolManifest, arguments: dict[str, Any]) -> None:
    """The amounts of a branch, in place, as the round numbers a person picks ("put $200 into
    it", not "$219.06"): a conditional's amounts are the user's choice."""
    for arg in manifest.args:
        if arg.source in ("int", "float") and arg.name in arguments:
            value = arguments[arg.name]
            arguments[arg.name] = rounded_amount(arg, value, is_money(arg.name, value))


def shows_field(data: Any, record_id: Any, field: str) -> bool:
    """Whether query data holds the record (a dict naming ``record_id``) with ``field``."""
    if isinstance(data, dict):
        if field in data and record_id in data.values():
            return True
        return any(shows_field(v, record_id, field) for v in data.values())
    if isinstance(data, list):
        return any(shows_field(v, record_id, field) for v in data)
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _threshold(
    value: float, op: str, holds: bool, rng: random.Random, least: float = 0.0
) -> float | None:
    """A round number near ``value`` on the side that makes ``value op threshold`` == holds,
    and not below ``least`` (what the branch for high values takes away)."""
    above = (op == "<") == holds  # the threshold lies above the value
    if value <= 0 and not above:
        return None
    factor = rng.uniform(1.15, 1.6) if above else rng.uniform(0.5, 0.85)
    raw = max(value * factor, value + 1) if above else value * factor
    threshold = round_up(max(raw, least)) if above else round_down(raw)
    if threshold is None or threshold < least:
        threshold = round_up(least) if least > 0 else None
    if threshold is None:
        return None
    truth = value >= threshold if op == ">=" else value < threshold
    return float(threshold) if truth == holds and threshold > 0 else None


def _not_done(otherwise: ChainStep, final: dict[str, Any], taken: ChainStep | None = None) -> bool:
    """The branch not taken left no trace in the final state: none of its field values, but
    for what both branches do alike (a decision's time, stamped by approving and rejecting)."""
    shared = {(tuple(c["path"]), repr(c.get("new"))) for c in (taken.changes if taken else [])}
    for change in otherwise.changes:
        if (tuple(change["path"]), repr(change.get("new"))) in shared:
            continue
        if change["op"] == "change" and _value_at(final, change["path"]) == change["new"]:
            return False
    return True


def _given(chain: Chain) -> list[float]:
    """The numbers the request itself gave ("move $20"): a reply may repeat them ("account
    ACC-1's balance went up by $20.00") without guessing."""
    return [
        v
        for step in chain.steps
        for v in step.arguments.values()
        if isinstance(v, int | float) and not isinstance(v, bool)
    ]


def _other_record(chain: Chain, condition: Condition, records: dict) -> Any:
    """Another record of the tested one's kind that the taken branch named (the account the
    excess went to); None when it named none."""
    step = next((s for s in chain.steps if s.condition is condition), None)
    named = [v for k, v in (step.arguments if step else {}).items() if k.endswith("_id")]
    return next((v for v in named if v != condition.record.value and v in records), None)


def _moved(before: dict, after: dict, attr: str, condition: Condition) -> tuple[float, Any] | None:
    """How far the branch moved the number the condition read, and where it stands now."""
    old, new = (
        (state.get(attr) or {}).get(condition.record.value) or {} for state in (before, after)
    )
    start, end = old.get(condition.field), new.get(condition.field)
    if isinstance(start, bool) or isinstance(end, bool):
        return None
    if not isinstance(start, int | float) or not isinstance(end, int | float):
        return None
    return round(abs(end - start), 2), end


def _by_policy(condition: Condition, value: float, done: str) -> str:
    """A declared policy's reply: the number read, where it stands against the policy's limit,
    and what was done, the record named once ("The estimate of work order WO-4 is $385.00,
    above the $300 limit, so I've cancelled it")."""
    noun = field_noun(condition.field)
    side = (
        "above"
        if value > condition.threshold
        else "at"
        if value == condition.threshold
        else "below"
    )
    subject = condition_subject(condition.record, noun, vague=False)
    whole = float(condition.threshold).is_integer() and isinstance(value, int)
    if is_plural(noun) and " " not in noun and whole:  # "is for 2 days, below the 5-day limit"
        subject = subject.removeprefix(f"the {noun} of ")
        said = f"is for {value} {singular(noun) if value == 1 else noun}"
        limit = f"{int(condition.threshold)}-{singular(noun)}"
    else:
        verb = "are" if is_plural(noun) else "is"
        said, limit = (
            f"{verb} {say(condition.field, value)}",
            shown(condition.field, condition.threshold),
        )
    policy, their = condition.policy, "your" if condition.own else "their"
    written = (policy.high_done if condition.holds else policy.low_done) if policy else ""
    if written:  # the act as the domain says it: "so I've paid for it with your store credit"
        done = f"I've {written.format(their=their)}"
    if not done.startswith("I"):  # "so leave request LR-3 has been approved"
        done = done[:1].lower() + done[1:]
    named = f"{words_of(condition.record.entity or '')} {condition.record.value}"
    done = re.sub(rf"\b{re.escape(named)}\b", "it", done, count=1, flags=re.I)  # said once
    line = policy.line if policy and policy.line else "the {limit} limit"
    line = line.format(limit=limit, their=their)
    return f"{subject[:1].upper()}{subject[1:]} {said}, {side} {line}, so {done}."


def _speaks_as_self(compiled: CompiledEnvironment, state: dict) -> bool:
    """The signed-in person asks about their own records (a customer, not staff)."""
    role = compiled.roles.get(str(state.get(compiled.acting_role_attr or "")))
    return role is not None and role.entity is not None


def branch_answer(compiled: CompiledEnvironment, chain: Chain) -> tuple[ExpectedAnswer, str] | None:
    """What a conditional's reply must say (DESIGN §3.3): the value the condition read, typed,
    so an agent that guessed a branch without the lookup cannot state it; and the reference's
    words for it. None for a chain with no condition."""
    condition = next((s.condition for s in chain.steps if s.condition), None)
    if condition is None or not condition.record.entity:
        return None
    records = chain.initial_state.get(compiled.entity_attrs.get(condition.record.entity, ""), {})
    value = (records.get(condition.record.value) or {}).get(condition.field)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    money = is_money(condition.field, value)
    # the reply reports what the branch did to the record the condition read ("its balance is
    # now $40.29"): those numbers, and no other, are not a guess (not a counter, not another
    # account's balance)
    attr = compiled.entity_attrs.get(condition.record.entity, "")
    before, after = (
        {attr: {condition.record.value: (state.get(attr) or {}).get(condition.record.value)}}
        for state in (chain.initial_state, chain.final_state)
    )
    expected = expected_answer(
        value,
        "number",
        answer_type="money" if money else None,
        exempt=[condition.threshold, *changed_numbers(before, after), *_given(chain)],
    )
    said_value = say(condition.field, value)
    limit = shown(condition.field, condition.threshold)  # no "at least" by a number: a hedge
    if condition.target:  # "above the $150 target, so I took off the excess" ("up to": a hedge)
        test = f"{'below' if condition.op == '<' else 'above'} the {limit} target"
        raises = condition.op == "<"
        branch = f"so I {'added the difference' if raises else 'took out the excess'}"
        moved = _moved(before, after, attr, condition)
        if moved is not None:  # "so I added the $84.21 difference, and it is now $3,000.00"
            gap, now = moved
            gap_said = f"the {say(condition.field, gap)} {'difference' if raises else 'excess'}"
            other = _other_record(chain, condition, records)
            if other is None:
                branch = f"so I {'added' if raises else 'took out'} {gap_said}"
            else:  # where the excess went, or the difference came from (round 38)
                where = f"{'from' if raises else 'to'} {words_of(condition.record.entity or '')}"
                branch = f"so I moved {gap_said} {where} {other}"
            subject = condition_subject(condition.record, field_noun(condition.field), vague=False)
            verb = "are" if is_plural(field_noun(condition.field)) else "is"
            said = f"{subject[:1].upper()}{subject[1:]} {verb} {said_value}, {test}, {branch}"
            return expected, f"{said}, and it is now {say(condition.field, now)}."
    else:
        test = (
            f"which meets the {limit} you set"
            if value >= condition.threshold
            else f"below the {limit} you set"
        )
        branch = "so I went ahead" if condition.holds else "so I went with your other option"
    known: list = [[s.arguments, s.result] for s in chain.steps]  # what the agent can know
    if _speaks_as_self(compiled, chain.initial_state):  # "my order": the reply says "your
        known.append({"acting_id": chain.initial_state.get("acting_id")})  # store credit"
    done = what_changed(chain.initial_state, chain.final_state, known)
    if condition.why:  # a policy's limit: "Leave request LR-3 is for 2 days, below the 5-day
        return expected, _by_policy(condition, value, done)  # limit, so I've approved it"
    noun = field_noun(condition.field)
    verb = "are" if noun.endswith("s") and not noun.endswith(("ss", "us", "is")) else "is"
    subject = condition_subject(condition.record, noun, vague=False)  # as the task named it
    said = f"{subject[:1].upper()}{subject[1:]} {verb} {said_value}, {test}, {branch}: {done}."
    return expected, said
