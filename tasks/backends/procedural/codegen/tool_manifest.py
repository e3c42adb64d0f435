"""The manifest of a compiled environment: per tool its kind, arguments and user phrases, plus the
business rules in words. The scenario generator reads only this, never the spec."""

from __future__ import annotations

import random
import re
import threading
from datetime import date, timedelta
from functools import lru_cache
from typing import Any

from faker import Faker

from envmill.tasks.backends.procedural.codegen.roles import roles_rules, who_may_rules
from envmill.tasks.backends.procedural.codegen.rules import rule_text
from envmill.tasks.backends.procedural.codegen.scope import OpScope
from envmill.tasks.backends.procedural.manifest import (
    ArgManifest,
    OwnedManifest,
    RecordRead,
    ToolManifest,
)
from envmill.tasks.backends.procedural.plan import EnvPlan, ToolPlan
from envmill.tasks.backends.procedural.spec.check import reachable_states
from envmill.tasks.backends.procedural.spec.domain import ArgSpec, EntitySpec
from envmill.tasks.backends.procedural.spec.paths import resolve_operand, resolve_path
from envmill.tasks.backends.procedural.state.contact import plain_name
from envmill.tasks.core.facts import join_words
from envmill.tasks.core.field_words import singular

SOURCES = {
    "ref": "entity_id",
    "enum": "enum",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "date": "date",
    "datetime": "datetime",
    "str": "str",
}
TYPICAL_FLOAT_MAX = 500.0  # a user's everyday amount, when the spec only gives a hard limit
PLAIN_NAMES = 40
ANCHOR = date(2025, 1, 1)


def business_rules(plan: EnvPlan) -> list[str]:
    """The domain's own rules, who may act, whose records a client may touch, then one per
    other precondition of the tools this seed kept."""
    owned: list[str] = []
    others: list[str] = []
    for tool in plan.tools:
        scope = OpScope(plan, tool)
        for pre in tool.op.preconditions:
            text = rule_text(scope, pre)
            if text:
                (owned if pre.kind == "owned" else others).append(text)
    records = {entity.replace("_", " ").split()[-1] for entity in plan.spec.entities}
    rules = [*plan.spec.rules, *roles_rules(plan), *who_may_rules(plan)]
    rules += own_records_rules(owned, records)
    rules += [text for text in dict.fromkeys(others) if text not in rules and text not in owned]
    return rules


def own_records_rules(texts: list[str], records: set[str]) -> list[str]:
    """The ownership rules of one kind of record said once, with every act they cover:
    "Senders cancel and redirect only their own shipments.", not a line per tool (round 49:
    eight lines of "Senders … only their own …"). Only the acts the rules name: "act only on
    their own shipments" claimed more than the tools check (a breaker found references that
    break it). A rule about anything but whole ``records`` (an address) stays as it is."""
    merged: dict[tuple[str, str, str], list[str]] = {}  # (who, "into ", things) -> acts
    rest: list[str] = []
    for text in dict.fromkeys(texts):
        found = OWN_ONLY_RULE.fullmatch(text)
        if found is None or singular(found["things"]) not in records:
            rest.append(text)
        else:
            key = (found["who"], found["how"], found["things"])
            merged.setdefault(key, []).append(found["act"])
    said = [
        f"{who} {join_words(list(dict.fromkeys(acts)))} only {how}their own {things}."
        for (who, how, things), acts in merged.items()
    ]
    return said + rest


# "Senders pack parcels only into their own shipments."
OWN_ONLY_RULE = re.compile(
    r"(?P<who>[A-Z][a-z]+) (?P<act>[a-z ,-]+?) only (?P<how>(?:\w+ ){0,2})their own "
    r"(?P<things>[a-z -]+)\."
)


