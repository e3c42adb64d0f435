"""Domain specifications of the procedural backend (DESIGN §4): the data the compiler turns into
environment modules. The vocabulary is small on purpose; each kind is compiled by one codegen
function.

**Fields.** ``str``, ``int``, ``float``, ``bool``, ``enum(values)``, ``date`` ("YYYY-MM-DD"),
``datetime`` (ISO 8601, seconds), ``ref(entity)`` (the id of another entity). YAML shorthand:
``"int"``, ``"date?"`` (``?`` = nullable), ``"enum(a, b)"``, ``"ref(member)"``. Every entity also
has ``<entity>_id`` (formatted by ``id_format`` from the state counter ``next_<entity>_number``).

**Paths** name a field the operation can see: ``target.status`` (the entity the operation acts on),
``book_id.stock`` (the entity an id argument names), ``target.product_id.stock`` (follow a ref
field), ``new.due_on`` (the entity a ``create`` operation makes; effects only).
**Operands** (numbers and ids): a literal number, ``$limit`` (a seeded class constant), an argument
name, or a path.

**Query kinds:** ``get`` (by id), ``find`` (label substring, case-insensitive), ``list``,
``count`` (optionally grouped by a field) and ``sum`` (of a numeric ``field``); list/count/sum
take an optional ``parent`` (a related list, e.g. the loans of a member) and optional ``filters``
(equality, or ``{field, op: "<=" | ">="}`` ranges).

**State-change kinds:** ``create`` (a new ``new`` entity) and ``update`` (acts on ``target``).

**Preconditions** (all checked before any effect; each failure returns an error dict):
- ``exists``: argument ``arg`` names an existing entity (added for every id argument).
- ``field_in`` / ``field_not_in``: the field at ``path`` is / is not one of ``values``.
- ``compare``: ``left op right`` on numbers, or on two times of one type (a delay moves a
  departure later), op in ``< <= > >= == !=``.
- ``count_below``: fewer than ``limit`` ``entity`` records have ``via == of`` and match ``where``.
- ``unique``: no ``entity`` record has ``field`` equal (case-insensitively) to argument ``arg``.
- ``distinct``: arguments ``left`` and ``right`` differ.
- ``hours_before``: current_time is at least ``hours`` before the time at ``path``.
- ``within_days``: current_time is at most ``days`` after the time at ``path``.
- ``in_future`` / ``in_past``: the time at ``value`` (argument or path) is after / not after
  current_time (dates compare by day); ``in_past`` on a datetime may take ``hours``, an
  allowance to act that many hours early (check-in opens an hour before the appointment).
- ``owned``: when the acting role has an ``entity``, the id at ``path`` (a path ending in an id of
  that entity, or an id argument) equals ``acting_id``; a role without an entity always passes.
Any precondition may say ``optional: true``: the seeded plan may leave that rule out.

**Roles** (``roles:`` at the top, optional): ``{staff: {doc}, customer: {entity: customer, doc}}``.
An operation's ``roles: [staff]`` lets only those roles call it (default: every role). The acting
identity is state: ``acting_role`` and ``acting_id`` (the record of the role's entity, or None),
chosen by the state fill and reported by a generated session query tool.

**Effects** (applied in order once every precondition holds):
- ``set``: the field at ``path`` := literal ``value``.
- ``assign``: field := operand ``value`` (times operand ``times`` when given, and times the
  ``scale`` factor of an enum's value: ``{by: cabin, factors: {economy: 1, business: 2.5}}``).
- ``stamp``: date/datetime field := current_time (+ ``days`` and/or ``hours`` operands).
- ``transition``: status field := ``to``; the current status must have a transition to ``to``.
- ``increment`` / ``decrement``: numeric field +=/-= operand ``by``.
- ``record``: create an ``entity`` record (new id from its counter) with literals ``set``,
  operands ``assign`` and ``stamp`` fields; its status starts at the initial state.
- ``update_related``: on every ``entity`` record with ``via`` == the target's id matching
  ``where``, set the literals in ``set``.

**Drawn arguments** (the scenario generator's, through the manifest): a number or time an
update's ``compare`` bounds by a record's value is drawn within it (approve at most what was
claimed), one an ``assign`` puts in a field near the value it replaces, and a number with
``per_hour: [low, high]`` and ``since`` (a time path) as that many per hour since then (a trip's
kilometres at a plausible speed).

A ``create`` fills ``new`` from arguments of the same name as a field, the initial status, ``new.*``
effects, field defaults, or None for nullable fields.

**Implied checks** (generated without being written): argument types, enum values and declared
min/max; "not found" for every id argument and every record a path reaches; a transition's legal
source states (checked first); an increment/decrement keeping the field within its min/max.

**State-fill hints** on fields (used only by ``statefill``): ``range`` (numbers), ``days`` from now
or ``after`` another date field (an implied invariant: never before it), ``months`` (whole months
after ``after``: a monthly plan ends on the day of the month it started), ``by_status`` day ranges,
``set_when`` (nullable fields set only in these statuses), ``value_when`` (fixed value per status),
``at_most`` (capped by another field), ``derive`` (``product_id.price * quantity``, or
``gross_pay - deductions`` of two own fields, times a
``scale`` factor of an own enum), ``claims`` (``{ongoing: on_trip}``: this record's status puts its
parent in a status, one parent per claim) and ``follows`` (``{cancelled: cancelled}``: a parent's
status forces this record's). ``kept_level`` marks a sum its holder keeps at an agreed level (an
evergreen retainer): only such a sum is brought back to a mark by a conditional request.

**Policies** (``policies:`` on an entity): a choice the business makes by one of the record's
numbers (``field``): ``high`` at or above a threshold, ``low`` below it, for a stated reason
(``why``; ``why_own`` as the holder says it), with a threshold never below ``least`` (a "long
absence" is 5 days or more, not 2). Conditional scenarios follow them, so both branches
of a request make sense together ("Long leave has to be signed off by the department head.
Please check leave request LR-6: if it is for 5 days or more, decline it; otherwise, approve it").
A policy may write its request whole, as a person in that business would (``asks``, and
``asks_own`` in the holder's voice), with what the reply says each branch did (``high_done``,
``low_done``) and how it names the threshold (``line``): the generic form read as a template.
A policy's ``when`` (``{field: [values]}``) limits it to the records it makes sense for.

**Invariants** (``invariants:`` on an entity; what every state holds for each of its records,
checked by ``state/invariants.py`` and kept by ``state/fill.py``). Each takes an optional
``when`` (``{path: [values]}``: only records matching it) and ``rule`` (words shown with a
violation); a path is a field or follows ref fields (``flight_id.status``):
- ``count``: of the ``entity`` records whose ``via`` names this record and that match ``where``;
  ``field`` equals the count (``total`` minus the count, when ``total`` is given), or the count
  is ``exactly`` / ``at_least`` / ``at_most`` a number (a dispatched shipment has a parcel).
- ``compare``: ``left op right`` on numbers or times; operands are fields, paths, numbers or
  ``now`` (current_time); dates compare by day; a None operand is not compared. ``hours`` moves
  a datetime on the right (``starts_at <= now`` with ``hours: 2``: checked in at most two hours
  early). The fill redraws the left operand, so a record's own field goes on the left.
- ``implies``: every path of ``then`` holds one of its values (``null`` = empty).
- ``filled``: ``field`` has a value.
- ``order``: the records naming one parent through ``via`` happen in the order of the enum
  ``by`` (sorted by ``time``, a shipment's events read booked, in_transit, delivered); the fill
  hands their times out again in that order.
Implied for every ref field: a value names an existing record.

**Timelines** are such invariants: a child's time against its parent's, read through the ref
(``{kind: compare, left: posted_at, op: ">=", right: reservation_id.check_in_on}``), a status
that needs its parent in some states (``{kind: implies, then: {reservation_id.status:
[checked_in, checked_out]}}``: the fill moves the child to a parent that fits), and a status
against ``now``. Every child with a time that names a parent with a time declares how the two
are ordered (tests/unit/.../procedural/test_timelines.py lists the few that are not). The tools
keep them with the time preconditions above (check-in no earlier than allowed).

Semantic checks live in ``check`` (and ``check_ops`` / ``check_effects`` / ``check_fill`` /
``check_invariants``); :func:`envmill.tasks.backends.procedural.catalog.parse_domain` runs them.
"""

