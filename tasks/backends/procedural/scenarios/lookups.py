"""Harder lookups: a record named by what only a filtered list, a count or a total reveals.

"Her only frozen card", "the account of Ann Lee with the largest balance", "Ann Lee's account
with the most transactions": the sampler names the entity argument of a step this way, runs the
list / count / sum calls an agent needs (they join the reference solution before the step), and
keeps the name only when the *current state* makes it pick exactly that record. The words come
from ``wording/lookups.yaml``; which query tool is a list, a count or a sum is read from what it
returns, so this needs nothing but the manifest.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

from envmill.schemas.scenario import SolutionStep
from envmill.tasks.backends.procedural.checks.derive import words_of
from envmill.tasks.backends.procedural.manifest import ArgManifest, ToolManifest
from envmill.tasks.backends.procedural.phrasing.lookup_words import say
from envmill.tasks.backends.procedural.phrasing.word_lists import PEOPLE, load_wording
from envmill.tasks.backends.procedural.phrasing.words import (
    article_for,
    format_value,
    humanize_value,
    is_money,
)
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, _ChainSampler
from envmill.tasks.backends.procedural.scenarios.plausible import is_amount
from envmill.tasks.core.field_words import field_noun, stamped_participle

# record nouns a type value replaces ("the van", not "the van vehicle"); elsewhere the value
# reads before the noun ("the checking account", "the company donor")
PLACE_NOUNS = frozenset(
    "lot desk venue room garage branch restaurant space site warehouse location store".split()
)
SPECIALISTS = frozenset({"doctor", "vet", "veterinarian", "physician", "specialist"})
# enum fields whose value alone does not say what it is: "the normal work order" (round 41)
QUALIFYING = frozenset("priority severity urgency tier level grade size".split())
GENERIC_NOUNS = frozenset({"vehicle", "product", "item", "asset", "unit", "equipment", "resource"})
MAKERS = frozenset({"make", "brand", "manufacturer"})
BEFORE_A_NOUN = {"children": "children's", "kids": "kids'", "women": "women's", "men": "men's"}
GROUPS = frozenset({"department", "team", "division"})
SERVED_BY: dict[str, str] = load_wording("lookups")["served_by"]
# where a trip starts or ends: "the flight to SFO", never "the SFO flight" (round 53: from or to?)
ROUTE_ENDS = {"origin": "from", "destination": "to"}


def shown(field: str, value: Any) -> str:
    """A field value as the task writes it ("$1,250.50", "9 Feb 2025", "checked in")."""
    if isinstance(value, str) and re.fullmatch(r"[a-z]+(?:_[a-z]+)+", value):
        return value.replace("_", " ")  # an enum value said in words
    return humanize_value(format_value(value), dollars=is_money(field, value))


class LookupSampler(_ChainSampler):
    """Names one entity argument of the chain by a filter or as the latest or earliest of a
    list; a chain where no step could be named so is refused (``_wants``)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.done, self.shapes = False, {}

    def _wants(self, mentions: list[ArgMention]) -> bool:
        return self.done or any(m.described for m in mentions)

    def _kept(self, step: Any) -> None:
        self.done = self.done or any(m.described for m in step.mentions)

    def _special_mention(
        self, arg: ArgManifest, value: Any, calls: list[SolutionStep]
    ) -> ArgMention | None:
        if self.done or self.chain.steps or not arg.entity:
            return None  # the first step only: its name is then true of the initial state
        if self._is_signed_in(value):
            return None  # no one calls themself "the silver guest"
        attr = arg.state_attr or self.compiled.entity_attrs.get(arg.entity, "")
        collection = self.state.get(attr)
        if not isinstance(collection, dict) or not isinstance(collection.get(value), dict):
            return None
        named = self._filtered(arg, value, collection, calls)
        if named is None:
            return None
        return ArgMention(arg.name, value, arg.source, arg.entity, described=named)

    # -- filtered: a list with a filter, or the largest / latest of a list
    def _filtered(self, arg: ArgManifest, value: Any, records: dict, calls: list) -> str | None:
        tools = [t for t in self._lists_of(arg.entity) if self._shape(t) == "list"]
        self.rng.shuffle(tools)
        mine = self._owned_by_signed_in(records[value])
        for tool in tools:
            parent = _parent_arg(tool, arg.entity)
            if not self._a_person_s(parent) and words_of(arg.entity or "") not in SPECIALISTS:
                continue  # "the oldest work order of 1FGH582", "the occupied room": no one's
                # words (rounds 53 to 56); "Mary Andrews's oldest order" and "the dermatologist"
            if sold_by_name(records[value]):  # a buyer names what they buy: never "the garden
                continue  # product" (round 38) or "the event on sale at Harbor Pavilion" (40)
            if mine and (parent is None or not self._is_signed_in(records[value][parent.name])):
                continue  # the student's own enrolment is "my earliest", not the course's
            if self._someone_elses(arg.entity, records[value]):
                continue  # a member never checks out "Brian Lee's booking" (round 40)
            if self._owner_unnamed(arg.entity, records[value], parent):
                continue  # "cancel the approved leave request", "the earliest enrolment of
                # Microeconomics": a person's record is named by its person (round 41)
            siblings = _siblings(records, value, parent)
            if len(siblings) < 2:
                continue
            options = _only_options(tool, records[value], siblings, value)
            now = str(self.state.get("current_time") or "")[:10]
            extremes = _extreme_options(records[value], siblings, value, now) if parent else []
            self.rng.shuffle(options)
            self.rng.shuffle(extremes)
            # what sets the record apart before its place in a list: "Julian Price's delivered
            # order", then "Mary Andrews's oldest order" (rounds 68 to 73: why the oldest?)
            options += extremes
            for option in options:
                text = self._try_filtered(tool, parent, records[value], value, option, calls)
                if text is not None:
                    return text
        return None

    def _try_filtered(self, tool, parent, record, value, option, calls) -> str | None:
        how, field = option
        if how == "only" and not self._picks_by(tool, record, field, parent):
            return None

        arguments = {parent.name: record[parent.name]} if parent else {}
        if how == "only":
            arguments[field] = record[field]
        result = self._query(tool.tool, arguments)
        data = result.get("data") if result else None
        if not isinstance(data, list) or not _ids_in(data, value):
            return None
        if how == "only" and len(data) != 1:
            return None
        trail: list[SolutionStep] = []
        # "my shipped order": who "my" is, the agent reads from the session tool
        session = self.compiled.session_tool
        mine = bool(session) and parent is not None and self._is_signed_in(record[parent.name])
        owner = self._name_parent(parent, record[parent.name], trail) if parent else None
        if mine and session:
            trail, owner = [SolutionStep(tool=session, arguments={})], "my"
        entity = words_of(tool.entity)
        field_words = field_noun(field)
        named = isinstance(record.get(field), str)  # an enum value: "the only lapsed donor"
        key, done = _phrase_key(how, field, entity, named, anywhere=owner is None)
        owner = "" if owner is None else owner
        value_words = shown(field, record.get(field))
        if named:
            worded = _value_and_noun(field, entity, value_words)
            if worded is None:
                return None
            entity, value_words = worded
            if " " in value_words and key.startswith("only_") and field == "status":
                key = f"{key}_after"  # a status of several words reads after the noun:
                # "Ann's event on sale"; another value before it: "the internal medicine
                # doctor", not "the doctor whose specialty is internal medicine" (round 41)
        whose = self._whose(key, mine, owner, f"{value_words} {entity}")
        whose, after = _owner_after(parent, owner, whose) if owner and not mine else (whose, "")
        text = say(
            key,
            self.rng,
            entity=entity,
            whose=whose,
            field=field_words,
            value=value_words,
            done=done,
        )
        text = _owner_placed(re.sub(r"\s{2,}", " ", text), after)
        calls.extend([*trail, SolutionStep(tool=tool.tool, arguments=arguments)])
        return text

    def _whose(self, key: str, mine: bool, owner: str, thing: str) -> str:
        """ "my", "Ann Lee's"; of the one record anywhere with a value, "a single room" as a
        guest asks for it and "the Ford" as staff say it (round 50: "assumes the guest knows
        there is exactly one single room")."""
        if key == "only_named_anywhere":
            return article_for(thing) if self.drawer.acting_id is not None else "the"
        return "my" if mine else f"{owner}'s"

    def _picks_by(self, tool, record, field: str, parent) -> bool:
        """Whether a person picks the record by its ``field`` alone: not a status they cannot
        know, nor a priority or a department that is unique by chance ("the normal-priority
        work order", "the employee in finance", round 45); "the dermatologist" still is."""
        if field == "status":
            return not self._status_unknown(tool, record)
        return parent is not None or field not in QUALIFYING | GROUPS

    # -- shared
    def _a_person_s(self, parent: ArgManifest | None) -> bool:
        """The filter is over a person's records ("Ann's orders", a subscriber's account with
        its email), not a place's or a thing's."""
        if parent is None:
            return False
        spec = self.compiled.spec.entities.get(parent.entity or "")
        contact = spec is not None and bool({"email", "phone"} & set(spec.fields))
        return contact or words_of(parent.entity or "") in PEOPLE

    def _is_signed_in(self, record_id: Any) -> bool:
        """Whether ``record_id`` is the signed-in person's own record: they say "my order"."""
        acting = self.state.get(self.compiled.acting_id_attr or "")
        return acting is not None and str(acting) == str(record_id)

    def _status_unknown(self, tool: ToolManifest, record: dict) -> bool:
        """Whether the user would not pick ``record`` by its status: a guest never books "the
        occupied room" (the hotel's bookkeeping, round 41), and a person goes by name, not
        "the active employee of Payments"."""
        outside = self.drawer.acting_id is not None and not self._owned_by_signed_in(record)
        return outside or words_of(tool.entity or "") in PEOPLE

    def _owner_unnamed(self, entity: str | None, record: dict, parent: ArgManifest | None) -> bool:
        """The record belongs to a person and the filter names no person: neither its owner
        nor the signed-in one."""
        if self._person_refs(entity, record) == []:
            return False
        return parent is None or words_of(parent.entity or "") not in PEOPLE

    def _person_refs(self, entity: str | None, record: dict) -> list:
        spec = self.compiled.spec.entities.get(entity or "")
        fields = spec.fields if spec is not None else {}
        people = [n for n, f in fields.items() if words_of(f.entity or "") in PEOPLE]
        return [record.get(n) for n in people if record.get(n) is not None]

    def _someone_elses(self, entity: str | None, record: dict) -> bool:
        """A person is signed in and the record belongs to another person (a field of it names
        a person who is not them)."""
        if self.state.get(self.compiled.acting_id_attr or "") is None:
            return False
        owners = self._person_refs(entity, record)
        return bool(owners) and not any(self._is_signed_in(o) for o in owners)

    def _owned_by_signed_in(self, record: dict) -> bool:
        """Whether a field of ``record`` points at the signed-in person's own record."""
        return any(
            self._is_signed_in(v) for k, v in record.items() if k.endswith("_id") and v is not None
        )

    def _name_parent(self, parent: ArgManifest, pid: Any, trail: list[SolutionStep]) -> str:
        """The parent by label (its find call joins ``trail``), else by noun and id."""
        mention = self._plain_mention(parent, pid, trail)
        if mention.by_label:
            return str(mention.label)
        noun = words_of(parent.entity or parent.name)
        return f"{mention.label} ({pid})" if mention.label else f"{noun} {pid}"

    def _lists_of(self, entity: str | None) -> list[ToolManifest]:
        """Query tools over ``entity`` that take no id of it: lists, counts, sums, finds."""
        return [
            tool
            for tool in self.queries.values()
            if tool.entity == entity
            and not any(a.source == "entity_id" and a.entity == entity for a in tool.args)
            and not any(a.source == "str" for a in tool.args)
            and all(not a.required or a.source == "entity_id" for a in tool.args)
        ]

    def _shape(self, tool: ToolManifest) -> str | None:
        """``list`` or ``aggregate``, from one call with the first parent id (cached)."""
        if tool.tool not in self.shapes:
            parent = _parent_arg(tool, tool.entity)
            arguments = {}
            if parent is not None:
                attr = parent.state_attr or self.compiled.entity_attrs.get(parent.entity or "", "")
                ids = sorted(self.state.get(attr) or {}, key=str)
                if not ids:
                    return None
                arguments[parent.name] = ids[0]
            result = self._query(tool.tool, arguments)
            data = result.get("data") if result else None
            shape = "list" if isinstance(data, list) else None
            if isinstance(data, dict) and "count" in data:
                shape = "aggregate"
            self.shapes[tool.tool] = shape
        return self.shapes[tool.tool]


