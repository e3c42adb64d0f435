"""How a request names a record, and the query calls that read it, for the newer scenario kinds.

A record is named by its label when the label is unique and a find tool turns it into the id (the
reference solution then starts with that lookup), else by its id. Every call runs live in the
episode: a query whose result does not show what the request relies on is not used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envmill.schemas.scenario import SolutionStep
from envmill.tasks.backends.procedural.checks.derive import words_of
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment, ToolManifest
from envmill.tasks.backends.procedural.phrasing.word_lists import PEOPLE
from envmill.tasks.backends.procedural.scenarios.usual import ended_states
from envmill.tasks.sandbox import ToolEpisode, known_state


def is_finished(
    compiled: CompiledEnvironment, entity: str, state: dict[str, Any], rid: Any
) -> bool:
    """The record is in a state its machine never leaves (completed, cancelled, closed)."""
    spec = compiled.spec.entities.get(entity)
    machine = spec.status if spec is not None else None
    record = (state.get(compiled.entity_attrs.get(entity, "")) or {}).get(rid)
    if machine is None or not isinstance(record, dict):
        return False
    return record.get(machine.field) in ended_states(machine)


@dataclass
class Subject:
    """A record as the request names it ("account ACC-0003", "customer Jane Doe"), with the
    lookups that find its id from that name."""

    entity: str
    record_id: str
    text: str
    steps: list[SolutionStep] = field(default_factory=list)
    label: str | None = None
    label_key: str | None = None  # how a user fact names the label ("patient name")


def reader_of(compiled: CompiledEnvironment, entity: str) -> ToolManifest | None:
    """The query tool that reads one record of ``entity`` by its id."""
    for tool in compiled.tools:
        args = tool.args
        if tool.kind == "query" and len(args) == 1 and args[0].source == "entity_id":
            if args[0].entity == entity:
                return tool
    return None


def read_by_id(
    compiled: CompiledEnvironment, state: dict[str, Any], record_id: Any
) -> SolutionStep | None:
    """The get call that shows record ``record_id``, whatever entity it is."""
    for entity, attr in compiled.entity_attrs.items():
        if record_id in (state.get(attr) or {}):
            reader = reader_of(compiled, entity)
            if reader is not None:
                return SolutionStep(tool=reader.tool, arguments={reader.args[0].name: record_id})
    return None


def run_query(episode: ToolEpisode, step: SolutionStep) -> Any:
    """The ``data`` of a successful query that left the state as it was, else None."""
    before = known_state(episode)
    outcome = episode.call(step.tool, dict(step.arguments))
    if outcome.ok and outcome.state != before:
        episode.load_state(before)
        return None
    return outcome.result.get("data") if outcome.succeeded else None


def name_subject(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    state: dict[str, Any],
    entity: str,
    rid: Any,
) -> Subject:
    """How to name record ``rid``: by its unique label through a lookup that finds it, else by
    its id."""
    noun = words_of(entity)
    label_field = compiled.label_fields.get(entity)
    records = state.get(compiled.entity_attrs.get(entity, ""), {})
    label = (records.get(rid) or {}).get(label_field) if label_field else None
    finder = _finder(compiled, entity)
    if isinstance(label, str) and label.strip() and finder and _unique(records, label_field, label):
        step = SolutionStep(tool=finder[0], arguments={finder[1]: label})
        if names_id(run_query(episode, step), rid):
            words = words_of(label_field or "name")
            key = words if words.startswith(noun) else f"{noun} {words}"
            return Subject(entity, rid, named_by_label(noun, label), [step], label, key)
    return Subject(entity, rid, f"{noun} {rid}")


GENERIC_HEADS = frozenset({"item", "record", "entry", "unit", "product"})
CODE_LIKE = re.compile(r"^[A-Z0-9][A-Z0-9-]*\d[A-Z0-9-]*$")  # "SK331", "PLT-4": "flight SK331"


def _name_like(label: str) -> bool:
    """A name in title case ("Endurance Ride", "The Hidden Life of Cells"), not a line of text
    ("Data import stuck at 90 percent"), which "the … ticket" around it would bury."""
    words = label.split()
    return 0 < len(words) <= MAX_NAME_WORDS and all(
        w[:1].isupper() or w[:1].isdigit() or w in SMALL_WORDS for w in words
    )


MAX_NAME_WORDS = 6
# people who serve the business's clients, said with their role: "the room of Laurie Harper"
# could be a patient's (round 28)
STAFF = frozenset("doctor vet courier instructor technician adjuster driver mechanic".split())
SMALL_WORDS = frozenset("of the and a an in on for at to de la".split())


def named_by_label(noun: str, label: str) -> str:
    """A record by its label, as people say it: a person by name ("Jane Doe"), a thing by
    its name and kind ("the Endurance Ride class", "Hot Desk 7"), a code after its kind
    ("flight SK331"); never "gym class Endurance Ride" (raters: generator speak)."""
    head = noun.split()[-1]
    if CODE_LIKE.match(label):  # "flight SK331", "doctor DR-001"
        return f"{noun} {label}"
    if head in STAFF and not label.startswith(("Dr.", "Dr ")):  # never "Dr. Dr. Ann Lee"
        # "Dr. Laurie Harper", "courier John Green": a patient may share the name
        return f"Dr. {label}" if head == "doctor" else f"{head} {label}"
    if noun in PEOPLE or head in PEOPLE or head == "pet":  # "Jane Doe", never "the Jane Doe pet"
        return label
    if not _name_like(label):
        return f"{noun} {label}"  # "ticket Data import stuck at 90 percent"
    if head in GENERIC_HEADS or label.lower().startswith("the "):
        return label  # "Beef Pho", not "the Beef Pho item"; never "the The Hidden Life …"
    if re.search(rf"\b{re.escape(head)}\b", label, re.I):
        return label  # "Hot Desk 7"
    return f"the {label} {head}"


def _finder(compiled: CompiledEnvironment, entity: str) -> tuple[str, str] | None:
    for tool in compiled.tools:
        for arg in tool.args:
            if arg.entity == entity and arg.lookup_tool and arg.lookup_arg:
                return arg.lookup_tool, arg.lookup_arg
    return None


def _unique(records: dict[str, Any], label_field: str | None, label: str) -> bool:
    same = [
        r
        for r in records.values()
        if isinstance(r, dict) and str(r.get(label_field, "")).casefold() == label.casefold()
    ]
    return len(same) == 1


def names_id(data: Any, rid: Any) -> bool:
    """Whether a lookup's data names the id, as a value or a key, at any depth."""
    if isinstance(data, dict):
        return rid in data or any(names_id(v, rid) for v in data.values())
    if isinstance(data, list):
        return any(names_id(v, rid) for v in data)
    return data == rid


