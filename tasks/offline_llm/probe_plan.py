"""The fake testing agent's plan: its calls as one chain, the way a careful tester orders them.

Its calls run in order, each on the state the earlier successful ones left, so the tester plans
as one would: each state-changing call on a record no earlier call uses; a tool that needs a
record the state lacks acts on one a create made (``"$N.data.<entity>_id"``: the create tool's
own call, else one more) or one an earlier call moves into the status it needs (check in, then
complete); a tool that acts only once a record's time has come (``in_past``: a no-show, a
check-in) moves the clock to that time (``at_time``). Calls that move the clock go last,
earliest first, since the clock never moves back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from envmill.tasks.backends.procedural.manifest import ArgManifest, ToolManifest
from envmill.tasks.backends.procedural.spec.domain import OperationSpec
from envmill.tasks.offline_llm.probe_values import (
    free_record,
    negative_value,
    parse_time,
    positive_value,
    weak_spot,
)
from envmill.tasks.offline_llm.skeleton_source import TopicModule

MAX_CALLS_PER_TOOL = 3  # what the prompt allows per tool
NOON = "T12:00:00"  # a date-only time field, as a clock time on that day
SETUP_DEPTH = 2  # calls that may set one up: create, check in, then complete


@dataclass(frozen=True)
class Ref:
    """What ``call`` (an earlier call of the answer) returned at ``path``; numbered once the
    calls are laid out in order."""

    call: dict[str, Any] = field(compare=False)
    path: str


@dataclass
class Unit:
    """Calls that belong together (a set-up call and the call it sets up), and the latest time
    they move the clock to."""

    calls: list[dict[str, Any]]
    at: str | None = None


Found = tuple[Unit | None, Any, dict[str, Any]]  # set-up calls, a record's id, its values


@dataclass
class Planner:
    """One answer's plan over the state shown; ``naive`` plans as if every call ran on the
    initial state (no set-up calls, no clock, any record)."""

    module: TopicModule
    state: dict[str, Any]
    naive: bool = False
    claimed: set[str] = field(default_factory=set)
    used: dict[str, int] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)  # own calls not planned yet
    made: list[tuple[str, Ref, dict[str, Any]]] = field(default_factory=list)  # new, unused

    @property
    def now(self) -> datetime | None:
        return parse_time(self.state.get("current_time"))

    def unit(self, name: str, kind: str) -> Unit | None:
        """The calls for one tool's ``kind`` of probe, None when it has none to give."""
        manifest = self.module.tool(name)
        self.pending[name] = max(self.pending.get(name, 1) - 1, 0)
        if manifest is None:
            return None
        if kind == "negative":
            return self._negative(manifest)
        operation = operation_of(self.module, manifest)
        if manifest.kind == "query" or operation is None:
            return Unit([self.call_of(manifest, "positive", self.arguments_for(manifest, False))])
        return self._change(manifest, operation)

    def _negative(self, manifest: ToolManifest) -> Unit | None:
        if not manifest.args:
            return None
        arguments = self.arguments_for(manifest, False)
        arg = min(manifest.args, key=weak_spot)
        wrong, why = negative_value(arg, self.state)
        verb = manifest.tool.replace("_", " ")
        expectation = f"Should refuse to {verb}: {why}."
        self.used[manifest.tool] = self.used.get(manifest.tool, 0) + 1
        return Unit([call(manifest.tool, "negative", {**arguments, arg.name: wrong}, expectation)])

    def _change(self, manifest: ToolManifest, operation: OperationSpec) -> Unit:
        target = target_arg(manifest)
        found = None
        if operation.kind != "create" and target is not None and not self.naive:
            found = self._fitting(manifest, target, SETUP_DEPTH)
        if target is None or found is None:
            arguments = self.arguments_for(manifest, True)
            own = self.call_of(manifest, "positive", arguments)
            if operation.kind == "create":  # a new record a later call may act on
                new_id = Ref(own, f"data.{manifest.entity}_id")
                self.made.append((manifest.entity, new_id, arguments))
            return Unit([own])
        before, key, record = found
        return self._acted(manifest, operation, target, key, record, before)

    def _fitting(self, manifest: ToolManifest, target: ArgManifest, depth: int) -> Found | None:
        """A record ``target`` may name: a free one of the state (no call first), a new one (a
        create first), or one an earlier call moves into the status it needs."""
        records = self.state.get(target.state_attr or "", {})
        key = free_record(records, target.prefer, self.claimed)
        if key is not None:
            return None, key, records[key]
        made = self._made(manifest, target)
        if made is not None or depth <= 1:
            return made
        for mover in self._setups(manifest):
            spec, step_target = operation_of(self.module, mover), target_arg(mover)
            if spec is None or step_target is None or not _moves_into(spec, target):
                continue
            found = self._fitting(mover, step_target, depth - 1)
            if found is not None:
                before, key, record = found
                return self._acted(mover, spec, step_target, key, record, before), key, record
        return None

    def _made(self, manifest: ToolManifest, target: ArgManifest) -> Found | None:
        """A create of the tool's entity, when a new record starts in a status ``target`` takes:
        the unit making it, its id (what the create returns) and its values."""
        makers = [
            t
            for t in self._setups(manifest)
            if getattr(operation_of(self.module, t), "kind", "") == "create"
        ]
        status = self.module.compiled.spec.entities[manifest.entity].status
        wanted = target.prefer.get(status.field) if status else None
        if status and wanted is not None and status.initial not in wanted:
            return None
        for index, (entity, new_id, values) in enumerate(self.made):
            if entity == manifest.entity:
                del self.made[index]
                return None, new_id, values
        if not makers:
            return None
        arguments = self.arguments_for(makers[0], True)
        setup = self.call_of(makers[0], "positive", arguments, None, setup=True)
        return Unit([setup]), Ref(setup, f"data.{manifest.entity}_id"), arguments

    def _acted(
        self,
        manifest: ToolManifest,
        operation: OperationSpec,
        target: ArgManifest,
        key: Any,
        record: dict[str, Any],
        before: Unit | None = None,
    ) -> Unit:
        """The tool on record ``key`` (after the calls of ``before``), the clock moved to the
        record's time when the tool waits for it."""
        if isinstance(key, str):
            self.claimed.add(key)
        at = self.clock_for(record, operation, before.at if before else None)
        fixed = {target.name: key}
        own = self.call_of(manifest, "positive", self.arguments_for(manifest, True, fixed), at)
        earlier = before.calls if before else []
        return Unit([*earlier, own], at or (before.at if before else None))

    def _setups(self, manifest: ToolManifest) -> list[ToolManifest]:
        """Other state-changing tools of the same entity that the role signed in may use, with a
        call left in their budget."""
        role = self.state.get("acting_role")
        return [
            t
            for t in self.module.compiled.tools
            if t.kind == "state_change"
            and t.entity == manifest.entity
            and t.tool != manifest.tool
            and (role is None or not t.roles or role in t.roles)
            and self.used.get(t.tool, 0) + self.pending.get(t.tool, 0) < MAX_CALLS_PER_TOOL
        ]

    def clock_for(
        self, record: dict[str, Any], operation: OperationSpec, since: str | None = None
    ) -> str | None:
        """The time to move the clock to before acting on ``record``: the latest of its times
        the operation waits for (``in_past``) that lies ahead of the clock, else None."""
        if self.naive:
            return None
        clock = parse_time(since) if since else self.now
        ahead = []
        for name in waits_for(operation):
            value = record.get(name)
            text = f"{value}{NOON}" if isinstance(value, str) and len(value) == 10 else value
            when = parse_time(text)
            if when is not None and (clock is None or when > clock):
                ahead.append((when, str(text)))
        return max(ahead)[1] if ahead else None

    def arguments_for(
        self, manifest: ToolManifest, changes: bool, fixed: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Values for the required arguments; a state-changing call claims the records it
        names, so a later one picks others."""
        claimed = self.claimed if changes and not self.naive else set()
        wanted = {arg.name for arg in manifest.args if arg.required} | set(fixed or {})
        if changes and not self.naive and wanted <= {a.name for a in id_args(manifest)}:
            extra = [a.name for a in manifest.args if a.name not in wanted and not a.entity]
            wanted |= set(extra[:1])  # an update of optional fields changes at least one
        arguments = {}
        for arg in manifest.args:
            if arg.name not in wanted:
                continue
            value = (fixed or {}).get(arg.name)
            if value is None:
                value = positive_value(arg, self.state, self.module, claimed)
            if changes and arg.source == "entity_id" and isinstance(value, str):
                self.claimed.add(value)
            arguments[arg.name] = value
        return arguments

    def call_of(
        self,
        manifest: ToolManifest,
        kind: str,
        arguments: dict[str, Any],
        at: str | None = None,
        setup: bool = False,
    ) -> dict[str, Any]:
        self.used[manifest.tool] = self.used.get(manifest.tool, 0) + 1
        verb = manifest.tool.replace("_", " ")
        shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items() if not isinstance(v, Ref))
        expectation = f"Should {verb} for {shown or 'no arguments'} and report success."
        if setup:
            expectation = f"Sets up the next call: should {verb} and report success."
        return call(manifest.tool, kind, arguments, expectation, at)


def call(
    tool: str, kind: str, arguments: dict[str, Any], expectation: str, at: str | None = None
) -> dict[str, Any]:
    made = {"tool": tool, "kind": kind, "arguments": arguments, "expectation": expectation}
    return {**made, "at_time": at} if at else made


def laid_out(units: list[Unit]) -> list[dict[str, Any]]:
    """The calls in the order they run: every call before a unit's first clock move (as
    planned: a create for a later call is made while its time is still ahead), then the units'
    calls from there, earliest clock first; references numbered by position (from 1)."""
    still, moving = [], []
    for unit in units:
        first = next((i for i, c in enumerate(unit.calls) if c.get("at_time")), len(unit.calls))
        still += unit.calls[:first]
        if first < len(unit.calls):
            moving.append(Unit(unit.calls[first:], unit.at))
    moving.sort(key=lambda unit: parse_time(unit.at) or datetime.max)
    ordered = [*still, *(made for unit in moving for made in unit.calls)]
    number = {id(made): position for position, made in enumerate(ordered, 1)}
    return [
        {**made, "arguments": {k: _numbered(v, number) for k, v in made["arguments"].items()}}
        for made in ordered
    ]


def _numbered(value: Any, number: dict[int, int]) -> Any:
    return f"${number[id(value.call)]}.{value.path}" if isinstance(value, Ref) else value


def operation_of(module: TopicModule, manifest: ToolManifest) -> OperationSpec | None:
    """The spec operation a compiled tool was made from (its name or one of its aliases)."""
    entity = module.compiled.spec.entities.get(manifest.entity)
    operations = entity.operations if entity else []
    return next((op for op in operations if manifest.tool in (op.name, *op.aliases)), None)


def id_args(manifest: ToolManifest) -> list[ArgManifest]:
    return [arg for arg in manifest.args if arg.source == "entity_id"]


def target_arg(manifest: ToolManifest) -> ArgManifest | None:
    """The argument naming the record an update acts on."""
    return next(
        (a for a in manifest.args if a.source == "entity_id" and a.entity == manifest.entity),
        None,
    )


def waits_for(operation: OperationSpec) -> list[str]:
    """The target's time fields the operation acts on only once they have come (``in_past``)."""
    return [
        rule.value.split(".", 1)[1]
        for rule in operation.preconditions
        if rule.kind == "in_past" and re.fullmatch(r"target\.\w+", rule.value)
    ]


def _moves_into(operation: OperationSpec, target: ArgManifest) -> bool:
    """Whether the operation's transition ends in a status ``target`` prefers."""
    wanted = [value for values in target.prefer.values() for value in values]
    return any(effect.kind == "transition" and effect.to in wanted for effect in operation.effects)