def _value_and_noun(field: str, entity: str, value: str) -> tuple[str, str] | None:
    """The record's noun and an enum value as they read together: "the van", "the
    dermatologist" (round 37), "the normal-priority work order", "the checked-in booking";
    None where the value only repeats the noun ("my enrolled enrolment", round 41)."""
    if field.endswith("type") and entity in GENERIC_NOUNS:
        return value, ""
    value = BEFORE_A_NOUN.get(value, value)  # "the children's book", not "the children book"
    if field in MAKERS:  # "the Ford", never "the Ford vehicle" (round 44)
        return value, ""
    if field in GROUPS:  # "the employee in finance", not "the finance employee" (round 44)
        return f"{entity} in {value}", ""
    if field in ROUTE_ENDS:
        return f"{entity} {ROUTE_ENDS[field]} {value}", ""
    if entity in SPECIALISTS and re.fullmatch(r"[a-z]+ology", value):
        return value[:-1] + "ist", ""
    if field in QUALIFYING and " " not in value:
        return entity, f"{value}-{field_noun(field)}"
    if value[:4] == entity.split()[-1][:4]:
        return None
    if re.fullmatch(r"[a-z]+ed [a-z]+", value):
        return entity, value.replace(" ", "-")
    return entity, value


def _owner_after(parent: ArgManifest | None, owner: str, whose: str) -> tuple[str, str]:
    """Who the record is of, said after it where a possessive misleads: "the active permit at
    Airport Economy Lot", never "Airport Economy Lot's active permit" (round 39: a possessive
    of a place or a thing read as a form); "the open course taught by David Rodriguez", never
    "David Rodriguez's open course" (round 74: his enrolment or his class?)."""
    noun = words_of(parent.entity or "") if parent is not None else ""
    if noun in SERVED_BY:
        return "the", f" {SERVED_BY[noun]} {owner}"
    if parent is None or noun in PEOPLE:
        return whose, ""
    place = noun.split()[-1] in PLACE_NOUNS
    return "the", f" {'at' if place else 'of'} {owner}"