from __future__ import annotations

import re
import string
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

# re-exported: the spec's vocabulary lives here too
from envmill.tasks.backends.procedural.spec.rules import (
    AdjustEffect,
    AssignEffect,
    Compare,
    CompareInvariant,
    CountBelow,
    CountInvariant,
    Distinct,
    Effect,
    Exists,
    FieldIn,
    FilledInvariant,
    HoursBefore,
    ImpliesInvariant,
    Invariant,
    Owned,
    Precondition,
    RecordEffect,
    RoleSpec,
    Scalar,
    Scale,
    SetEffect,
    SpecModel,
    StampEffect,
    TimeSide,
    TransitionEffect,
    Unique,
    UpdateRelatedEffect,
    WithinDays,
)

FieldType = Literal["str", "int", "float", "bool", "enum", "date", "datetime", "ref"]
TIMES = ("date", "datetime")
_SHORTHAND = re.compile(r"^\s*(\w+)\s*(?:\((.*)\))?\s*(\?)?\s*$")
DERIVE = re.compile(r"^(\w+)\.(\w+)(?:\s*\*\s*(\w+))?$")
# an own field less another: a payslip's net pay is its gross pay less its deductions
DIFFERENCE = re.compile(r"^(\w+)\s*-\s*(\w+)$")