def build_manifest(plan: EnvPlan) -> list[ToolManifest]:
    """One entry per tool, in the module's order (the session tool first)."""
    tools = [session_manifest(plan)] if plan.session_tool else []
    return tools + [
        ToolManifest(
            tool=tool.name,
            kind="query" if tool.op.is_query else "state_change",
            entity=tool.op.entity,
            args=[arg_manifest(plan, tool, arg) for arg in tool.op.args],
            roles=plan.allowed_roles(tool.op),
            owned=owned_manifest(plan, tool),
            phrases=tool.op.phrases or query_phrases(plan, tool),
            examples=argument_examples(plan, tool),
            doc=tool.op.doc or "",
        )
        for tool in plan.tools
    ]


def argument_examples(plan: EnvPlan, tool: ToolPlan) -> list[dict[str, Any]]:
    """The entity's examples a create draws its arguments from: the part of each its
    arguments take, when those values are ones the arguments allow."""
    if tool.op.kind != "create":
        return []
    args = {arg.name: arg for arg in tool.op.args}
    found = []
    for example in plan.entity(tool.op.entity).examples:
        taken = {name: value for name, value in example.items() if name in args}
        if len(taken) > 1 and all(_allows(args[name], value) for name, value in taken.items()):
            found.append(taken)
    return found


def _allows(arg: ArgSpec, value: Any) -> bool:
    if arg.type == "enum":
        return value in arg.values
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (arg.min is None or value >= arg.min) and (arg.max is None or value <= arg.max)
    return arg.type == "str"


def session_manifest(plan: EnvPlan) -> ToolManifest:
    return ToolManifest(
        tool=plan.session_tool or "",
        kind="query",
        entity="session",
        roles=list(plan.roles),
        phrases=["Who am I signed in as?", "Which account is this session acting for?"],
    )


def owned_manifest(plan: EnvPlan, tool: ToolPlan) -> list[OwnedManifest]:
    """Each kept ``owned`` rule as (argument, ref hops, owner entity, rule text)."""
    scope, found = OpScope(plan, tool), []
    for pre in tool.op.preconditions:
        if pre.kind != "owned":
            continue
        ref = resolve_operand(plan.spec, tool.op, pre.path)
        if ref.kind == "path":
            path = ref.at
            arg, hops = scope.root(path.subject), [*path.hops]
            if path.field != plan.entity(path.entity).id_field:
                hops.append(path.field)
        else:
            arg, hops = pre.path, []
        entity = ref.spec.entity or ""
        rule = rule_text(scope, pre) or ""  # an ownership rule always has words
        found.append(OwnedManifest(arg=arg, hops=hops, entity=entity, rule=rule))
    return found


def arg_manifest(plan: EnvPlan, tool: ToolPlan, arg: ArgSpec) -> ArgManifest:
    """How the generator should pick a value for ``arg``."""
    base = {"name": arg.name, "source": SOURCES[arg.type or "str"], "required": not arg.optional}
    base |= {"minimum": arg.min, "maximum": arg.max, "faker": arg.faker}
    if arg.type in ("int", "float"):
        base |= typical_bounds(plan, tool, arg)
    if arg.type in ("int", "float", "date", "datetime"):
        base |= record_bounds(plan, tool, arg)
    if arg.type == "enum":
        base["values"] = list(arg.values)
    elif arg.type == "str" and not tool.op.is_query:
        base |= text_choices(plan, tool, arg)
    elif arg.type == "date" and not tool.op.is_query:
        base |= past_dates(plan, tool, arg)
    entity_name = arg.entity if arg.type == "ref" else None
    if tool.op.kind == "find" and arg.name == plan.entity(tool.op.entity).label:
        entity_name = tool.op.entity
    if entity_name is None:
        return ArgManifest(**base)
    entity = plan.entity(entity_name)
    lookup = plan.lookup_tool(entity_name)
    base |= {"entity": entity_name, "state_attr": entity.plural}
    if arg.type == "ref":
        base["prefer"] = preferred_values(plan, tool, arg.name)
    if lookup is not None and entity.label:
        base |= {
            "label_field": entity.label,
            "lookup_tool": lookup.name,
            "lookup_arg": entity.label,
        }
    return ArgManifest(**base)


