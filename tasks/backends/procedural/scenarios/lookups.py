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
from envmill.tasks.backends.procedural.phrasing.word_lists import field_noun
from envmill.tasks.backends.procedural.phrasing.words import (
    format_value,
    humanize_value,
    is_money,
)
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, _ChainSampler

MAX_SIBLINGS = 5  # an aggregate lookup calls the count or sum once per candidate


def shown(field: str, value: Any) -> str:
    """A field value as the task writes it ("$1,250.50", "9 Feb 2025", "checked in")."""
    if isinstance(value, str) and re.fullmatch(r"[a-z]+(?:_[a-z]+)+", value):
        return value.replace("_", " ")  # an enum value said in words
    return humanize_value(format_value(value), dollars=is_money(field, value))


class LookupSampler(_ChainSampler):
    """Names one entity argument of the chain by a filter (``filtered``) or an aggregate
    (``aggregate``); a chain where no step could be named so is refused (``_wants``)."""

    def __init__(self, *args: Any, mode: str) -> None:
        super().__init__(*args)
        self.mode, self.done, self.shapes = mode, False, {}

    def _wants(self, mentions: list[ArgMention]) -> bool:
        return self.done or any(m.described for m in mentions)

    def _kept(self, step: Any) -> None:
        self.done = self.done or any(m.described for m in step.mentions)

    def _special_mention(
        self, arg: ArgManifest, value: Any, calls: list[SolutionStep]
    ) -> ArgMention | None:
        if self.done or self.chain.steps or not arg.entity:
            return None  # the first step only: its name is then true of the initial state
        attr = arg.state_attr or self.compiled.entity_attrs.get(arg.entity, "")
        collection = self.state.get(attr)
        if not isinstance(collection, dict) or not isinstance(collection.get(value), dict):
            return None
        named = (
            self._filtered(arg, value, collection, calls)
            if self.mode == "filtered"
            else self._aggregated(arg, value, collection, calls)
        )
        if named is None:
            return None
        return ArgMention(arg.name, value, arg.source, arg.entity, described=named)

    # -- filtered: a list with a filter, or the largest / latest of a list
    def _filtered(self, arg: ArgManifest, value: Any, records: dict, calls: list) -> str | None:
        tools = [t for t in self._lists_of(arg.entity) if self._shape(t) == "list"]
        self.rng.shuffle(tools)
        for tool in tools:
            parent = _parent_arg(tool, arg.entity)
            siblings = _siblings(records, value, parent)
            if len(siblings) < 2:
                continue
            options = _only_options(tool, records[value], siblings, value)
            options += _extreme_options(records[value], siblings, value) if parent else []
            self.rng.shuffle(options)
            for option in options:
                text = self._try_filtered(tool, parent, records[value], value, option, calls)
                if text is not None:
                    return text
        return None

    def _try_filtered(self, tool, parent, record, value, option, calls) -> str | None:
        how, field = option
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
        owner = self._name_parent(parent, record[parent.name], trail) if parent else None
        entity = words_of(tool.entity)
        field_words = field_noun(field)
        if how == "only" and owner is None:
            key, owner = "only_anywhere", ""
        elif how == "only":
            key = "only_with_status" if field in ("status", "state") else "only_with_field"
        else:
            key = how
        text = say(
            key,
            self.rng,
            entity=entity,
            parent=owner,
            field=field_words,
            value=shown(field, record.get(field)),
        )
        calls.extend([*trail, SolutionStep(tool=tool.tool, arguments=arguments)])
        return text

    # -- aggregate: the sibling with the most children, or the largest total over them
    def _aggregated(self, arg: ArgManifest, value: Any, records: dict, calls: list) -> str | None:
        lists = [t for t in self._lists_of(arg.entity) if _parent_arg(t, arg.entity)]
        lists = [t for t in lists if self._shape(t) == "list"]
        aggregates = self._aggregates_over(arg.entity)
        self.rng.shuffle(aggregates)
        for listing in lists:
            parent = _parent_arg(listing, arg.entity)
            siblings = sorted(_siblings(records, value, parent), key=str)
            if not 2 <= len(siblings) <= MAX_SIBLINGS:
                continue
            for aggregate in aggregates:
                text = self._try_aggregate(listing, parent, aggregate, value, siblings, calls)
                if text is not None:
                    return text
        return None

    def _try_aggregate(self, listing, parent, aggregate, value, siblings, calls) -> str | None:
        record = _record_field(self.state, self.compiled.entity_attrs, listing.entity, value)
        pid = record.get(parent.name) if record else None
        if pid is None:
            return None
        own_arg = _parent_arg(aggregate, aggregate.entity)  # _aggregates_over: it has one
        if own_arg is None:
            return None
        totals, steps = {}, []
        field: str | None = None  # the summed field of the last call (None: a count)
        for sibling in siblings:
            step = SolutionStep(tool=aggregate.tool, arguments={own_arg.name: sibling})
            result = self._query(step.tool, step.arguments)
            number, field = _aggregate_value(result)
            if number is None:
                return None
            totals[sibling], steps = number, [*steps, step]
        best = _unique_extreme(totals, value)
        if best is None:
            return None
        trail: list[SolutionStep] = []
        owner = self._name_parent(parent, pid, trail)
        listed = SolutionStep(tool=listing.tool, arguments={parent.name: pid})
        if self._query(listed.tool, listed.arguments) is None:
            return None
        if field is None:
            key = "most_counted" if best == "most" else "fewest_counted"
        else:
            key = "largest_total" if best == "most" else "smallest_total"
        total = f"total {field_noun(field)}" if field and field != "total" else "total"
        entity = aggregate.entity or ""  # an aggregate is over an entity
        children = words_of(self.compiled.entity_attrs.get(entity, entity))
        text = say(
            key,
            self.rng,
            entity=words_of(listing.entity),
            parent=owner,
            children=children,
            total=total if field else "",
        )
        calls.extend([*trail, listed, *steps])
        return text

    # -- shared
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

    def _aggregates_over(self, entity: str | None) -> list[ToolManifest]:
        """Count and sum tools of another entity whose parent argument is ``entity``."""
        found = []
        for tool in self.queries.values():
            parent = _parent_arg(tool, tool.entity)
            if tool.entity != entity and parent is not None and parent.entity == entity:
                if self._shape(tool) == "aggregate":
                    found.append(tool)
        return found

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