def spaced(name: str) -> str:
    """``filed_at`` as ``filed at``, for rule words the spec does not write itself."""
    return name.replace("_", " ")


class SpecError(ValueError):
    """A domain spec that cannot compile; the message names spec, entity and operation."""


def expand_type_shorthand(data: Any) -> Any:
    """Turn ``"enum(a, b)"`` / ``"ref(x)?"`` (alone or as a ``type`` key) into explicit keys."""
    if isinstance(data, str):
        data = {"type": data}
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        return data
    match = _SHORTHAND.match(data["type"])
    if match is None:
        return data
    kind, inner, nullable = match.groups()
    data = {**data, "type": kind}
    if nullable:
        data["nullable"] = True
    if inner is not None and kind == "enum":
        data["values"] = [v.strip() for v in inner.split(",") if v.strip()]
    elif inner is not None and kind == "ref":
        data["entity"] = inner.strip()
    return data


class ValueSpec(SpecModel):
    """A typed value: an entity field or an operation argument."""

    type: FieldType
    values: list[str] = Field(default_factory=list, description="choices, for enum")
    entity: str | None = Field(default=None, description="referenced entity, for ref")
    nullable: bool = False
    min: float | None = None
    max: float | None = None
    doc: str = ""
    faker: str | None = Field(default=None, description="faker provider for realistic text")
    sample: list[str] = Field(default_factory=list, description="realistic values to draw from")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return expand_type_shorthand(data)


class FieldSpec(ValueSpec):
    """An entity field, with hints for the seeded state fill."""

    default: Scalar | None = None
    range: list[float] | None = Field(default=None, description="numeric fill range [lo, hi]")
    days: list[int] | None = Field(
        default=None, description="date fill: days from now (or `after`)"
    )
    after: str | None = Field(default=None, description="date fill relative to this field")
    working_day: bool = Field(
        default=False, description="date fill: Monday to Friday (leave, a course's start)"
    )
    months: list[int] | None = Field(
        default=None, description="date fill: whole months after `after` (a monthly plan's end)"
    )
    at_most: str | None = Field(default=None, description="numeric fill capped by this field")
    derive: str | None = Field(
        default=None,
        description="fill as '<ref>.<field>', '<ref>.<field> * <f>' or '<field> - <field>'",
    )
    by_status: dict[str, list[int]] = Field(default_factory=dict, description="status -> days")
    set_when: list[str] = Field(default_factory=list, description="statuses with a value")
    value_when: dict[str, Scalar] = Field(default_factory=dict, description="status -> fixed value")
    claims: dict[str, str] = Field(
        default_factory=dict, description="ref: own status -> status it gives its own parent"
    )
    scale: Scale | None = Field(default=None, description="derive: times a factor per enum value")
    follows: dict[str, str] = Field(
        default_factory=dict, description="ref: parent status -> status it forces on this record"
    )
    kept_level: bool = Field(
        default=False,
        description="a sum its holder keeps at an agreed level (an evergreen retainer): a "
        "request may bring it back to that level",
    )


class ArgSpec(ValueSpec):
    """An operation argument; a bare name takes its type from the field or entity it names."""

    name: str
    type: FieldType | None = None  # type: ignore[assignment]
    optional: bool = False
    per_hour: list[float] | None = Field(
        default=None, description="drawn as [low, high] per hour since `since` (km on a trip)"
    )
    since: str | None = Field(default=None, description="the time path `per_hour` counts from")
    share: list[float] | dict[str, list[float]] | None = Field(
        default=None,
        description="drawn as [low, high] times the value at `share_of` (a payslip's gross: "
        "a month's salary), or such ranges by the value at `share_by` (the run's period)",
    )
    share_of: str | None = Field(default=None, description="the number path `share` is of")
    share_by: str | None = Field(default=None, description="the enum path that picks a range")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"name": data}
        if isinstance(data, dict) and data.get("type") is not None:
            return expand_type_shorthand(data)
        return data


