"""Refusal scenarios (``kind: refusal``): a request a business rule forbids in this state.

The generator draws state-changing calls against the live episode until one fails on a rule (a
limit, a status, a balance, a time window), not on a bad argument or a missing record; it rolls
back every call it tried. The request is that call in the user's words; the reference solution
reads the records the rule is about (so a trajectory shows why) and changes nothing; the reference
answer declines and names the reason the tool gave. Checks: the guard that nothing changed; the
reply is judged by envmill's judge against the scenario's ``refusal`` record (the rule, its
triggers: a quoted status or one of the rule's words from ``wording/refusals.yaml``).
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from envmill.schemas.answers import Refusal as RefusalRecord
from envmill.schemas.ids import canonical_json
from envmill.schemas.scenario import SolutionStep
from envmill.tasks.backends.procedural.checks.answers import RefusalEvidence, refusal_record
from envmill.tasks.backends.procedural.checks.derive import words_of
from envmill.tasks.backends.procedural.codegen.refused_by import (
    RefusingRule,
    refused_by,
    refusing_rules,
)
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment, ToolManifest
from envmill.tasks.backends.procedural.phrasing.task import name_the_record, phrase_step, voice_of
from envmill.tasks.backends.procedural.phrasing.word_lists import load_wording, words
from envmill.tasks.backends.procedural.phrasing.words import (
    article_for,
    collect_user_facts,
    plural_of,
)
from envmill.tasks.backends.procedural.plan import plan_environment
from envmill.tasks.backends.procedural.scenarios.chains import (
    ArgMention,
    ArgumentDrawer,
    ChainStep,
    acted_on,
)
from envmill.tasks.backends.procedural.scenarios.subjects import (
    Subject,
    is_finished,
    name_subject,
    read_by_id,
    reader_of,
    run_query,
)
from envmill.tasks.core.facts import is_plural, said_moment
from envmill.tasks.core.field_words import (
    is_money_field,
    say_money,
    singular,
    spoken_fields,
    stamped_participle,
)
from envmill.tasks.core.instructions import described_clause
from envmill.tasks.core.status_words import status_lists, where_it_stands
from envmill.tasks.sandbox import ToolEpisode, known_state

MAX_TRIES = 40
QUOTED = re.compile(r"'([^']{1,40})'")
ISO_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})")
ISO_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?")
NUMBER = re.compile(r"(?<![\w.\-/:'])(\d+(?:\.\d+)?)(?![\w/:\-']|\.\d)")
# an error about a field that is not set ("within 9 days after the resolved at … (None)") is an
# environment's gap, not a rule a person could explain
OTHER_OWNER = re.compile(r";\s*this one belongs to .*$")
# "Permission denied: customer C-1 may act only on their own records": whose the record is,
# without the signed-in id the agent never looked up
OWN_ONLY = re.compile(r"^Permission denied: \w[\w ]* \S+ may act only on their own records", re.I)
READ_VALUE = re.compile(r"\((\d+(?:\.\d+)?)\)")
NOT_A_RULE = re.compile(
    r"^Invalid |not found|nothing to update|^[A-Za-z]+Error: |\(None\)", re.IGNORECASE
)


@dataclass
class Refusal:
    """A forbidden request: its words, the reading calls, the reply and the rule it breaks."""

    text: str
    steps: list[SolutionStep]
    answer: str
    refusal: RefusalRecord
    reason: str
    vague: str = ""
    facts: dict[str, Any] = field(default_factory=dict)


def find_refusal(
    compiled: CompiledEnvironment, episode: ToolEpisode, rng: random.Random, faker: Any
) -> Refusal | None:
    """Try drawn calls until one is refused by a rule with a nameable reason; None if none is."""
    drawer = ArgumentDrawer(compiled, rng, faker)
    changers = [t for t in compiled.tools if t.kind == "state_change"]
    targets = target_values(compiled) if changers else {}
    rules = refusing_rules(plan_environment(compiled.spec, compiled.seed)) if changers else {}
    state = known_state(episode)
    whose = None  # an ownership refusal, kept while a rule's is looked for
    acting = state.get("acting_id") if isinstance(state.get("acting_id"), str) else None
    for _ in range(MAX_TRIES if changers else 0):
        manifest = rng.choice(changers)
        # mostly the client's own records, where a business rule is what refuses
        drawer.acting_id = acting if rng.random() >= OWNERSHIP_SHARE else None
        arguments = drawer.draw_arguments(manifest, state)
        if arguments is None:
            continue
        error = _refused_by_rule(episode, manifest.tool, arguments, state)
        if error:  # "$188.42 against $0.15 of fines" is no one's mistake; $0.20 is
            arguments, error = _near_miss(episode, manifest.tool, arguments, error, state, rng)
        reasons = reason_terms(error, state, set(compiled.roles)) if error else []
        rule = refused_by(rules.get(manifest.tool, []), error) if error else None
        if (
            error
            and reasons
            and _in_the_policy(rule, error)
            and not _not_theirs_to_ask(compiled, manifest, arguments, error, state)
            and not _staff_business(compiled, manifest, error)
            and not _already_there(error, targets.get(manifest.tool, set()), state)
            and not _already_over(compiled, manifest, arguments, error, rule, state)
            and not _not_there_yet(compiled, error, rule)
            and not _days_too_early(error)
            and _staff_would(compiled, episode, manifest, arguments, error)
            and not _changes_nothing(compiled, manifest, arguments, state)
        ):
            found = (manifest, arguments, error, reasons, rule)
            if OWN_ONLY.match(error) and rng.random() >= OWNERSHIP_SHARE:
                whose = whose or found
                continue
            refusal = _refusal(compiled, episode, rng, found, targets)
            if refusal is not None:
                return refusal
    return _refusal(compiled, episode, rng, whose, targets) if whose else None


# the share of refusals taken as the first refused call when it is someone else's record: a
# call drawn at random is most often that (15 of 23 in a default run), and raters read a run
# of "isn't one of your own" as a contrived trap (round 44); the business's rules teach more
OWNERSHIP_SHARE = 0.35


def _changes_nothing(
    compiled: CompiledEnvironment,
    manifest: ToolManifest,
    arguments: dict[str, Any],
    state: dict[str, Any],
) -> bool:
    """Every value the call would set is the record's already: a refusal of "set the rate to
    $250" of a matter at $250 leaves out that nothing needed doing (round 61)."""
    record = _acted_record(compiled, manifest, arguments, state)
    values = {k: v for k, v in arguments.items() if not k.endswith("_id") and k in record}
    return bool(values) and all(_same(record[k], v) for k, v in values.items())


def _acted_record(
    compiled: CompiledEnvironment,
    manifest: ToolManifest,
    arguments: dict[str, Any],
    state: dict[str, Any],
) -> dict[str, Any]:
    """The record the call acts on as ``state`` holds it; empty for a create."""
    records = state.get(compiled.entity_attrs.get(manifest.entity, "")) or {}
    record = records.get(acted_on(manifest, arguments)) if isinstance(records, dict) else None
    return record if isinstance(record, dict) else {}


def _same(old: Any, new: Any) -> bool:
    if _is_number(old) and _is_number(new):
        return abs(float(old) - float(new)) < 0.005
    return old == new


def _staff_would(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    manifest: ToolManifest,
    arguments: dict[str, Any],
    error: str,
) -> bool:
    """A refusal for want of a role only of what that role could do now: a guest "arriving
    today" three weeks early, a borrower asking to put an active loan "back in good standing"
    (round 52) asked for what no one could do, and the reply that cites the role hid it."""
    if not ROLE_SAID.match(error.replace("_", " ")):
        return True
    return _staff_could(compiled, episode, manifest, arguments)