def acting_member(compiled: CompiledEnvironment, state: dict[str, Any]) -> tuple[str, str] | None:
    """(role, acting id) when the signed-in role acts as a record (a customer), else None."""
    role = state.get(compiled.acting_role_attr or "")
    acting_id = state.get(compiled.acting_id_attr or "")
    if not isinstance(role, str) or not isinstance(acting_id, str):
        return None
    manifest = compiled.roles.get(role)
    if manifest is None or not manifest.entity:
        return None
    return role, acting_id


def owned_ids(state: dict[str, Any], acting_id: str, hops: int = 3) -> set[str]:
    """Ids of the records the acting record owns: those with a field naming it, and so on along
    ``hops`` references (a card of an account of the customer). The acting record is not one."""
    owned = {acting_id}
    texts = _texts_by_id(state)
    for _ in range(hops):
        for rid, values in texts:  # in the state's order: a record found joins this very hop
            if not owned.isdisjoint(values):
                owned.add(rid)
    return owned - {acting_id}


def _texts_by_id(state: dict[str, Any]) -> list[tuple[Any, set[str]]]:
    """Each record's id and the text values of its fields, collection by collection: read once,
    not once per hop."""
    return [
        (rid, {v for v in record.values() if isinstance(v, str)})
        for collection in state.values()
        if isinstance(collection, dict)
        for rid, record in collection.items()
        if isinstance(record, dict)
    ]
