"""Checks derived from what a replayed operation chain changed (DESIGN §3.3).

The procedural backend never asks a model what "done" means: it diffs the initial state against the
state the reference solution produced, and writes one small, pure, readable check per changed fact.
Each check reads the final state defensively (``.get`` with ``{}`` defaults), so a missing key
makes it return ``False`` instead of raising. Because every changed fact differs from the initial
state, every check is ``False`` on (initial, initial). Ids the system generates are never pinned:
a created record is found by its content, and a field that points at one is checked to point at
some record the task created, so doing independent steps in another order keeps full reward.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envmill.schemas.scenario import CheckSpec
from envmill.tasks.certify.generated import is_generated, is_record_add
from envmill.tasks.core.statekit import diff_states

MAX_CHECKS = 8
MAX_ENTITY_FIELDS = 5
PREFERRED_FIELDS = ("name", "title", "status", "state", "amount", "quantity", "total")


@dataclass
class Fact:
    """One changed fact: a plain-English description and the boolean expressions that verify it."""

    group: tuple[Any, ...]
    description: str
    conditions: list[str] = field(default_factory=list)
    created: bool = False  # a created record, found by an ``any(...)`` over its collection


def derive_checks(
    initial: dict[str, Any],
    final: dict[str, Any],
    *,
    step_changes: list[list[dict[str, Any]]] | None = None,
    entity_names: dict[str, str] | None = None,
    label_fields: dict[str, str] | None = None,
    cap: int = MAX_CHECKS,
) -> list[CheckSpec]:
    """One check per changed fact of ``initial`` → ``final``, merged by entity beyond ``cap``.

    Args:
        initial: the scenario's initial state.
        final: the state after the reference solution.
        step_changes: each state-change step's own diff; fields a later step touched on an entity
            that an earlier step created are always compared, so dropping that step fails a check.
        entity_names: state attribute -> entity name (e.g. ``loans`` -> ``loan``), for descriptions.
        label_fields: entity name -> field users name it by, for descriptions.
        cap: most checks to return; facts are merged by entity, then in contiguous chunks.
    """
    diff = diff_states(initial, final)
    namer = _Namer(entity_names or {}, label_fields or {}, final, _created_ids(diff))
    focus = _focus_fields(step_changes or [])
    facts = _collect_facts(diff, final, namer, focus)
    return [_render(fact) for fact in merge_facts(facts, cap)]


def derive_absence_check(
    before: dict[str, Any],
    untaken: dict[str, Any],
    *,
    entity_names: dict[str, str] | None = None,
    label_fields: dict[str, str] | None = None,
    taken: dict[str, Any] | None = None,
) -> CheckSpec | None:
    """A check that the branch a conditional task did not take left no trace: not every fact
    of ``before`` → ``untaken`` (the state that branch would have made) holds on the final
    state. What the ``taken`` branch (its final state) does alike is no trace: card and store
    credit both mark an order paid. None when that branch changes nothing checkable."""
    diff = diff_states(before, untaken)
    if taken is not None:
        diff = [c for c in diff if _value_at(taken, c["path"]) != c.get("new")]
    namer = _Namer(entity_names or {}, label_fields or {}, untaken, _created_ids(diff))
    facts = _collect_facts(diff, untaken, namer, {})
    if not facts:
        return None
    conditions = [c for fact in facts for c in fact.conditions]
    lines = [f"        {'and ' if i else ''}{c}" for i, c in enumerate(conditions)]
    body = "    return not (\n" + "\n".join(lines) + "\n    )\n"
    header = "def check(initial_state: dict, final_state: dict) -> bool:\n"
    description = f"Has not {_join(facts).description} (the branch the task did not ask for)"
    return CheckSpec(description=description, code=header + body)


def _collect_facts(
    diff: list[dict[str, Any]], final: dict[str, Any], namer: _Namer, focus: dict[tuple, list[str]]
) -> list[Fact]:
    facts: list[Fact] = []
    seen: set[tuple[Any, ...]] = set()
    for change in diff:
        path = change["path"]
        if is_generated(change):
            continue
        cut = _cut_at_index(path)
        if cut != path:  # a change inside a list: compare the whole list once
            key = tuple(cut)
            if key not in seen:
                seen.add(key)
                facts.append(_changed_fact(cut, None, _value_at(final, cut), namer))
            continue
        facts.append(_fact_for(change, final, namer, focus))
    return _count_alike(facts)


def _count_alike(facts: list[Fact]) -> list[Fact]:
    """Records created alike (two identical ticket purchases) are one fact that counts them:
    ``any(...)`` would hold with one of the two, so it becomes ``sum(...) >= n``."""
    alike: dict[str, list[Fact]] = {}
    for fact in facts:
        if fact.created:
            alike.setdefault(fact.conditions[0], []).append(fact)
    result = []
    for fact in facts:
        same = alike.get(fact.conditions[0], []) if fact.created else [fact]
        if len(same) <= 1:
            result.append(fact)
        elif fact is same[0]:
            counted = "sum(" + fact.conditions[0].removeprefix("any(") + f" >= {len(same)}"
            noun = fact.description.removeprefix("created a ").removeprefix("created an ")
            text = f"created {len(same)} records alike, each a {noun}"
            result.append(Fact(fact.group, text, [counted], created=True))
    return result


def _fact_for(change: dict[str, Any], final: dict[str, Any], namer: _Namer, focus) -> Fact:
    path, op = change["path"], change["op"]
    if len(path) == 2 and op == "add" and isinstance(change["new"], dict):
        return _added_entity_fact(path, change["new"], namer, focus.get(tuple(path), []))
    if op == "remove":
        return _removed_fact(path, namer)
    return _changed_fact(path, change["old"] if op == "change" else None, change["new"], namer)


def _changed_fact(path: list[Any], old: Any, new: Any, namer: _Namer) -> Fact:
    condition = _equals(path, new, namer.created)
    if old is not None and type(old) is not type(new) and old == new:
        condition = f"{condition} and isinstance({_access(path)}, {type(new).__name__})"
    if old is not None and _is_short(old):
        condition = f"{condition}  # was {old!r}"
    what = namer.field_phrase(path)
    if isinstance(new, str) and new in namer.created:
        noun = singular_of(namer.created[new])
        return Fact(tuple(path[:2]), f"set {what} to the new {noun}", [condition])
    verb = (
        f"changed {what} from {old!r} to {new!r}"
        if _is_number(old) and _is_number(new)
        else (f"set {what} to {new!r}")
    )
    return Fact(tuple(path[:2]), verb, [condition])


def _added_entity_fact(path: list[Any], record: dict[str, Any], namer: _Namer, focus) -> Fact:
    """A created record, found by its whole content (all but its own id and touch stamps): any
    record new in its collection that matches. The description names a few readable fields."""
    fields = _pick_fields(record, str(path[1]), focus)
    content = [
        name
        for name, value in record.items()
        if value != path[1] and not is_generated({"path": [*path, name], "old": None, "new": value})
    ]
    matches = [_record_matches(name, record[name], namer.created) for name in content]
    collection = path[0]
    condition = (
        f"any(\n            key not in initial_state.get({collection!r}, {{}})"
        + "".join(f"\n            and {match}" for match in matches)
        + f"\n            for key, record in final_state.get({collection!r}, {{}}).items()"
        + "\n        )"
    )
    shown = ", ".join(f"{name} {_shown(record[name], namer.created)}" for name in fields)
    detail = f" with {shown}" if shown else ""
    description = f"created a {namer.entity_noun(path)}{detail}"
    return Fact(tuple(path[:2]), description, [condition], created=True)


def _record_matches(name: str, value: Any, created: dict[str, str]) -> str:
    if isinstance(value, str) and value in created:
        return _is_created(f"record.get({name!r})", created[value])
    if value is None:
        return f"{name!r} in record and record[{name!r}] is None"
    return _is(f"record.get({name!r})", value)


# A value of words is free text ("12 Harbour Road, Leeds", "call back after lunch"): written
# with other separators, spacing or case it is the same text; a changed word, sign or symbol
# ("-50", "1.5", "C++", "A+") is not. Values without a letter (dates, clocks, phone numbers)
# stay exact.
SEPARATORS = ',;:!?"()'


def _is(expression: str, value: Any) -> str:
    """``expression`` holds ``value``: free text by its words, anything else exactly."""
    words = _words(value) if isinstance(value, str) else []
    if len(words) < 2 or not any(c.isalpha() for c in value):
        return f"{expression} == {value!r}"
    spaced = f'"".join(" " if c in {SEPARATORS!r} else c for c in str({expression}).casefold())'
    read = f"[w.rstrip('.') for w in {spaced}.split()]"
    return f"isinstance({expression}, str) and {read} == {words!r}"


def _words(text: str) -> list[str]:
    """As the check reads text: casefolded, split at spaces and separators, a word's closing
    full stop dropped ("St." is "St")."""
    spaced = "".join(" " if c in SEPARATORS else c for c in text.casefold())
    return [word.rstrip(".") for word in spaced.split()]


def _is_created(expression: str, collection: str) -> str:
    """``expression`` names a record the task created in ``collection`` (whatever its id)."""
    return (
        f"{expression} in final_state.get({collection!r}, {{}}) "
        f"and {expression} not in initial_state.get({collection!r}, {{}})"
    )


def _shown(value: Any, created: dict[str, str]) -> str:
    return "a new one" if isinstance(value, str) and value in created else repr(value)


def _created_ids(diff: list[dict[str, Any]]) -> dict[str, str]:
    """Ids of the records the chain created -> their collection (the system chose them)."""
    return {
        change["path"][1]: change["path"][0]
        for change in diff
        if is_record_add(change) and len(change["path"]) == 2 and isinstance(change["path"][1], str)
    }


def _removed_fact(path: list[Any], namer: _Namer) -> Fact:
    condition = f"{path[-1]!r} not in {_access(path[:-1], default=True)}"
    if len(path) == 2:
        return Fact(tuple(path), f"removed {namer.entity_phrase(path)}", [condition])
    return Fact(tuple(path[:2]), f"removed {namer.field_phrase(path)}", [condition])


def _pick_fields(record: dict[str, Any], entity_id: str, focus: list[str]) -> list[str]:
    """The fields an added-entity check compares: touched ones first, then a few readable ones."""
    chosen = [name for name in focus if name in record]
    scalar = [
        name
        for name, value in record.items()
        if _is_short(value) and value is not None and value != entity_id and name not in chosen
    ]
    preferred = [name for name in PREFERRED_FIELDS if name in scalar]
    rest = [name for name in scalar if name not in preferred]
    room = max(0, MAX_ENTITY_FIELDS - len(chosen))
    return chosen + (preferred + rest)[:room]


def merge_facts(facts: list[Fact], cap: int = MAX_CHECKS) -> list[Fact]:
    """One fact per check up to ``cap``; beyond it merge by entity, then in contiguous chunks."""
    if len(facts) <= cap:
        return facts
    groups: dict[tuple[Any, ...], list[Fact]] = {}
    for fact in facts:
        groups.setdefault(fact.group, []).append(fact)
    merged = [_join(members) for members in groups.values()]
    if len(merged) <= cap:
        return merged
    size, extra = divmod(len(merged), cap)
    chunks, start = [], 0
    for index in range(cap):
        end = start + size + (1 if index < extra else 0)
        chunks.append(_join(merged[start:end]))
        start = end
    return chunks


def _join(facts: list[Fact]) -> Fact:
    if len(facts) == 1:
        return facts[0]
    parts = [fact.description for fact in facts]
    text = ", ".join(parts[:-1]) + " and " + parts[-1]
    return Fact(facts[0].group, text, [c for fact in facts for c in fact.conditions])


def _render(fact: Fact) -> CheckSpec:
    header = "def check(initial_state: dict, final_state: dict) -> bool:\n"
    if len(fact.conditions) == 1:
        body = f"    return {fact.conditions[0]}\n"
    else:
        lines = [f"        {'and ' if i else ''}{c}" for i, c in enumerate(fact.conditions)]
        body = "    return (\n" + "\n".join(lines) + "\n    )\n"
    return CheckSpec(description=f"Has {fact.description}", code=header + body)


def _access(path: list[Any], *, default: bool = False) -> str:
    """``final_state.get("a", {}).get("b")``: reads a path without raising on a missing key."""
    text = "final_state"
    for index, key in enumerate(path):
        last = index == len(path) - 1
        text += f".get({key!r})" if last and not default else f".get({key!r}, {{}})"
    return text


def _equals(path: list[Any], value: Any, created: dict[str, str] | None = None) -> str:
    if created and isinstance(value, str) and value in created:
        return _is_created(_access(path), created[value])
    if value is None:
        return f"{path[-1]!r} in {_access(path[:-1], default=True)} and {_access(path)} is None"
    return _is(_access(path), value)


def _cut_at_index(path: list[Any]) -> list[Any]:
    for index, key in enumerate(path):
        if isinstance(key, int):
            return path[:index]
    return path


def _value_at(state: Any, path: list[Any]) -> Any:
    for key in path:
        state = state.get(key) if isinstance(state, dict) else None
    return state


def _focus_fields(step_changes: list[list[dict[str, Any]]]) -> dict[tuple, list[str]]:
    focus: dict[tuple, list[str]] = {}
    for changes in step_changes:
        for change in changes:
            path = change["path"]
            if len(path) >= 3 and isinstance(path[2], str) and not is_generated(change):
                names = focus.setdefault(tuple(path[:2]), [])
                if path[2] not in names:
                    names.append(path[2])
    return focus


def _is_short(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and len(repr(value)) <= 60 or value is None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def words_of(name: str) -> str:
    """``next_due_date`` / ``BookLoan`` -> ``next due date`` / ``book loan``, for user text."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return re.sub(r"[_\-\s]+", " ", spaced).strip().lower()


