"""Precondition and effect models of a domain operation (the vocabulary is documented at the
top of ``spec/domain.py``; each kind is compiled by one codegen function)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Scalar = str | int | float | bool
Operand = str | int | float


class SpecModel(BaseModel):
    """Base of every spec model: unknown keys are errors, so a typo never passes silently."""

    model_config = ConfigDict(extra="forbid")


class _Rule(SpecModel):
    rule: str | None = Field(
        default=None, description="business rule text; {limit} placeholders allowed"
    )
    optional: bool = Field(
        default=False, description="a seed may leave this rule out of an environment"
    )


class Exists(_Rule):
    kind: Literal["exists"]
    arg: str


class FieldIn(_Rule):
    kind: Literal["field_in", "field_not_in"]
    path: str
    values: list[Scalar]


class Compare(_Rule):
    kind: Literal["compare"]
    left: Operand
    op: Literal["<", "<=", ">", ">=", "==", "!="]
    right: Operand


class CountBelow(_Rule):
    kind: Literal["count_below"]
    entity: str
    via: str
    of: str
    where: dict[str, list[Scalar]] = Field(default_factory=dict)
    limit: Operand


class Unique(_Rule):
    kind: Literal["unique"]
    entity: str
    field: str
    arg: str


class Distinct(_Rule):
    kind: Literal["distinct"]
    left: str
    right: str


class HoursBefore(_Rule):
    kind: Literal["hours_before"]
    path: str
    hours: Operand


class WithinDays(_Rule):
    kind: Literal["within_days"]
    path: str
    days: Operand


class TimeSide(_Rule):
    """The time at ``value`` is after (``in_future``) or not after (``in_past``) current_time;
    ``in_past`` may allow ``hours`` early (a check-in that opens an hour before the start)."""

    kind: Literal["in_future", "in_past"]
    value: str
    hours: Operand | None = Field(
        default=None, description="in_past on a datetime: allowed this many hours early"
    )


class Owned(_Rule):
    """The id at ``path`` (a path or an id argument) must be the acting id when the acting role
    has an entity (a signed-in customer); a role without one (staff) always passes."""

    kind: Literal["owned"]
    path: str


Precondition = Annotated[
    Exists
    | Owned
    | FieldIn
    | Compare
    | CountBelow
    | Unique
    | Distinct
    | HoursBefore
    | WithinDays
    | TimeSide,
    Field(discriminator="kind"),
]


class RoleSpec(SpecModel):
    """Who may act in an environment: staff (no ``entity``) act for anyone; a role with an
    ``entity`` is one of its records (a customer) and acts only on what ``owned`` rules allow."""

    entity: str | None = Field(
        default=None, description="the entity whose record this role acts as"
    )
    doc: str = ""


class SetEffect(SpecModel):
    kind: Literal["set"]
    path: str
    value: Scalar | None


class Scale(SpecModel):
    """A multiple chosen by an enum's value (``by``: an argument or path naming one): a
    business seat costs 2.5 economy fares, a premium one 1.6."""

    by: str
    factors: dict[str, float]


class AssignEffect(SpecModel):
    kind: Literal["assign"]
    path: str
    value: Operand
    times: Operand | None = None
    scale: Scale | None = None


class StampEffect(SpecModel):
    kind: Literal["stamp"]
    path: str
    days: Operand | None = None
    hours: Operand | None = None


class TransitionEffect(SpecModel):
    kind: Literal["transition"]
    path: str = "target.status"
    to: str


class AdjustEffect(SpecModel):
    kind: Literal["increment", "decrement"]
    path: str
    by: Operand


class RecordEffect(SpecModel):
    kind: Literal["record"]
    entity: str
    set: dict[str, Scalar | None] = Field(default_factory=dict)
    assign: dict[str, Operand] = Field(default_factory=dict)
    stamp: list[str] = Field(default_factory=list)


class UpdateRelatedEffect(SpecModel):
    kind: Literal["update_related"]
    entity: str
    via: str
    where: dict[str, list[Scalar]] = Field(default_factory=dict)
    set: dict[str, Scalar | None]


Effect = Annotated[
    SetEffect
    | AssignEffect
    | StampEffect
    | TransitionEffect
    | AdjustEffect
    | RecordEffect
    | UpdateRelatedEffect,
    Field(discriminator="kind"),
]


# -- invariants: what every state of the domain satisfies (checked by state/invariants.py)

Condition = dict[str, list[Scalar | None]]


class _Invariant(SpecModel):
    rule: str | None = Field(
        default=None, description="the invariant in words, shown with a violation"
    )
    when: Condition = Field(
        default_factory=dict, description="applies only to records matching: path -> values"
    )


class CountInvariant(_Invariant):
    """The ``entity`` records whose ``via`` names this record and match ``where`` are counted;
    ``field`` equals that count (or ``total`` minus it, when ``total`` is given), or the count is
    ``exactly`` / ``at_least`` / ``at_most`` a number (a delivered shipment has a parcel).
    With ``sum_of``, ``field`` is the sum of that field over them instead (a pay run's gross is
    its payslips' gross pay added up)."""

    kind: Literal["count"]
    entity: str
    via: str
    where: dict[str, list[Scalar]] = Field(default_factory=dict)
    field: str | None = None
    sum_of: str | None = Field(
        default=None, description="the counted records' field whose sum ``field`` holds"
    )
    total: str | None = None
    exactly: int | None = None
    at_least: int | None = None
    at_most: int | None = None


class CompareInvariant(_Invariant):
    """``left op right`` on numbers or times; an operand is a field, a ref path, a number or
    ``now`` (the state's current_time). Dates compare by day; a None operand is not checked.
    ``hours`` moves a time on the right (``starts_at <= now`` + 1 hour: checked in at most an
    hour early), so a rule that allows some slack still has a bound."""

    kind: Literal["compare"]
    left: Operand
    op: Literal["<", "<=", ">", ">=", "==", "!="]
    right: Operand
    hours: float | None = Field(
        default=None, description="times: the right operand moved by this many hours"
    )


class ImpliesInvariant(_Invariant):
    """A record matching ``when`` has every path of ``then`` among its values (None = empty)."""

    kind: Literal["implies"]
    then: Condition


class FilledInvariant(_Invariant):
    """A record matching ``when`` has a value (not None) in ``field``."""

    kind: Literal["filled"]
    field: str


class OrderInvariant(_Invariant):
    """The records naming one parent through ``via`` happen in the order of ``by``'s enum values:
    sorted by ``time``, a shipment's tracking events read booked, in_transit, delivered, never
    delivered before booked. (What events a parent may have is an ``implies`` on ``by``.)
    ``distinct``: each value happens at most once per parent (a shipment is delivered once)."""

    kind: Literal["order"]
    via: str
    by: str
    time: str
    distinct: bool = False


Invariant = Annotated[
    CountInvariant | CompareInvariant | ImpliesInvariant | FilledInvariant | OrderInvariant,
    Field(discriminator="kind"),
]