def _staff_business(compiled: CompiledEnvironment, manifest: ToolManifest, error: str) -> bool:
    """A client refused a staff tool that no client asks for in their own words: a member
    asking to "mark booking BK-6 as a no-show", a policyholder to deny their own claim. A tool
    a client wants done for them (a deposit, a lost book) has a phrase in the first person."""
    found = ROLE_SAID.match(error.strip().rstrip("."))
    role = compiled.roles.get(found["role"]) if found else None
    if role is None or role.entity is None:
        return False
    return not any(FIRST_PERSON.search(phrase) for phrase in manifest.phrases)


FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|my|me)\b")


def _in_the_policy(rule: Any, error: str) -> bool:
    """Whether the system message states the rule the refusal rests on: a precondition with a
    rule's words, or who may use the tool. A status move the tool's own machine forbids ("I can
    only refund a valid ticket order") is in no policy the agent was given, and raters read the
    refusal as resting on a rule from nowhere (round 24)."""
    return bool(rule is not None and rule.rule) or bool(ROLE_SAID.match(error.replace("_", " ")))


def _not_theirs_to_ask(
    compiled: CompiledEnvironment,
    manifest: ToolManifest,
    arguments: dict[str, Any],
    error: str,
    state: dict[str, Any],
) -> bool:
    """A role refusal a client would never ask for: staff work on a record that is not the
    signed-in client's own (a passenger asking to delay a flight, a sender confirming another
    sender's delivery; raters' worst items). A client asks staff's help with their own booking,
    order or request; a member of staff may well try what only a manager may."""
    you = state.get("acting_id")
    if not isinstance(you, str) or "-" not in you or not ROLE_SAID.match(error.replace("_", " ")):
        return False
    if state.get("acting_role") not in plan_environment(compiled.spec, compiled.seed).entity_roles:
        return False
    prefix = you.split("-")[0] + "-"
    for arg in manifest.args:
        if arg.source != "entity_id" or arg.name not in arguments:
            continue
        records = state.get(compiled.entity_attrs.get(arg.entity or "", ""), {})
        record = records.get(arguments[arg.name]) if isinstance(records, dict) else None
        if arguments[arg.name] == you or you in _owners(record, prefix, state):
            return False
    return True


def _owners(record: Any, prefix: str, state: dict[str, Any], depth: int = 2) -> set[str]:
    """The ids starting with ``prefix`` (the signed-in person's kind) that ``record`` points
    at, itself or through the records it points at (an inspection's service request's
    resident)."""
    links = [v for k, v in (record or {}).items() if k.endswith("_id") and isinstance(v, str)]
    owners = {v for v in links if v.startswith(prefix)}
    if owners or depth <= 1:
        return owners
    for link in links:
        for records in state.values():
            if isinstance(records, dict) and isinstance(records.get(link), dict):
                owners |= _owners(records[link], prefix, state, depth - 1)
    return owners


# "Too late: … at least 6 hours before the start time of class CL-4 (2025-08-11T12:15:00);
# current time 2025-08-21T10:15:00": the moment the notice is counted back from, and now
HOURS_BEFORE = re.compile(
    r"^Too late: this must be done at least .+\((?P<at>\d{4}-\d{2}-\d{2}[^()]*)\); "
    r"current time (?P<now>\S+)$"
)
STATUS_RULES = ("field_in", "field_not_in")


def _already_over(
    compiled: CompiledEnvironment,
    manifest: ToolManifest,
    arguments: dict[str, Any],
    error: str,
    rule: RefusingRule | None,
    state: dict[str, Any],
) -> bool:
    """The request makes no sense beyond the rule: a notice period named for a class that
    started ten days ago, or a limit named for a record that is finished (closed, cancelled,
    completed). A person would say "that's already over", not the rule; such a draw is not made
    a refusal scenario. A status rule names the finished state itself and stays, for a client
    (who may not know); staff are not asked to act on what is over."""
    late = HOURS_BEFORE.match(error.strip().rstrip("."))
    if late and late["at"] <= late["now"]:
        return True
    finished = any(
        is_finished(compiled, arg.entity, state, arguments[arg.name])
        for arg in manifest.args
        if arg.source == "entity_id" and arg.entity and arg.name in arguments
    )
    if finished and not state.get("acting_id"):  # staff know a gala that ended a month ago is
        return True  # over: selling tickets for it is no request they make (round 35)
    if rule is not None and rule.kind in STATUS_RULES or TRANSITION_SAID.match(error.rstrip(".")):
        return False
    return finished


def _not_there_yet(compiled: CompiledEnvironment, error: str, rule: RefusingRule | None) -> bool:
    """A rule about what comes too late ("Paid orders can be refunded only before they ship")
    drawn for a record that has not reached the allowed status yet (an unpaid order): the reply
    would cite shipping to someone whose order was never paid (round 54, rated 1). No
    refusal scenario is made of such a draw."""
    found = STATUS_SAID.match(_plain_error(error).rstrip("."))
    if found is None or found["negated"] or rule is None or " before " not in f" {rule.rule} ":
        return False
    now = found["now"].replace(" ", "_")
    allowed = {a.replace(" ", "_") for a in re.split(r",\s*|\s+or\s+", found["allowed"]) if a}
    who = found["who"].casefold()
    machines = [  # the machine of the record the error names ("Order OR-10 …") first
        entity.status
        for entity in sorted(
            compiled.spec.entities.values(),
            key=lambda e: not who.startswith(e.name.replace("_", " ")),
        )
        if entity.status is not None and {now, *allowed} <= set(entity.status.states)
    ]
    if not machines:
        return False
    ahead = allowed & _reachable(machines[0].transitions, now)
    # not yet there, and never past it: a courier on a delivery gets back to "off shift" too
    return bool(ahead) and not any(now in _reachable(machines[0].transitions, a) for a in allowed)


def _days_too_early(error: str) -> bool:
    """A "too early" refusal for a moment days away: no patient "just arrived at the desk" for
    an appointment 13 days off, no member is "at the space" for a booking next week (round 77:
    set-ups bent to trigger the rule). An hour or a day early is how a person gets it wrong."""
    found = TIME_SAID.match(error.rstrip("."))
    if found is None or found["label"] != "Too early":
        return False
    try:
        at = datetime.fromisoformat(found["at"].strip())
        now = datetime.fromisoformat(found["now"].strip())
    except ValueError:
        return False
    return at - now > EARLY_AT_MOST


EARLY_AT_MOST = timedelta(days=1)


def _reachable(transitions: list[Any], start: str) -> set[str]:
    """The statuses a record in ``start`` can reach."""
    seen, todo = set(), [start]
    while todo:
        status = todo.pop()
        for step in transitions:
            if status in step.from_ and step.to not in seen:
                seen.add(step.to)
                todo.append(step.to)
    return seen