def typical_bounds(plan: EnvPlan, tool: ToolPlan, arg: ArgSpec) -> dict[str, float | None]:
    """Generator bounds a user would plausibly ask for, inside the hard min/max the code checks.

    An argument named after a field draws from that field's fill ``range`` (a nightly rate of
    a few hundred, not thousands); any other amount stays below an everyday ceiling.
    """
    low, high = arg.min, arg.max
    field = plan.entity(tool.op.entity).fields.get(arg.name)
    if field is not None and field.type == arg.type and field.range:
        low = max(low, field.range[0]) if low is not None else field.range[0]
        high = min(high, field.range[1]) if high is not None else field.range[1]
    elif arg.type == "float" and (high is None or high > TYPICAL_FLOAT_MAX):
        high = max(TYPICAL_FLOAT_MAX, low or 0.0)
    if low is not None and high is not None and high < low:
        return {}
    return {"minimum": low, "maximum": high}


MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def record_bounds(plan: EnvPlan, tool: ToolPlan, arg: ArgSpec) -> dict[str, Any]:
    """Where a plausible value sits against the records the call reads: below or above the
    record values a ``compare`` rule holds it to (approve at most what was claimed, delay to
    after the current departure), near the value an update's ``assign`` replaces, and
    ``per_hour`` since a recorded time (a trip's kilometres), a ``share`` of a recorded
    number (a payslip's gross of the salary)."""
    found: dict[str, Any] = {"at_most": [], "at_least": []}
    for pre in tool.op.preconditions:
        if pre.kind != "compare" or pre.op not in MIRROR:
            continue
        sides = {pre.left: (pre.right, pre.op), pre.right: (pre.left, MIRROR[pre.op])}
        other, op = sides.get(arg.name, (None, ""))
        read = record_read(plan, tool, other) if isinstance(other, str) else None
        if read is not None:
            found["at_most" if op.startswith("<") else "at_least"].append(read)
    replaced = [
        effect.path
        for effect in tool.op.effects
        if effect.kind == "assign" and effect.value == arg.name and effect.times is None
    ]
    found["near"] = record_read(plan, tool, replaced[0]) if replaced else None
    if arg.per_hour is not None and arg.since is not None:
        found |= {"per_hour": arg.per_hour, "since": record_read(plan, tool, arg.since)}
    if arg.share is not None and arg.share_of is not None:
        found |= {"share": arg.share, "share_of": record_read(plan, tool, arg.share_of)}
        found |= {"share_by": record_read(plan, tool, arg.share_by)} if arg.share_by else {}
    return found


def record_read(plan: EnvPlan, tool: ToolPlan, operand: str) -> RecordRead | None:
    """``target.policy_id.remaining_cover`` as a read from the call's id argument; None for
    anything but a path from an existing record (an argument, a limit, the new record)."""
    ref = resolve_operand(plan.spec, tool.op, operand)
    if ref.kind != "path" or ref.at.subject == "new":
        return None
    at = ref.at
    root = plan.entity(tool.op.entity) if at.subject == "target" else None
    if root is None:
        own = next((a for a in tool.op.args if a.name == at.subject and a.type == "ref"), None)
        root = plan.entity(own.entity or "") if own is not None else None
    if root is None:
        return None
    entities = [root]
    for hop in at.hops:
        entities.append(plan.entity(entities[-1].fields[hop].entity or ""))
    arg = root.id_field if at.subject == "target" else at.subject
    return RecordRead(arg=arg, attrs=[e.plural for e in entities], fields=[*at.hops, at.field])


def text_choices(plan: EnvPlan, tool: ToolPlan, arg: ArgSpec) -> dict[str, Any]:
    """Curated values for free text, drawn like an enum: the spec's ``sample`` (appointment
    reasons, review comments), or for person names a seeded list of plain "First Last" names
    (faker's ``name()`` adds titles such as "Dr." and "MD" now and then)."""
    if arg.sample:
        return {"source": "enum", "values": list(arg.sample)}
    if arg.faker == "name":
        key = f"{plan.spec.name}:{plan.seed}:{tool.name}"
        return {"source": "enum", "values": plain_names(key)}
    return {}