def _extreme_options(record: dict, siblings: dict, value: Any) -> list:
    """Fields in which ``record`` holds the one largest or smallest value of its siblings."""
    options = []
    for name, own in record.items():
        if name.endswith("_id") or _comparable(own) is None:
            continue
        values = {k: _comparable(r.get(name)) for k, r in siblings.items()}
        if any(v is None or type(v) is not type(_comparable(own)) for v in values.values()):
            continue
        extreme = _unique_extreme(values, value)
        if extreme is not None:
            dated = isinstance(values[value], date)
            key = {"most": "latest", "least": "earliest"}[extreme] if dated else extreme
            options.append((key, name))
    return options


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


def _aggregate_value(result: dict[str, Any] | None) -> tuple[float | None, str | None]:
    """(number, summed field) from a sum's data, (count, None) from a count's."""
    data = result.get("data") if result else None
    if not isinstance(data, dict):
        return None, None
    for key, number in data.items():
        if key.startswith("total") and isinstance(number, int | float):
            return float(number), key.removeprefix("total_") or key
    count = data.get("count")
    return (float(count), None) if isinstance(count, int) else (None, None)


def _ids_in(data: list, value: Any) -> bool:
    return any(isinstance(r, dict) and value in r.values() for r in data)


def _record_field(state: dict, attrs: dict[str, str], entity: str, value: Any) -> dict | None:
    record = (state.get(attrs.get(entity, "")) or {}).get(value)
    return record if isinstance(record, dict) else None