def _near_miss(
    episode: ToolEpisode,
    tool: str,
    arguments: dict[str, Any],
    error: str,
    state: dict[str, Any],
    rng: random.Random,
) -> tuple[dict[str, Any], str]:
    """For a number refused by a limit ("amount (188.42) must be at most … (0.15)"), a value
    just past the limit that the same rule still refuses, as a person would get it wrong."""
    found = LIMIT_SAID.match(error.rstrip("."))
    limit = _limit_of(found) if found else None
    if found is None or limit is None:
        return arguments, error
    given, bound = float(found["given"]), found["bound"]
    names = _holding(arguments, given)
    if not names or limit <= 0:
        return arguments, error
    factor = rng.uniform(1.05, 1.35) if bound in ("at most", "less than") else rng.uniform(0.6, 0.9)
    whole = isinstance(arguments[names[0]], int)
    value = round(limit * factor) if whole else round(limit * factor, 2)
    if value == limit or (whole and value < 1):
        return arguments, error
    closer = {**arguments, names[0]: value}
    refused = _refused_by_rule(episode, tool, closer, state)
    if refused is None or LIMIT_SAID.match(refused.rstrip(".")) is None:
        return arguments, error
    return closer, refused


def _refused_by_rule(
    episode: ToolEpisode, tool: str, arguments: dict[str, Any], state: dict[str, Any]
) -> str | None:
    """The rule's error when the call fails on one; any effect is rolled back."""
    outcome = episode.call(tool, dict(arguments))
    if outcome.ok and outcome.state != state:
        episode.load_state(state)
    if outcome.succeeded or not outcome.ok:
        return None
    error = outcome.result.get("error")
    return error if isinstance(error, str) and not NOT_A_RULE.search(error) else None


def _offer_holds(
    episode: ToolEpisode,
    tool: str,
    arguments: dict[str, Any],
    error: str,
    state: dict[str, Any],
) -> bool:
    """Whether what ``next_step`` offers would go through: the call at the limit itself. An
    offer the tool would refuse in turn (50 units of an item with 30 on hand) is a promise the
    agent cannot keep."""
    found = LIMIT_SAID.match(_plain_error(error))
    if found is None:
        return False
    limit, given = _limit_of(found), float(found["given"])
    names = _holding(arguments, given)
    if limit is None or not names:
        return False
    value = int(limit) if isinstance(arguments[names[0]], int) else limit
    return _goes_through(episode, tool, {**arguments, names[0]: value}, state)


def _holding(arguments: dict[str, Any], given: float) -> list[str]:
    """The arguments whose number a limit's error quotes ("amount (188.42) must be …")."""
    return [name for name, v in arguments.items() if _is_number(v) and float(v) == given]


def _goes_through(
    episode: ToolEpisode, tool: str, arguments: dict[str, Any], state: dict[str, Any]
) -> bool:
    """Whether the call succeeds from ``state``; the episode is left at ``state``."""
    episode.load_state(state)
    outcome = episode.call(tool, dict(arguments))
    episode.load_state(state)
    return outcome.ok and outcome.succeeded


def target_values(compiled: CompiledEnvironment) -> dict[str, set[str]]:
    """Per tool, the values its effects set a field to (a transition's status, a set value)."""
    targets: dict[str, set[str]] = {}
    for tool in plan_environment(compiled.spec, compiled.seed).tools:
        for effect in tool.op.effects:
            value = getattr(effect, "to", None) if effect.kind == "transition" else None
            value = getattr(effect, "value", None) if effect.kind == "set" else value
            if isinstance(value, str):
                targets.setdefault(tool.name, set()).add(value.casefold())
    return targets


def _already_there(error: str, targets: set[str], state: dict[str, Any]) -> bool:
    """The request asks to move a record to the value it already has ("freeze" a frozen card):
    not a forbidden request but a no-op, whose natural answer ("it is already frozen") need not
    decline; such a draw is not made a refusal scenario. The record's value is the first value
    the error quotes that is not an id ("is 'frozen' and cannot become …", "has status 'X'")."""
    ids = _ids(state)
    quoted = [q.casefold() for q in QUOTED.findall(error) if q.casefold() not in ids]
    return bool(quoted) and quoted[0] in targets


def _ids(state: dict[str, Any]) -> set[str]:
    return {str(k).casefold() for v in state.values() if isinstance(v, dict) for k in v}


def reason_terms(
    error: str, state: dict[str, Any], roles: AbstractSet[str] = frozenset()
) -> list[str]:
    """Words a reply must use one of to name the reason: the statuses the error quotes (not
    ids or other record text), and the rule words (with synonyms) it contains."""
    lowered = error.casefold()
    skip = _ids(state) | {r.casefold() for r in roles}  # who is acting says nothing of why not
    quoted = [q.casefold() for q in QUOTED.findall(error) if q.casefold() not in skip]
    terms = [q for q in quoted if re.fullmatch(r"[a-z_ ]{3,30}", q)]
    for word, synonyms in load_wording("refusals")["reason_words"].items():
        if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", lowered):
            terms += [s for s in synonyms if s not in terms]
    return list(dict.fromkeys(terms))