def singular_of(attr: str) -> str:
    """A best-effort singular of a collection name, used only when the manifest names no entity."""
    word = words_of(attr)
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "uses")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


class _Namer:
    """Plain-English names of entities and fields for check descriptions."""

    def __init__(
        self,
        entity_names: dict[str, str],
        label_fields: dict[str, str],
        final: dict,
        created: dict[str, str],
    ):
        self.entity_names, self.label_fields, self.final = entity_names, label_fields, final
        self.created = created

    def entity_noun(self, path: list[Any]) -> str:
        attr = str(path[0])
        entity = self.entity_names.get(attr)
        return words_of(entity) if entity else singular_of(attr)

    def entity_phrase(self, path: list[Any]) -> str:
        attr = str(path[0])
        entity = self.entity_names.get(attr)
        noun = words_of(entity) if entity else singular_of(attr)
        if len(path) < 2:
            return words_of(attr)
        label = self._label(attr, entity, path[1])
        return f"{noun} {path[1]}" + (f" ({label!r})" if label else "")

    def field_phrase(self, path: list[Any]) -> str:
        if len(path) == 1:
            return f"the {words_of(str(path[0]))}"
        if len(path) == 2:
            return f"{words_of(str(path[0]))} entry {path[1]!r}"
        inner = " ".join(words_of(str(key)) for key in path[2:])
        return f"the {inner} of {self.entity_phrase(path)}"

    def _label(self, attr: str, entity: str | None, entity_id: Any) -> str | None:
        field_name = self.label_fields.get(entity or "")
        record = _value_at(self.final, [attr, entity_id])
        value = record.get(field_name) if isinstance(record, dict) and field_name else None
        return value if isinstance(value, str) and value else None