def _owner_placed(text: str, after: str) -> str:
    """ "the work order of 3MNP870 that's in progress", never "… that's in progress of
    3MNP870" (a breaker's, round 45)."""
    if after and " that's " in text:
        return text.replace(" that's ", f"{after} that's ", 1)
    return text + after


def sold_by_name(record: dict) -> bool:
    """Something a business sells under a name (a product with its price): buyers name it,
    and its status or category is the seller's own bookkeeping, not how anyone picks it."""
    priced = any(k in record and is_amount(record[k]) for k in PRICE_FIELDS)
    return priced and any(isinstance(record.get(k), str) for k in ("name", "title"))


PRICE_FIELDS = ("price", "unit_price", "list_price")


def _parent_arg(tool: ToolManifest, entity: str | None) -> ArgManifest | None:
    """The required id argument of another entity that scopes a list (``customer_id``)."""
    return next(
        (a for a in tool.args if a.source == "entity_id" and a.required and a.entity != entity),
        None,
    )


def _siblings(records: dict, value: Any, parent: ArgManifest | None) -> dict[Any, dict]:
    """The records a list scoped like ``value``'s record returns (all, without a parent)."""
    if parent is None:
        return {k: r for k, r in records.items() if isinstance(r, dict)}
    owner = records[value].get(parent.name)
    return {k: r for k, r in records.items() if isinstance(r, dict) and r.get(parent.name) == owner}