def refusal_evidence(
    error: str,
    state: dict[str, Any],
    roles: AbstractSet[str] = frozenset(),
    arguments: Any = (),
    targets: AbstractSet[str] = frozenset(),
) -> RefusalEvidence:
    """What of this state the error names, that a reply must repeat one of: the quoted status
    (not an id, a role, or a value the request itself gave), the numbers (a limit, a balance, a
    count) and the dates; the request's own values (and the status it asks for) are left out,
    since an agent that read nothing could echo them. Rivals: the other values the quoted field
    takes in the state (a reply naming one is guessing)."""
    given = {str(v).casefold() for v in (arguments or {}).values() if not isinstance(v, bool)}
    lowered = error.casefold()
    skip = (
        _ids(state) | {r.casefold() for r in roles} | given | targets
    )  # the request says the target
    named = [q.casefold() for q in QUOTED.findall(error) if q.casefold() not in skip]
    named = [q for q in named if re.fullmatch(r"[a-z_ ]{3,30}", q)]
    days = [d for d in ISO_DAY.findall(error) if d not in {g[:10] for g in given}]
    plain = ISO_MOMENT.sub(" ", error)
    numbers = [float(n) for n in NUMBER.findall(plain)]
    known = [float(v) for v in (arguments or {}).values() if _is_number(v)]
    amounts = [n for n in numbers if not any(abs(n - k) < 0.005 for k in known)]
    read = [float(n) for n in READ_VALUE.findall(plain)]  # "the balance of … (5527.88)"
    if any(n in amounts for n in read):  # a value read from the state, not the rule's constant
        amounts = [n for n in amounts if n in read]
    values = {v.casefold() for v in _field_values(state, named)} - set(named)
    said = {v for v in values if re.search(rf"(?<![\w]){re.escape(v)}(?![\w])", lowered)}
    return RefusalEvidence(
        tuple(dict.fromkeys(named)),
        tuple(dict.fromkeys(amounts)),
        tuple(dict.fromkeys(days)),
        tuple(sorted(values - said)),
        tuple(known + numbers),
        tuple(sorted(said - skip)),  # "(only from scheduled)": the rule's own words
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _field_values(state: dict[str, Any], named: list[str]) -> set[str]:
    """Every value of each field that holds one of ``named`` in some record, in the state."""
    values: set[str] = set()
    for records in state.values():
        rows = (
            [r for r in records.values() if isinstance(r, dict)]
            if isinstance(records, dict)
            else []
        )
        fields = {
            f for r in rows for f, v in r.items() if isinstance(v, str) and v.casefold() in named
        }
        values |= {r[f] for r in rows for f in fields if isinstance(r.get(f), str)}
    return values


def _refusal(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    rng: random.Random,
    found: tuple[ToolManifest, dict[str, Any], str, list[str], RefusingRule | None],
    targets: dict[str, set[str]],
) -> Refusal | None:
    manifest, arguments, error, reasons, rule = found
    state = known_state(episode)
    if LIMIT_SAID.match(_plain_error(error)) and not _offer_holds(
        episode, manifest.tool, arguments, error, state
    ):  # the limit itself is refused too: a reply citing one rule leaves out the one that
        return None  # matters ($3,392 against $2,937 claimed, past a $1,500 desk limit; round 33)
    mentions, reads = _mentions_and_reads(compiled, episode, state, manifest, arguments)
    other = _other_client(error)
    kind = next((a.entity for a in manifest.args if str(arguments.get(a.name)) == other), None)
    if other in reads:  # someone the user says they are: read who is signed in, not them
        reads[other] = _own_record_read(compiled, state, kind)
        if not reads[other]:
            return None
    mine = OTHER_OWNER.sub("", error)  # another client's file is not read to refuse (round 25)
    steps = _reads_to_reason(reads, mine)
    if not steps:  # nothing to look at: the refusal would rest on the words alone
        return None
    results = [run_query(episode, s) for s in steps]
    others = _reads_of_others(compiled, episode, mine, steps, results)
    steps += [read for read, _ in others]
    if other and other not in reads:  # "isn't one of your own": only once the owner is seen
        trail = owner_trail(compiled, episode, other, steps, results)
        if trail is None:
            return None
        steps += [read for read, _ in trail]
        others += trail
    if not _reason_shown(error, results + [result for _, result in others], arguments):
        return None  # "the retainer balance ($1,153.48) …" that no call showed: unfounded
    step = ChainStep(manifest, arguments, mentions, [])
    voice = voice_of(compiled, state)
    clause = phrase_step(step, rng, voice=voice)
    vague = phrase_step(name_the_record([step])[0], rng, vague=True, voice=voice)
    policy = rule.rule if rule is not None else None
    own = _not_yours(error, mentions, _own_label(compiled, state, kind))
    if own is not None and (
        _says_they_are_another(clause.sentence(), mentions)
        or bool(manifest.roles)
        and state.get(compiled.acting_role_attr or "") not in manifest.roles
    ):  # not "isn't one of your pledges; check its number" of what only staff may do (round 51)
        return None
    # whose it is, and signing in as them: nothing to try in the sandbox
    reason, offer = own or _rule_said(compiled, episode, manifest, arguments, error, policy)
    # both forms the user may open with tell it, or the reply would answer a story untold
    told = (
        "story_answers" if all(STORY.search(c.sentence()) for c in (clause, vague)) else "answers"
    )
    reason = _by_name(_as_yours(reason, mentions), mentions)
    answer = rng.choice(words("refusals", told)).format(reason=reason)
    if offer:
        answer = f"{answer} {offer}"
    record = refusal_record(
        manifest.tool,
        error,
        refusal_evidence(
            error, state, set(compiled.roles), arguments, targets.get(manifest.tool, set())
        ),
        reasons,
        action=manifest.tool.split("_")[0],
        targets=sorted(targets.get(manifest.tool, set())),
        subject=next((m.label or str(m.value) for m in mentions if m.source == "entity_id"), ""),
        policy=policy or "",
    )
    # one who says they are someone else says it in one message: asked "the member's name"
    # by an agent that knows who is signed in, a persona of Lance Duffy answered "Mary
    # Washington" (round 28); with no facts to give, the scenario is not a conversation. So
    # is one about another's record: a persona told "your booking BKG-9" of a booking that is
    # not theirs contradicts itself, and has no other number to give when asked (round 31)
    facts = {} if other in reads or own is not None else collect_user_facts([step])
    return Refusal(clause.sentence(), steps, answer, record, error, vague.sentence(), facts)


def _rule_said(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    manifest: ToolManifest,
    arguments: dict[str, Any],
    error: str,
    policy: str | None,
) -> tuple[str, str | None]:
    """The reason a rule refused the call, and what the user can do instead, where the
    sandbox shows it would go through."""
    state = known_state(episode)
    policy = _what_applies(compiled, manifest, arguments, state, policy)
    reason = spoken_reason(error, policy, _action(compiled, manifest.tool))
    if REFERRAL.search(reason) and not _staff_could(compiled, episode, manifest, arguments):
        reason = REFERRAL.sub("", reason)  # no "ask the front desk" where they cannot either
    offer = next_step(error)
    if offer and not _offer_holds(episode, manifest.tool, arguments, error, state):
        offer = None
    return reason, offer


def _what_applies(
    compiled: CompiledEnvironment,
    manifest: ToolManifest,
    arguments: dict[str, Any],
    state: dict[str, Any],
    policy: str | None,
) -> str | None:
    """The policy without a later clause about a status the record is not in: "Adjusters are
    assigned only to newly filed claims", without "; denied claims are reopened by appeal" to
    the user of an approved claim (round 59: "pastes an irrelevant clause")."""
    if not policy or ";" not in policy:
        return policy
    spec = compiled.spec.entities.get(manifest.entity)
    status = spec.fields.get("status") if spec is not None else None
    record = _acted_record(compiled, manifest, arguments, state)
    if status is None or not record:
        return policy
    others = [words_of(str(v)) for v in status.values if v != record.get("status")]
    noun = re.escape(words_of(manifest.entity).split()[-1])
    first, *rest = policy.rstrip(".").split(";")
    kept = [  # "denied claims", "sold-out dishes"; not "file a new one" (a status word alone)
        clause
        for clause in rest
        if not any(
            re.search(rf"\b{re.escape(other)}\s+{noun}", clause.replace("-", " "), re.I)
            for other in others
        )
    ]
    return ";".join([first, *kept]) + "."


# a request that tells why, in the user's own words ("I lost my job and can't keep pledge
# PLG-2; please cancel it"): a refusal that ignores it read as cold (round 35)
STORY = re.compile(
    r"\b(?:I|I'm|I've|my)\b[^;.]*\b(?:lost|never|broke|broken|sick|ill|called off|disagree|"
    r"wrong|mistake|damaged|stolen|can't (?:make|keep|afford|attend|come|pay))\b[^;]*;",
    re.I,
)


def _says_they_are_another(request: str, mentions: list[ArgMention]) -> bool:
    """Whether the request has the signed-in user claim another's name ("I'd like 2 seats on
    SK818. My name is Michele Young", sent from Lisa Butler's session): raters read it as a
    contrived trap, and the refusal could only talk about the user in the third person ("Michele
    Young would need to sign in", rounds 44 and 49). Acting for someone ("update the account of
    Michael Fleming") is a request people make, and stays."""
    names = [re.escape(m.label) for m in mentions if m.by_label and m.label]
    return bool(names) and bool(
        re.search(rf"\b(?:name is|I'm|I am|account is|this is) (?:{'|'.join(names)})\b", request)
    )


# "… resident RES-1 may act only on their own records; this one belongs to resident RES-6"
OWN_ONLY_PARTS = re.compile(
    r"^Permission denied: (?P<role>\w[\w ]*?) (?P<you>\S+) may act only on their own records"
    r"(?:; this one belongs to (?P<owner>\w[\w ]*?) (?P<other>[^\s;]+?))?\.?$",
    re.I,
)


def _not_yours(
    error: str, mentions: list[ArgMention], own_label: str | None = None
) -> tuple[str, str | None] | None:
    """An ownership refusal that says whose record it is and what to do: "You're signed in as
    Mary Lee, not Kenneth Hill, so I don't have permission …; if you are Kenneth Hill, please
    sign in …" (round 23 read "you can act only on your own records", naming no record and no
    way on, as robotic). Another client is named only by the name the user gave, never by an
    id, and their file is never read (``_own_record_read``)."""
    found = OWN_ONLY_PARTS.match(error.strip())
    if not found:
        return None
    role = found["role"].replace("_", " ").lower()
    named = next((m for m in mentions if str(m.value) == found["other"]), None)
    if named is not None and named.by_label and named.label:
        # whether the user acts for them or says they are them (round 28: "If you are Mary
        # Washington, please sign in", to a user who had just asked on Mary's behalf)
        you = f"You're signed in as {own_label or f'a different {role}'}"
        reason = f"{you}, so I don't have permission to act on {named.label}'s records"
        return reason, f"{named.label} would need to sign in to their own account for this."
    record = next((m for m in mentions if m.source == "entity_id" and m is not named), None)
    noun = (record.entity or "").replace("_", " ") if record is not None else ""
    # a number given for one's own that is someone else's is most likely mistyped (round 27:
    # "offers nothing further"); whose it is is not told to whoever typed it (round 28: "tells
    # a stranger that booking BKG-9 belongs to another passenger")
    if record is None or not noun:
        return "That record isn't one of your own, so I don't have permission to act on it", None
    # no question: a one-message task gets no answer to one (round 34); worded a few ways,
    # by the record, so two refusals in a sample do not read word for word alike (round 68);
    # never "the right one" (the judge reads "one" as a figure the state does not hold)
    reason, offer = NOT_YOURS[sum(map(ord, str(record.value))) % len(NOT_YOURS)]
    said = {"noun": noun, "plural": plural_of(noun), "rid": record.value}
    reason = reason.format(**said)
    return reason[:1].upper() + reason[1:], offer.format(**said)


NOT_YOURS = (
    (
        "{noun} {rid} isn't one of your own {plural}, so I don't have permission to act on it",
        "If you meant another {noun}, please check its number and ask again.",
    ),
    (
        "{noun} {rid} is held by someone else, and I don't have permission to act on another "
        "person's {noun}",
        "The number may have been mistyped; if so, please send me the correct number.",
    ),
    (
        "{noun} {rid} is not one of your own {plural}, so I can't act on it without permission",
        "If you have the number of your own {noun} to hand, I'm happy to help with that.",
    ),
)


def _mentions_and_reads(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    state: dict[str, Any],
    manifest: ToolManifest,
    arguments: dict[str, Any],
) -> tuple[list[ArgMention], dict[str, list[SolutionStep]]]:
    """How the request names each argument, and per record the reads that find and show it."""
    mentions: list[ArgMention] = []
    reads: dict[str, list[SolutionStep]] = {}
    for arg in manifest.args:
        if arg.name not in arguments:
            continue
        value = arguments[arg.name]
        if arg.source != "entity_id" or not arg.entity:
            mentions.append(ArgMention(arg.name, value, arg.source))
            continue
        if value == state.get("acting_id") and compiled.session_tool:  # "me": the session
            # says who, so the agent never asks a signed-in member their name (round 46)
            label = _own_label(compiled, state, arg.entity)
            field = compiled.label_fields.get(arg.entity)
            mentions.append(
                ArgMention(
                    arg.name,
                    value,
                    "entity_id",
                    arg.entity,
                    label,
                    field,
                    by_label=True,
                    signed_in=True,
                )
            )
            own = Subject(arg.entity, value, "me")
            reads[str(value)] = _reads(compiled, episode, own)
            continue
        subject = name_subject(compiled, episode, state, arg.entity, value)
        mentions.append(_mention(arg.name, value, arg.entity, subject, compiled))
        reads[str(value)] = [*subject.steps, *_reads(compiled, episode, subject)]
    return mentions, reads


def _as_yours(reason: str, mentions: list[ArgMention]) -> str:
    """ "Member MB-1 has been closed" said to MB-1 is "Your account has been closed"."""
    for mention in mentions:
        if mention.signed_in and mention.entity:
            said = rf"\b{re.escape(words_of(mention.entity))} {re.escape(str(mention.value))}\b"
            reason = re.sub(said, "your account", reason, count=1, flags=re.I)
            reason = re.sub(r"\bthe ([a-z ]+?) of your account\b", r"your \1", reason)
    return reason[:1].upper() + reason[1:] if reason.startswith("your ") else reason


def _other_client(error: str) -> str:
    """The id of the other client an ownership error names ("" for none)."""
    found = OWN_ONLY_PARTS.match(error.strip())
    return (found["other"] or "") if found else ""


def _own_record_read(
    compiled: CompiledEnvironment, state: dict[str, Any], entity: str | None
) -> list[SolutionStep]:
    """The read of the signed-in person's own record, of the kind the other client is: what
    shows the agent that the person the user says they are is not who is signed in (reading
    the other client by name showed their email, phone and id to someone else, round 26)."""
    you = state.get("acting_id")
    reader = reader_of(compiled, entity) if entity and isinstance(you, str) else None
    return [SolutionStep(tool=reader.tool, arguments={reader.args[0].name: you})] if reader else []


def _own_label(
    compiled: CompiledEnvironment, state: dict[str, Any], entity: str | None
) -> str | None:
    """The signed-in person's own name, as their record holds it."""
    records = state.get(compiled.entity_attrs.get(entity or "", ""), {}) or {}
    own = records.get(state.get("acting_id")) if isinstance(records, dict) else None
    label = (own or {}).get(compiled.label_fields.get(entity or "") or "name")
    return label if isinstance(label, str) and label.strip() else None


def _action(compiled: CompiledEnvironment, tool: str) -> str:
    """What the refused tool does, in its description's words ("check a guest out"); with
    none, its verb on "it" when its name is that verb and the record's noun ("cancel_leave" on
    a leave request: "cancel it"), else nothing ("that")."""
    plan = plan_environment(compiled.spec, compiled.seed)
    found = next((t for t in plan.tools if t.name == tool), None)
    if found is None:
        return ""
    clause = described_clause(tool, found.op.doc or "")
    if clause:  # "issue a policy", not "a one-year policy": a figure the refusal is not about
        return re.sub(r"\b(?:\d+|one|two|three|four|five|six|seven|ten|twelve)-[a-z]+ ", "", clause)
    verb, *noun = tool.split("_")
    title = plan.entity(found.op.entity).title.lower().split() if found.op.entity else []
    return f"{verb} it" if len(noun) == 1 and title[:1] == noun else ""


def _by_name(reason: str, mentions: list[ArgMention]) -> str:
    """ "Student Karen Morris (ST-00002) is marked as graduated": a record the user named by
    its name keeps the name beside its id, once."""
    for mention in mentions:
        if mention.by_label and mention.label and mention.label not in reason:
            rid = rf"(?<![\w-]){re.escape(str(mention.value))}(?![\w-])"
            named = f"{mention.label} ({mention.value})"
            reason = re.sub(rid, named.replace("\\", "\\\\"), reason, count=1)
    return reason


def _reads_to_reason(reads: dict[str, list[SolutionStep]], error: str) -> list[SolutionStep]:
    """The reads of the records the error names ("event EV-2 has status 'draft'"): once the
    reason is in sight a person explains it, rather than look up the customer the booking was
    for. An error that names none of them (a limit on an amount asked for) keeps them all."""
    named = [rid for rid in reads if re.search(rf"(?<![\w-]){re.escape(rid)}(?![\w-])", error)]
    steps: list[SolutionStep] = []
    for rid in named or list(reads):
        steps += [s for s in reads[rid] if s not in steps]
    return steps


def spoken_reason(error: str, policy: str | None = None, action: str = "") -> str:
    """The tool's error as the reply says it: what the record shows ("the stock of part PRT-7 is
    only 3"), then the business rule behind it in the system prompt's words (``policy``: "the
    last 3 units of a part stay in reserve"), or without one the rule as the error states it; no
    other customer's record named ("this one belongs to customer C-7" is theirs to keep), words
    not identifiers ("on_sale": "on sale")."""
    reason = _plain_error(error)
    reason = OWN_ONLY.sub(
        "you have no permission for that record; you can act only on your own records", reason
    )
    ruled = bool(policy)
    for form, say in _sayings():
        found = form.match(reason)
        if found:
            ruled = ruled and form is not ROLE_SAID  # who may is the rule itself
            ruled = ruled and _policy_speaks_of(found, policy or "")
            reason = say(found, ruled, action)
            break
    else:
        ruled = False  # a permission, a duplicate: the error says it plainly
    reason = re.sub(r"\b1 (hour|day|minute)s\b", r"1 \1", reason)
    reason = NOW_SAID.sub(lambda m: f", and it is now {_said(m.group(1))}", reason)
    reason = spoken_fields(ISO_VALUE.sub(lambda m: _said(m.group(0)), reason))
    reason = reason[:1].upper() + reason[1:]
    return _with_policy(reason, policy) if ruled and policy else reason


def _policy_speaks_of(found: re.Match[str], policy: str) -> bool:
    """Whether a status rule's policy names a status the error gives: "Unpaid orders can be
    cancelled directly; paid orders need a refund" says nothing of a delivered order (round 27),
    so the reply says the status it needs instead."""
    groups = found.groupdict()
    if groups.get("now") in ("True", "False") and groups.get("field"):  # "customer approved"
        stems = {w[:5] for w in str(groups["field"]).split() if len(w) > 2}  # "… approves …"
        return any(re.search(rf"\b{re.escape(w)}", policy.casefold()) for w in stems)
    statuses = [groups.get(k) for k in ("now", "allowed", "from") if groups.get(k)]
    if not statuses or "field" not in groups and "from" not in groups:
        return True  # a limit, a count, a time: its policy is the rule
    words = {w for s in statuses for w in re.split(r"[\s,]+|\bor\b", str(s)) if len(w) > 2}
    said = policy.casefold()
    return any(re.search(rf"\b{re.escape(w.casefold())}", said) for w in words)


def _plain_error(error: str) -> str:
    """The error as the sayings read it: no other owner named, words not identifiers."""
    return OTHER_OWNER.sub("", error).replace("_", " ").rstrip(".")


def next_step(error: str) -> str | None:
    """What the user can do instead, where the rule says it: the most an amount may be. A
    refusal that only says no leaves the user nowhere to go (a rater's words: "refusals offer
    no next step"). Not a status to wait for (a voided ticket never becomes valid again), nor
    the role that may (raters read "A member of staff can do it for you", said to a passenger
    who asked to delay a flight, as a promise no one would keep)."""
    reason = _plain_error(error)
    found = LIMIT_SAID.match(reason)
    if found and found["bound"] == "at most" and ASKED.fullmatch(found["what"].strip()):
        limit = _limit_of(found)
        what = found["what"].strip().removeprefix("the ")
        if limit is not None and limit >= 0.01:
            unit = "" if what in ("amount", "quantity") or what.startswith("number") else f" {what}"
            amount = say_money(limit) if _sum_named(what) else f"{limit:g}{unit}"
            return f"I can do it for up to {amount} instead, if that helps."
    return None


# what the user asked for, as a limit names it: an offer of less is one they can take
ASKED = re.compile(r"(?:the )?(?:amount|quantity|number of \w+|nights|seats|tickets|days)", re.I)


def _sayings():
    return (
        (LIMIT_SAID, _limit_said),
        (COUNT_LIMIT, _count_said),
        (TRANSITION_SAID, _transition_said),
        (STATUS_SAID, _status_said),
        (ROLE_SAID, _role_said),
        (TIME_SAID, _time_said),
    )


def _with_policy(fact: str, policy: str) -> str:
    """ "…, and the last 3 units of a part stay in reserve"; a rule of two parts ("Only empty
    accounts can be closed; withdraw … first") as a sentence of its own."""
    rule = policy.strip().rstrip(".")
    if ";" in rule or "." in rule or ":" in fact or ", " in fact:
        return f"{fact}. {rule}"
    return f"{fact}, and {rule[:1].lower() + rule[1:]}"


# "…; current time 2025-05-04T08:15:00" and "… (current time …)": the clock, said plainly
NOW_SAID = re.compile(r"\s*[;(]\s*current time (\S+?)\)?(?=$|[.;])")
ISO_VALUE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b")


# the generated rules' messages, as a person explains them
LIMIT_SAID = re.compile(
    r"^(?P<what>.+?) \((?P<given>-?[\d.]+)\) must be (?P<bound>at most|at least|less than|more "
    r"than) (?P<other>[^()]+?)(?: \((?P<limit>-?[\d.]+)\))?$"
)
CONSTANT_LIMIT = re.compile(r"(the limit |)(-?\d+(?:\.\d+)?)")  # the rule's own number
COUNT_LIMIT = re.compile(
    r"^(?P<owner>.+?) already has (?P<count>\d+) (?P<things>.+?); the limit is (?P<limit>\d+)$"
)
# a state move refused: "vehicle VH-3 is 'on_trip' and cannot become … (only from available)"
TRANSITION_SAID = re.compile(
    r"^(?P<who>.+?) is '(?P<now>[^']*)' and cannot become '[^']*' \(only from (?P<from>[^)]+)\)$"
)
# "event EV-5 has status 'draft'; this needs status on sale" (or "not cancelled")
STATUS_SAID = re.compile(
    r"^(?P<who>.+?) has (?P<field>[a-z][a-z ]*?) '(?P<now>[^']*)'; "
    r"this needs (?P=field)(?P<negated> not)? (?P<allowed>.+)$"
)
ROLE_SAID = re.compile(
    r"^permission denied: the signed-in role '(?P<role>[^']+)' may not use (?P<tool>.+?)"
    r"(?:; only (?P<who>.+?) may)?$",
    re.I,
)
# "Too late: this must be done at least 6 hours before the starts at of class CL-4 (…); current
# time …": the notice, the moment it counts from, and now
TIME_SAID = re.compile(
    r"^(?P<label>Too late|Too early): (?P<rule>this .+? (?:before|after) (?P<moment>.+?)) "
    r"\((?P<at>[^()]+)\); current time (?P<now>\S+)$"
)


def _limit_said(found: re.Match[str], ruled: bool = False, action: str = "") -> str:
    """ "amount (188.42) must be at most the fines due of member M-6 (0.15)" → "the amount is
    $188.42, and it can be at most the fines due of member M-6 ($0.15)"; with the rule's own
    words to follow, only the values ("the stock of part PRT-7 is only 3")."""
    what, other = found["what"].strip(), found["other"].strip()
    what = what[:1].lower() + what[1:] if not what[:2].isupper() else what
    money = _sum_named(what)
    given = _amount(found["given"], money)
    the = "" if re.match(r"(?:the|a|an|my|its|their)\b", what) else "the "
    low = found["bound"] in ("at least", "more than")
    is_ = "are" if _it_is(what) == "they are" else "is"
    only = "only " if low and float(found["given"]) > 0 else ""  # "only 3", but plainly 0
    fact = f"{the}{what} {is_} {only}{given}"
    counted = _has_count(what, float(found["given"]), only) if is_ == "are" and not money else None
    fact = counted or fact  # "pay run RUN-4 has no payslips", not "… payslips are 0"
    if found["limit"] is not None:  # "the fines due of member M-6 (0.15)": money by its own name
        named = other if re.match(r"(?:the|a|an|my|its|their)\b", other) else f"the {other}"
        limit = _amount(found["limit"], _sum_named(other))
        same = re.fullmatch(rf"the {re.escape(what)} of (?P<owner>.+)", named)
        if ruled and same:  # a new reading against the one on record (round 42: "The mileage
            # is only 119240, while the mileage of vehicle … is 132932")
            side = "lower" if low else "higher"
            return (
                f"the new {what} of {given} is {side} than the {limit} on record for "
                f"{same['owner']}"
            )
        if ruled:  # "while your fines due are $13.65" (round 49: "your fines due is")
            return f"{fact}, while {named} {_it_is(named).split()[1]} {limit}"
        other = f"{named} ({limit})"
    elif constant := CONSTANT_LIMIT.fullmatch(other):
        other = _amount(constant[2], money)  # "at most $30,000"
    if ruled:  # "the approved amount you asked for is $1,838.58", not one that reads as done
        asked = not counted and " of " not in what and not what.startswith("requested")
        return f"{the}{what} you asked for {is_} {only}{given}" if asked else fact
    if not re.match(r"(?:the|a|an|my|its|their|-?\$?\d)", other):
        other = f"the {other}"  # "at least the days (2)"
    bound = LIMIT_WORDS[found["bound"]]
    if counted:  # "…has no payslips, and it needs at least 1"
        return f"{fact}, and it {'needs' if low else 'can have'} {found['bound']} {other}"
    if is_ == "are":
        return f"{fact}, and they {bound.replace('has to', 'have to')} {other}"
    return f"{fact}, and it {bound} {other}"


# a bound as a person states it, on the same side as the rule ("can be at most $50")
LIMIT_WORDS = {
    "at most": "can be at most",
    "less than": "has to be less than",
    "at least": "has to be at least",
    "more than": "has to be more than",
}


def _has_count(what: str, count: float, only: str) -> str | None:
    """ "the payslips of pay run RUN-4" and 0 → "pay run RUN-4 has no payslips"; 1 → "… has
    only 1 payslip"; None when ``what`` is no count of a record's things."""
    found = re.fullmatch(r"(?:the )?(?P<things>[a-z]+(?: [a-z]+)?) of (?P<owner>.+)", what)
    if found is None or not count.is_integer() or count < 0:
        return None
    things, owner = found["things"], found["owner"]
    if count == 0:
        return f"{owner} has no {things}"
    return f"{owner} has {only}{int(count)} {singular(things) if count == 1 else things}"


def _it_is(words: str) -> str:
    """ "it is", or "they are" after a plural ("the parcels of shipment S-8")."""
    head = re.split(r"\s+of\s+", words.removeprefix("the ").strip())[0].split() or [""]
    if head[-1] in ("left", "remaining", "available", "due", "owed", "used", "free") and head[1:]:
        head = head[:-1]  # "the portions left": the portions
    return "they are" if is_plural(head[-1]) else "it is"


def _transition_said(found: re.Match[str], ruled: bool = False, action: str = "") -> str:
    """ "… is 'on trip' and cannot become 'in maintenance' (only from available)" → "vehicle
    VH-3 is on trip, and that can only be done while it is available"."""
    allowed = re.sub(r",\s*(?:or\s+)?", " or ", found["from"])
    fact = where_it_stands(found["who"], found["now"])
    return fact if ruled else _only_while(fact, allowed, action)


def _status_said(found: re.Match[str], ruled: bool = False, action: str = "") -> str:
    """ "event EV-5 has status 'draft'; this needs status on sale" → "event EV-5 is a draft,
    and that can only be done while it is on sale"; another field by its name ("the
    housekeeping of room R-3 is dirty"), a yes/no one as a quality ("… is not customer
    approved"). With the rule's words to follow, only what the record is."""
    field, who, now = found["field"].strip(), found["who"], found["now"]
    allowed = re.sub(r",\s*", " or ", found["allowed"])  # "booked or in transit"
    if now in ("True", "False"):
        fact = f"{who} {'is' if now == 'True' else 'is not'} {field}"
        needs = "" if (allowed == "True") != bool(found["negated"]) else "not "
        return fact if ruled else f"{fact}, and that needs it to be {needs}{field}"
    if field != "status":
        who = f"the {field} of {who[:1].lower() + who[1:] if not who[:2].isupper() else who}"
    if field != "status":
        fact = f"{who} is {_state(now)}"
    else:
        fact = where_it_stands(who, now)
    if ruled:
        return fact
    if found["negated"]:
        return f"{fact}, and that can't be done while it is {allowed}"
    return _only_while(fact, allowed, action)


def _state(value: str) -> str:
    """A status as said of a record: "voided", "on trip"; a noun with its article ("a draft")."""
    noun = value in status_lists()["nouns"]
    return f"{article_for(value)} {value}" if noun else value


def _only_while(fact: str, allowed: str, action: str = "") -> str:
    """The status a step needs, in one of the ways a person says it, picked by the fact so a
    record's refusal reads the same each time; with the ``action`` the user asked for, in its
    tool's words ("I can only check a guest out while it is checked in"), not "that"."""
    noun = fact.split(" ")[0].lower()  # "Pay run RUN-1 …": the action must be about a pay run
    if not action.endswith(" it") and not re.search(rf"\b{re.escape(noun)}\b", action):
        action = ""  # "vehicle VH-1 is on trip; I can only start a work order while it …"
    if any(re.search(rf"\b{re.escape(a)}\b", action) for a in allowed.split(" or ")):
        return f"{fact}, and I can only {action}"  # "… deny a claim under review"
    ways = load_wording("refusals")["only_while_doing" if action else "only_while"]
    way = ways[zlib.crc32(fact.encode()) % len(ways)]
    return way.format(fact=fact, allowed=allowed, action=action)


def _time_said(found: re.Match[str], ruled: bool = False, action: str = "") -> str:
    """ "Too late: this must be done at least 6 hours before the starts at of class CL-4
    (2025-08-21T14:00:00); current time …" → "the starts at of class CL-4 is … and it is now
    …, so it is too late" (the rule's words follow), or without them "it is too late: this
    must be done at least 6 hours before …": one colon, not one after the decline's."""
    label = found["label"].lower()
    stamped = re.fullmatch(r"the (?P<field>[a-z ]+?) of (?P<who>.+)", found["moment"])
    done = stamped_participle(stamped["field"].replace(" ", "_")) if stamped else None
    if ruled and stamped and done:  # "receipt RC-2 was issued on 30 September 2024, …"
        return f"{stamped['who']} was {done} on {found['at']}, so it is {label} now"
    if ruled:
        return f"{found['moment']} is {found['at']} and it is now {found['now']}, so it is {label}"
    return f"it is {label}: {found['rule']} ({found['at']}); current time {found['now']}"


def _role_said(found: re.Match[str], ruled: bool = False, action: str = "") -> str:
    """ "permission denied: the signed-in role 'sender' may not use record delivery; only
    agent may" → "only an agent has permission to record delivery, and you are signed in as
    a sender" (said as a permission someone has: "you don't have permission" reads as
    denying the reason)."""
    signed_in = f"you are signed in as {_a(found['role'])}"
    what = action if action and action != "that" else found["tool"]  # "reverse a folio charge"
    if not found["who"]:
        return f"{what[:1].upper()}{what[1:]} needs another role's permission, and {signed_in}"
    who = found["who"].strip()
    plural = re.search(r"\b(?:and|or)\b", who) or who in ("staff", "personnel")
    if " " not in who:
        who = _a(who)  # "an agent", "staff"
    elif not plural:
        who = f"the {who}"  # "the front desk"
    has = "have" if plural else "has"  # "only manager and admin have", "only staff have"
    # and who can (round 35: "gives no next step such as asking the front desk")
    return (
        f"only {who} {has} permission to {what}, and {signed_in}; please ask {who} to do it for you"
    )


# the referral a role refusal ends with (``_role_said``)
REFERRAL = re.compile(r"; please ask [^;.]+? to do it for you")


def _staff_could(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    manifest: ToolManifest,
    arguments: dict[str, Any],
) -> bool:
    """Whether a role the tool allows could make the call now: a guest told "please ask the
    front desk" to void a charge past its one-day window was sent to an act the desk could
    not do either (round 44)."""
    state = known_state(episode)
    role_attr, id_attr = compiled.acting_role_attr, compiled.acting_id_attr
    if not role_attr:
        return False
    for role in manifest.roles:
        entity = getattr(compiled.roles.get(role), "entity", "")
        if entity is not None:  # staff act for anyone; a client only as themself
            continue
        as_them = {**state, role_attr: role, **({id_attr: None} if id_attr else {})}
        if _goes_through(episode, manifest.tool, arguments, as_them):
            episode.load_state(state)
            return True
    episode.load_state(state)
    return False


def _a(noun: str) -> str:
    """ "an agent", "a sender"; "staff" as it is."""
    return noun if noun in ("staff", "personnel") else f"{article_for(noun)} {noun}"


def _limit_of(found: re.Match[str]) -> float | None:
    """The limit a ``LIMIT_SAID`` message names: another value's ("… (0.15)") or the rule's."""
    if found["limit"] is not None:
        return float(found["limit"])
    constant = CONSTANT_LIMIT.fullmatch(found["other"].strip())
    return float(constant[2]) if constant else None


def _count_said(found: re.Match[str], ruled: bool = False, action: str = "") -> str:
    """ "work order W-5 already has 1 batches with status running; the limit is 1" → "work
    order W-5 already has 1 batch with status running, and that isn't possible while it has
    any" (the rule refuses at the limit, whether the call adds one or needs none)."""
    count, limit = int(found["count"]), int(found["limit"])
    things = found["things"]
    if count == 1:
        noun, _, rest = things.partition(" with ")
        things = singular(noun) + (f" with {rest}" if rest else "")
    has = f"{found['owner']} already has {count} {things}"
    if ruled:
        return has
    if limit <= 1:  # "when it has none" reads as a claim of 0
        return f"{has}, and that isn't possible while it has any"
    return f"{has}, and that is only possible with fewer than {limit}"


def _sum_named(words: str) -> bool:
    """Whether words such as "the fines due of member M-6" name a sum of money."""
    head = re.split(r"\s+of\s+", words.removeprefix("the ").strip())[0]
    return is_money_field(head.replace(" ", "_"))


def _amount(text: str, money: bool) -> str:
    number = int(text) if re.fullmatch(r"-?\d+", text) else float(text)
    return say_money(number) if money else text


def _said(value: str) -> str:
    return said_moment(value) or said_moment(value[:16]) or value


def _mention(
    name: str, value: Any, entity: str, subject: Subject, compiled: CompiledEnvironment
) -> ArgMention:
    label_field = compiled.label_fields.get(entity)
    by_label = subject.label is not None
    return ArgMention(name, value, "entity_id", entity, subject.label, label_field, by_label)


def _reads_of_others(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    error: str,
    steps: list[SolutionStep],
    results: list[Any],
) -> list[tuple[SolutionStep, Any]]:
    """Reads (and their results) of the other records the reason names ("the retainer balance
    of client C-6") that ``steps``' ``results`` show an id of, so the refusal rests on what
    the agent saw."""
    state, added = known_state(episode), []
    shown = canonical_json(results)  # an id the agent can use
    by_id = {
        str(rid): entity
        for entity, attr in compiled.entity_attrs.items()
        for rid in (state.get(attr) or {})
    }
    for rid in dict.fromkeys(re.findall(r"[A-Z][A-Z0-9]*-\d+", error)):
        reader = reader_of(compiled, by_id[rid]) if rid in by_id else None
        if reader is None or f'"{rid}"' not in shown:
            continue
        read = SolutionStep(tool=reader.tool, arguments={reader.args[0].name: rid})
        if read in steps or any(read == done for done, _ in added):
            continue
        result = run_query(episode, read)
        if result is not None:
            added.append((read, result))
    return added


def owner_trail(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    owner: str,
    steps: list[SolutionStep],
    results: list[Any],
) -> list[tuple[SolutionStep, Any]] | None:
    """The reads that show whose a record is, following the links the reads so far showed
    (a parcel → its shipment → the sender), two at most; None where none shows ``owner``. A
    refusal said "Claim CLM-5 isn't one of your own claims" having seen only the claim's
    policy number (round 44: "rests on information it never saw")."""
    if f'"{owner}"' in canonical_json(results):
        return []
    state = known_state(episode)
    for first in _linked_reads(compiled, episode, state, results, steps):
        if f'"{owner}"' in canonical_json(first[1]):
            return [first]
        for second in _linked_reads(compiled, episode, state, [first[1]], [*steps, first[0]]):
            if f'"{owner}"' in canonical_json(second[1]):
                return [first, second]
    return None


def _linked_reads(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    state: dict[str, Any],
    results: list[Any],
    done: list[SolutionStep],
) -> Iterator[tuple[SolutionStep, Any]]:
    """The reads (and results) of the records ``results`` name, other than the signed-in
    person's and those already read."""
    me = str(state.get("acting_id") or "")
    for rid in dict.fromkeys(ID_SHOWN.findall(canonical_json(results))):
        read = read_by_id(compiled, state, rid)
        if rid.split("-")[0] == me.split("-")[0] or read is None or read in done:
            continue  # not the client's own file, nor another client's (round 25)
        result = run_query(episode, read)
        if result is not None:
            yield read, result


ID_SHOWN = re.compile(r'"([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-\d+)"')  # "PT-1", "RX-PT-00002"


def _reason_shown(error: str, results: list[Any], arguments: dict[str, Any]) -> bool:
    """Every amount the reason quotes (a number with decimals) is one the agent was given or
    shown, and the records a count limit counts ("already has 1 batch with status running")
    are among what it was shown; whole numbers may be the policy's limits, which the system
    message states."""
    seen = canonical_json([results, arguments])
    counted = COUNTED_SAID.search(error)
    if counted and seen.count(f'"{counted["status"]}"') < int(counted["count"]):
        return False  # "it already has a running batch", said of a read that shows none
    return all(
        re.search(rf"(?<![\d.]){re.escape(amount)}(?![\d])", seen)
        for amount in re.findall(r"(?<![\w.])\d+\.\d+", error)
    )


# the records a count limit counts, by their status: "already has 1 batches with status running"
COUNTED_SAID = re.compile(r"already has (?P<count>\d+) .+? with status (?P<status>[\w ]+?)(?:;|$)")


def _reads(compiled: CompiledEnvironment, episode: ToolEpisode, subject: Subject):
    """The get call that shows the record the rule is about, when it works."""
    reader = reader_of(compiled, subject.entity)
    if reader is None:
        return []
    step = SolutionStep(tool=reader.tool, arguments={reader.args[0].name: subject.record_id})
    return [step] if run_query(episode, step) is not None else []