def past_dates(plan: EnvPlan, tool: ToolPlan, arg: ArgSpec) -> dict[str, Any]:
    """Dates long past (a date of birth), which the generator's near-future dates never match:
    a seeded list from the field's fill ``days``, counted back from the start of 2025."""
    field = plan.entity(tool.op.entity).fields.get(arg.name)
    if field is None or not field.days or field.days[1] > -365:
        return {}
    rng = random.Random(f"dates:{plan.spec.name}:{plan.seed}:{tool.name}:{arg.name}")
    days = {rng.randint(*field.days) for _ in range(PLAIN_NAMES)}
    values = [(ANCHOR + timedelta(days=day)).isoformat() for day in sorted(days)]
    return {"source": "enum", "values": values}


_NAME_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _name_faker() -> Faker:
    return Faker("en_US")


def plain_names(key: str) -> list[str]:
    """``PLAIN_NAMES`` (or a few fewer, after removing repeats) names seeded by ``key``; one
    thread at a time draws from the shared generator, or a compile in another thread would
    reseed it halfway and the same seed would give other names."""
    fake = _name_faker()
    with _NAME_LOCK:
        fake.seed_instance(random.Random(f"names:{key}").getrandbits(32))
        return sorted({plain_name(fake) for _ in range(PLAIN_NAMES)})


def preferred_values(plan: EnvPlan, tool: ToolPlan, arg_name: str) -> dict[str, list]:
    """Field values of the entity behind ``arg_name`` under which the call can succeed."""
    op, spec = tool.op, plan.spec
    is_target = op.kind == "update" and arg_name == plan.entity(op.entity).id_field
    subjects = {arg_name, "target"} if is_target else {arg_name}
    prefer: dict[str, list] = {}
    for item in [*op.preconditions, *op.effects]:
        path = getattr(item, "path", "")
        if item.kind not in ("field_in", "field_not_in", "transition") or path.count(".") != 1:
            continue
        subject, field = path.split(".")
        if subject not in subjects:
            continue
        owner = spec.entities[resolve_path(spec, op, path).entity]
        allowed = allowed_values(owner, item)
        prefer[field] = [v for v in prefer.get(field, allowed) if v in allowed]
    return prefer


def allowed_values(owner: EntitySpec, item: Any) -> list:
    """Values of the field ``item`` constrains (field_in, field_not_in, transition source)."""
    states = owner.status.states if owner.status else owner.fields[item.path.split(".")[1]].values
    if item.kind == "field_in":
        return list(item.values)
    if item.kind == "field_not_in":
        return [s for s in states if s not in item.values]
    live = reachable_states(owner)
    return [
        s
        for s in states
        if s in live
        and any(s in step.from_ and step.to == item.to for step in owner.machine.transitions)
    ]


def query_phrases(plan: EnvPlan, tool: ToolPlan) -> list[str]:
    """One or two user-voice requests for a query tool."""
    op = tool.op
    entity = plan.entity(op.entity)
    plural = entity.plural.replace("_", " ")
    if op.kind == "get":
        ident = entity.id_field
        ref = f"{{{ident}.label}}" if entity.label else f"{entity.title} {{{ident}}}"
        return [f"Can you show me the details of {ref}?", f"What do you have on file for {ref}?"]
    if op.kind == "find":
        return [
            f"I'm looking for the {entity.title} called {{{entity.label}}}.",
            f"Do you have a {entity.title} named {{{entity.label}}}?",
        ]
    owner = ""
    if op.parent:
        parent = plan.entity(entity.fields[op.parent].entity or "")
        owner = f"{{{op.parent}.label}}" if parent.label else f"{parent.title} {{{op.parent}}}"
    if op.kind == "list":
        return [f"Which {plural} does {owner} have?"] if owner else [f"Can you list the {plural}?"]
    if op.kind == "count":
        question = f"does {owner} have" if owner else "are there"
        return [f"How many {plural} {question}?"]
    where = f" for {owner}" if owner else ""
    summed = (op.field or "").replace("_", " ")  # a sum names its field
    return [f"What is the total {summed} of the {plural}{where}?"]