def _only_options(tool: ToolManifest, record: dict, siblings: dict, value: Any) -> list:
    """Equality filters under which ``record`` is the only one of its siblings."""
    options = []
    for arg in tool.args:
        if arg.source not in ("enum", "bool") or arg.required or arg.name not in record:
            continue
        same = [k for k, r in siblings.items() if r.get(arg.name) == record[arg.name]]
        if same == [value]:
            options.append(("only", arg.name))
    return options


def _extreme_options(record: dict, siblings: dict, value: Any, today: str = "") -> list:
    """Time fields in which ``record`` holds the one latest or earliest value of its siblings:
    one a participle stamps ("my most recently placed order"), or any when the record is the
    latest (earliest) by every time it has, so "my latest appointment" cannot mean another
    (``latest_any``); never "with the earliest start time"."""
    extremes = {}
    for name, own in record.items():
        if name.endswith("_id") or not isinstance(_comparable(own), date):
            continue
        values = {k: _comparable(r.get(name)) for k, r in siblings.items()}
        if any(v is None or type(v) is not type(_comparable(own)) for v in values.values()):
            extremes[name] = None
            continue
        extremes[name] = _unique_extreme(values, value)
    options = []
    for name, extreme in extremes.items():
        how = {"most": "latest", "least": "earliest", None: None}[extreme]
        if how and stamped_participle(name):
            options.append((how, name))
        elif how and set(extremes.values()) == {extreme} and not _to_come(siblings, name, today):
            options.append((f"{how}_any", name))
    return options  # nobody picks "the account with the smallest balance" without a reason


