"""What the procedural compiler tells the scenario generator about each tool it wrote.

The scenario sampler never reads the domain spec (only the state filler does): it samples
operations and arguments from this manifest, runs them in the sandbox, and keeps the calls that
succeed. That keeps one source of truth for the
semantics (the compiled code) and makes a compiler bug show up as a certification rejection.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from envmill.tasks.backends.procedural.spec.domain import DomainSpec

ArgSource = Literal["entity_id", "enum", "int", "float", "str", "date", "datetime", "bool"]


class RecordRead(BaseModel):
    """A value of the record an id argument names, read through ref fields: the record is
    ``state[attrs[0]][arguments[arg]]``, each further attr the entity of the ref ``fields[i]``
    names; the value is the last field (``claim_id`` → claims → ``amount_claimed``)."""

    arg: str
    attrs: list[str]
    fields: list[str]

    def read(self, state: dict[str, Any], arguments: dict[str, Any]) -> Any:
        """The value, or None when an argument, record or field is not there."""
        record: Any = (state.get(self.attrs[0]) or {}).get(arguments.get(self.arg))
        for attr, ref in zip(self.attrs[1:], self.fields[:-1], strict=True):
            record = (
                (state.get(attr) or {}).get(record.get(ref)) if isinstance(record, dict) else None
            )
        return record.get(self.fields[-1]) if isinstance(record, dict) else None


class ArgManifest(BaseModel):
    """How to choose a value for one tool argument."""

    name: str
    source: ArgSource
    entity: str | None = Field(default=None, description="entity name, for source == entity_id")
    state_attr: str | None = Field(
        default=None, description="state attribute holding that entity, e.g. 'books'"
    )
    prefer: dict[str, list[Any]] = Field(
        default_factory=dict,
        description="field -> values that make the call likely to succeed (e.g. status: [active])",
    )
    values: list[Any] | None = Field(default=None, description="choices, for source == enum")
    minimum: float | None = None
    maximum: float | None = None
    required: bool = True
    faker: str | None = Field(
        default=None, description="faker provider for free text, e.g. 'phone_number'"
    )
    label_field: str | None = Field(
        default=None,
        description="field a user knows this entity by (e.g. 'name'), when lookup_tool exists",
    )
    lookup_tool: str | None = Field(
        default=None, description="query tool that finds the id from the label"
    )
    lookup_arg: str | None = Field(
        default=None, description="that tool's argument taking the label"
    )
    at_most: list[RecordRead] = Field(
        default_factory=list,
        description="record values a compare rule keeps it at or below (the amount claimed)",
    )
    at_least: list[RecordRead] = Field(
        default_factory=list,
        description="record values a compare rule keeps it at or above (a time: after them)",
    )
    near: RecordRead | None = Field(
        default=None, description="the record value an update replaces with it (a price)"
    )
    per_hour: list[float] | None = Field(
        default=None, description="[low, high] per hour since ``since`` (km driven on a trip)"
    )
    since: RecordRead | None = None
    share: list[float] | dict[str, list[float]] | None = Field(
        default=None,
        description="[low, high] times the value at ``share_of`` (a salary), or such ranges "
        "by the value at ``share_by`` (a pay run's period)",
    )
    share_of: RecordRead | None = None
    share_by: RecordRead | None = None


class OwnedManifest(BaseModel):
    """An ``owned`` rule of a tool: a signed-in role with an entity (a customer) passes only when
    the record reached from argument ``arg`` along ``hops`` (ref fields; none when the argument
    is the owner's id itself) is its own, i.e. that id equals ``acting_id``."""

    arg: str
    hops: list[str] = Field(default_factory=list)
    entity: str = Field(description="the owner's entity, e.g. customer")
    rule: str


class RoleManifest(BaseModel):
    """A role of the environment: ``entity`` is the entity it acts as (None for staff)."""

    entity: str | None = None
    doc: str = ""


class ToolManifest(BaseModel):
    """One compiled tool: its kind, its entity, its arguments, and how a user would ask for it."""

    tool: str
    kind: Literal["query", "state_change"]
    entity: str
    args: list[ArgManifest] = Field(default_factory=list)
    roles: list[str] = Field(
        default_factory=list, description="roles that may call it; empty when there are no roles"
    )
    owned: list[OwnedManifest] = Field(
        default_factory=list, description="owned preconditions this environment kept"
    )
    phrases: list[str] = Field(
        default_factory=list,
        description="user-voice templates; placeholders {arg} or {arg.label} (label of the entity)",
    )
    examples: list[dict[str, Any]] = Field(
        default_factory=list,
        description="argument values that belong together, from the entity's examples (create)",
    )
    doc: str = Field(default="", description="what the tool does, as its description says it")


class CompiledEnvironment(BaseModel):
    """A compiled environment module with the manifest the scenario generator needs.

    It carries the spec it was compiled from, so the state filler plans from the same spec (a spec
    that is not in the catalog works too) rather than looking the domain up again.
    """

    spec: DomainSpec = Field(exclude=True, repr=False)
    domain: str
    seed: int
    class_name: str
    source: str
    topic: str
    introduction: str
    business_rules: list[str]
    tools: list[ToolManifest]
    entity_attrs: dict[str, str] = Field(
        default_factory=dict, description="entity name -> state attribute (e.g. book -> books)"
    )
    label_fields: dict[str, str] = Field(
        default_factory=dict, description="entity name -> field users name it by (e.g. title)"
    )
    roles: dict[str, RoleManifest] = Field(
        default_factory=dict, description="who may act; empty when the domain declares no roles"
    )
    acting_role_attr: str | None = Field(
        default=None, description="state attribute of the acting role"
    )
    acting_id_attr: str | None = Field(default=None, description="state attribute of the acting id")
    session_tool: str | None = Field(
        default=None, description="query tool reporting the acting identity"
    )

    @property
    def call_records(self) -> tuple[()]:
        """The LLM calls made for it, as the pipeline reads them of any draft: none."""
        return ()

    @property
    def probes(self) -> tuple[()]:
        """The probes that checked it: none (its code and its checks come from one spec)."""
        return ()