class Transition(SpecModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: list[str] = Field(alias="from")
    to: str


class StatusMachine(SpecModel):
    field: str = "status"
    states: list[str]
    initial: str
    transitions: list[Transition] = Field(default_factory=list)


QUERY_KINDS = ("get", "find", "list", "count", "sum")
CHANGE_KINDS = ("create", "update")


class FilterSpec(SpecModel):
    field: str
    op: Literal["==", "<=", ">="] = "=="

    @model_validator(mode="before")
    @classmethod
    def _bare_field(cls, data: Any) -> Any:
        return {"field": data} if isinstance(data, str) else data


class OperationSpec(SpecModel):
    """One tool: a query or a state change on ``entity`` (filled from the enclosing entity)."""

    name: str
    kind: Literal["get", "find", "list", "count", "sum", "create", "update"]
    aliases: list[str] = Field(default_factory=list, description="naming variants")
    entity: str = ""
    optional: bool = False
    roles: list[str] = Field(default_factory=list, description="roles allowed; empty = every role")
    doc: str = ""
    args: list[ArgSpec] = Field(default_factory=list)
    parent: str | None = Field(default=None, description="list/count/sum: ref field to the parent")
    filters: list[FilterSpec] = Field(default_factory=list)
    field: str | None = Field(default=None, description="sum: the numeric field")
    group_by: str | None = Field(default=None, description="count: group by this field")
    preconditions: list[Precondition] = Field(default_factory=list)
    effects: list[Effect] = Field(default_factory=list)
    message: str | None = Field(
        default=None, description="success message; {arg} / {new_id} placeholders"
    )
    phrases: list[str] = Field(default_factory=list)

    @property
    def is_query(self) -> bool:
        return self.kind in QUERY_KINDS

    @property
    def names(self) -> list[str]:
        return [self.name, *self.aliases]


class PolicySpec(SpecModel):
    """A choice the business makes by a number of a record: at or above a round threshold near
    the record's value, ``high``; below it, ``low`` (both operations of the entity, both able to
    act on the record). A conditional request follows it, with ``why`` as its reason."""

    field: str = Field(description="the number field the choice reads")
    high: str = Field(description="operation for values at or above the threshold")
    low: str = Field(description="operation for values below it")
    why: str = Field(
        description='the reason, as staff say it ("long leave needs the head\'s sign-off")'
    )
    why_own: str = Field(default="", description="the reason as the record's holder says it")
    asks: list[str] = Field(
        default_factory=list,
        description="the request as staff write it, whole ({record}: the record named, "
        "{limit}: the threshold said); none: the generic if/otherwise form",
    )
    asks_own: list[str] = Field(
        default_factory=list, description="the request as the record's holder writes it"
    )
    high_done: str = Field(
        default="",
        description='what the reply says ``high`` did ("cancelled the job"); '
        "{their}: whose the record is, as the reply's voice says it",
    )
    low_done: str = Field(default="", description="what the reply says ``low`` did")
    line: str = Field(
        default="",
        description='the threshold in the reply ("the owner\'s {limit} budget"); '
        'none: "the {limit} limit"',
    )
    least: float = Field(
        default=0, ge=0, le=1e9, allow_inf_nan=False, description="the policy's lowest threshold"
    )
    when: dict[str, list[str]] = Field(
        default_factory=dict,
        description="only records whose fields hold one of these values ({leave_type: "
        "[vacation]}: sick leave is never declined for want of cover)",
    )

    @model_validator(mode="after")
    def _words_name_only_what_is_filled(self) -> PolicySpec:
        """A template that names a placeholder nothing fills ("{recrod}"), has a stray brace,
        is blank, or leaves out the record or the threshold a request must name, fails when
        the spec is read, with the text named: not halfway through a run, nor as a request
        that names no record."""
        for name, names, needed in _POLICY_WORDS:
            value = getattr(self, name)
            for text in value if isinstance(value, list) else [value] if value else []:
                problem = _template_problem(text, names, needed)
                if problem:
                    raise ValueError(f"policy {name} {text!r}: {problem}")
        return self


# each policy text: the placeholders it may fill, and those it must
_POLICY_WORDS = (
    ("asks", {"record", "limit"}, {"record", "limit"}),
    ("asks_own", {"record", "limit"}, {"record", "limit"}),
    ("high_done", {"their"}, set()),
    ("low_done", {"their"}, set()),
    ("line", {"their", "limit"}, {"limit"}),
)


def _template_problem(text: str, allowed: set[str], needed: set[str]) -> str | None:
    """What is wrong with a ``str.format`` template, or None."""
    if not text.strip():
        return "is blank"
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as error:
        return f"is not a template ({error})"
    named = {field for _, field, spec, conversion in parts if field is not None}
    if any(spec or conversion for _, field, spec, conversion in parts if field is not None):
        return "may fill a placeholder only as it is ({name})"
    if named - allowed:
        return f"only {sorted(allowed)} may be filled in"
    if needed - named:
        return f"must name {sorted(needed - named)}"
    return None


class EntitySpec(SpecModel):
    name: str = ""
    title: str = ""
    plural: str = ""
    id_format: str
    label: str | None = None
    optional: bool = False
    count: list[int] = Field(default_factory=lambda: [4, 10], description="state fill size")
    fields: dict[str, FieldSpec]
    status: StatusMachine | None = None
    operations: list[OperationSpec] = Field(default_factory=list)
    invariants: list[Invariant] = Field(default_factory=list)
    policies: list[PolicySpec] = Field(
        default_factory=list, description="choices made by a number: conditional requests"
    )
    examples: list[dict[str, Scalar]] = Field(
        default_factory=list,
        description="field values that belong together (a part's name and its category); "
        "the fill and the drawn arguments of a create take one whole",
    )

    @model_validator(mode="after")
    def _after_orders_times(self) -> EntitySpec:
        """A time filled ``after`` another is never before it (a claim is filed after the
        incident): the hint is a timeline too, so the fill's repairs keep it when they redraw
        the earlier time, and the invariant check reports a state that breaks it."""
        for name, field in self.fields.items():
            after = field.after or ""
            base = self.fields.get(after)
            if base is None or field.type not in TIMES or base.type not in TIMES:
                continue  # check_fill reports an `after` that names no time
            if any(
                i.kind == "compare" and {i.left, i.right} == {name, after} for i in self.invariants
            ):
                continue
            rule = f"The {spaced(name)} is not before the {spaced(after)}."
            self.invariants.append(
                CompareInvariant(kind="compare", left=name, op=">=", right=after, rule=rule)
            )
        return self

    @property
    def id_field(self) -> str:
        return f"{self.name}_id"

    @property
    def counter(self) -> str:
        return f"next_{self.name}_number"

    @property
    def machine(self) -> StatusMachine:
        """The status machine, for the parts only a status entity has (claims, transitions,
        status fills): the spec check refuses them elsewhere, so a missing one is a bug."""
        if self.status is None:
            raise SpecError(f"entity '{self.name}' has no status machine")
        return self.status


class LimitSpec(SpecModel):
    range: list[int]
    doc: str = ""

    @model_validator(mode="before")
    @classmethod
    def _bare_range(cls, data: Any) -> Any:
        return {"range": data} if isinstance(data, list) else data


class DomainSpec(SpecModel):
    """A whole domain; validated structurally by pydantic, semantically by ``check``."""

    name: str
    title: str
    topic: str
    introduction: str
    class_names: list[str] = Field(min_length=1)
    limits: dict[str, LimitSpec] = Field(default_factory=dict)
    rules: list[str] = Field(default_factory=list, description="extra business rules")
    roles: dict[str, RoleSpec] = Field(default_factory=dict, description="who may act")
    entities: dict[str, EntitySpec] = Field(min_length=1)

    def operations(self) -> list[OperationSpec]:
        """Every operation of every entity, in catalog order."""
        return [op for entity in self.entities.values() for op in entity.operations]


__all__ = [
    "AdjustEffect",
    "ArgSpec",
    "AssignEffect",
    "Compare",
    "CompareInvariant",
    "CountBelow",
    "CountInvariant",
    "Distinct",
    "DomainSpec",
    "Effect",
    "EntitySpec",
    "Exists",
    "FieldIn",
    "FieldSpec",
    "FilledInvariant",
    "FilterSpec",
    "HoursBefore",
    "ImpliesInvariant",
    "Invariant",
    "LimitSpec",
    "OperationSpec",
    "Owned",
    "Precondition",
    "RecordEffect",
    "RoleSpec",
    "Scale",
    "SetEffect",
    "SpecError",
    "StampEffect",
    "StatusMachine",
    "TimeSide",
    "Transition",
    "TransitionEffect",
    "Unique",
    "UpdateRelatedEffect",
    "ValueSpec",
    "WithinDays",
]