def _phrase_key(how: str, field: str, entity: str, named: bool, anywhere: bool) -> tuple[str, str]:
    """The ``lookups.yaml`` key that names the record, and the participle its time stamps:
    "my most recently booked shipment", not "… with the latest booking time"; the time that
    makes the record what it is ("booked" of a booking) goes without saying: "my latest
    booking"."""
    if how == "only":
        if anywhere:
            return ("only_named_anywhere" if named else "only_anywhere"), ""
        return ("only_with_status" if named else "only_with_field"), ""
    if how.endswith("_any"):  # the latest by every time it has: "my latest appointment"
        return f"{how.removesuffix('_any')}_own", ""
    done = stamped_participle(field)
    if done and done[:4] == entity.split()[-1][:4]:  # "credit purchase": purchased
        return f"{how}_own", ""
    return (f"{how}_done", done) if done else (how, "")


def _to_come(siblings: dict, field: str, today: str) -> bool:
    """Some of the records' times are still to come: "her most recent course" could then be the
    last begun or the last to begin (round 24), so no one names a record so."""
    return bool(today) and any(str(r.get(field) or "")[:10] >= today for r in siblings.values())


def _comparable(value: Any) -> Any:
    """Numbers as they are, ISO dates and times as dates/datetimes; anything else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and len(value) >= 10 and value[4:5] == "-":
        try:
            return date.fromisoformat(value[:10]) if len(value) == 10 else _datetime(value)
        except ValueError:
            return None
    return None


def _datetime(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _unique_extreme(values: dict[Any, Any], key: Any) -> str | None:
    """``most`` / ``least`` when ``values[key]`` is the one largest / smallest value."""
    own = values[key]
    others = [v for k, v in values.items() if k != key]
    if not others:
        return None
    if all(own > v for v in others):
        return "most"
    if all(own < v for v in others):
        return "least"
    return None


def _ids_in(data: list, value: Any) -> bool:
    return any(isinstance(r, dict) and value in r.values() for r in data)


def _record_field(state: dict, attrs: dict[str, str], entity: str, value: Any) -> dict | None:
    record = (state.get(attrs.get(entity, "")) or {}).get(value)
    return record if isinstance(record, dict) else None
