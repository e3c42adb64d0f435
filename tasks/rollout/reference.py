"""Reference trajectories: a certified solution as a Chat Completions conversation (DESIGN §3.4).

The calls of the solution with the tool results the certification run produced, independent reads
as parallel calls; in conversational mode the user reveals each fact before the agent uses it
(``core/facts.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from envmill.schemas.benchmarks import SYNTHETIC_SOURCE
from envmill.schemas.ids import canonical_json, content_id, sha256_hex
from envmill.schemas.scenario import CertificationReport, ScenarioSpec, SolutionStep
from envmill.schemas.trajectory import TrajectoryRecord
from envmill.tasks.certify.grounding import Sight
from envmill.tasks.certify.reward import score_checks
from envmill.tasks.core.facts import (
    CONFIRM,
    WHICH,
    Fact,
    FactLedger,
    argument_leaves,
    as_text,
    ask_and_answer,
    flatten_facts,
    join_words,
    mentions,
)
from envmill.tasks.core.field_words import field_noun, said_apart, singular
from envmill.tasks.core.instructions import described_clause, past_participle
from envmill.tasks.core.opening import opening_message
from envmill.tasks.core.system_message import system_prompt
from envmill.tasks.judge.reading import ISO_MOMENT, normalize, read
from envmill.tasks.rollout.closing import Done, closing_message
from envmill.tasks.rollout.saying import (
    cost_before_yes,
    records_in,
    say_action,
    say_field_value,
)

REFERENCE_POLICY = "reference"


@dataclass(frozen=True)
class TurnContext:
    """One user message of a multi-turn reference: its text, what the user said before it,
    the number of calls before it (call ids go on), and the results it must show."""

    message: str
    heard: tuple[str, ...] = ()
    first_call: int = 0
    keep: frozenset[str] = frozenset()


NOTE_SHARE = 3  # in 10 tool-call turns, a short note where a person would write one
READ_NOTES = (
    "Let me look that up.",
    "I'll check the records first.",
    "One moment while I find that.",
    "Let me pull up the details.",
)
# a change's note says which change, in the tool's words (``saying.py``); "Next" only after
# an earlier change
CHANGE_NOTES = ("I'll {action} now.", "Next, I'll {action}.")
MAX_PARALLEL = 3  # independent reads sent in one message
# in conversational mode the agent says what it will change and waits for a yes first
CONFIRM_QUESTIONS = (
    "To confirm: I'll {actions}. Shall I go ahead?",
    "Before I {actions}, can you confirm that's what you want?",
    "I'm ready to {actions}. Do you want me to go ahead?",
)
# several changes, one after another: "Before I register a new patient, Jack Hogan (…) and
# book an appointment …, can you confirm" read as one run-on sentence (round 24)
CONFIRM_STEPS = (  # (the question, how the later changes join)
    ("Here's what I'll do: first {first}; then {rest}. Shall I go ahead?", "; then "),
    ("To confirm, I'll {first}, and then {rest}. Is that right?", ", and then "),
)
MAX_CONFIRMED = 3  # changes named in one confirmation
MAX_LISTED = 4  # same-named records the agent lists when it asks which one is meant
PARTICLES = frozenset({"in", "out", "off", "up", "down", "back", "over"})
PREPOSITIONS = frozenset({"to", "from", "for", "on", "by", "with", "into", "at", "as"})


def tool_call_messages(
    first: int, calls: list[tuple[SolutionStep, dict[str, Any]]], note: str | None = None
) -> list[dict[str, Any]]:
    """One assistant message with its tool calls (parallel when more than one), then each
    tool's canonical result."""
    ids = [f"call_{first + offset + 1}" for offset in range(len(calls))]
    tool_calls = [
        {
            "id": call_id,
            "type": "function",
            "function": {
                "name": step.tool,
                "arguments": json.dumps(step.arguments, ensure_ascii=False),
            },
        }
        for call_id, (step, _) in zip(ids, calls, strict=True)
    ]
    results = [
        {"role": "tool", "tool_call_id": call_id, "content": canonical_json(result)}
        for call_id, (_, result) in zip(ids, calls, strict=True)
    ]
    return [{"role": "assistant", "content": note, "tool_calls": tool_calls}, *results]


def reference_messages(
    scenario: ScenarioSpec,
    report: CertificationReport,
    tool_kinds: dict[str, str] | None = None,
    descriptions: dict[str, str] | None = None,
    *,
    context: TurnContext | None = None,
) -> list[dict]:
    """User opening, then per turn (in conversational mode, the questions for the facts it
    needs first) the calls and their results, then the final answer: the scenario's reference
    answer when it expects a reply, else what the solution changed (``closing.py``).

    Reads that need nothing the turn before them shows go out together as parallel calls,
    when ``tool_kinds`` says which tools only read; some turns carry a short note. The agent
    says a change in its tool's ``descriptions`` words. ``context``: this is one user message of a
    multi-turn conversation (``turns.py``), with what was said before it."""
    opening = context.message if context else opening_message(scenario)
    answer = _spoken_answer(scenario, opening)
    messages: list[dict[str, Any]] = [{"role": "user", "content": opening}]
    conversational = scenario.mode == "conversational"
    ledger, sight = _listening(scenario, [*(context.heard if context else ()), opening])
    seed = int(report.scenario_id[:8], 16) if re.match(r"^[0-9a-f]{8}", report.scenario_id) else 0
    turn = seed
    solved = list(zip(scenario.reference_solution, report.step_results, strict=True))
    steps = _without_repeated_reads(
        solved, tool_kinds or {}, context.keep if context else frozenset()
    )
    asked_in = {id(step): n for n, (step, _) in enumerate(steps)}  # the order the user asked in
    steps = _looked_up_first(steps, tool_kinds or {}, scenario.initial_state)
    index, confirmed = 0, False
    records = {  # what each record is called, as the state holds it
        str(key): record
        for state in (scenario.initial_state, report.final_state or {})
        for collection in state.values()
        if isinstance(collection, dict)
        for key, record in collection.items()
        if isinstance(record, dict)
    }

    known = {  # the ids of records that were there before any change
        str(key)
        for table in scenario.initial_state.values()
        if isinstance(table, dict)
        for key in table
    }

    def said(step: SolutionStep) -> str:
        shown = [result for _, result in steps[:index]]
        before = steps[: next(i for i, (s, _) in enumerate(steps) if s is step)]
        made = frozenset(  # ids the changes before it return: "the new farmer"
            str(v) for s, r in before if _changes(s, tool_kinds) for _, v in argument_leaves(r)
        )
        description = (descriptions or {}).get(step.tool, "")
        return say_action(step, description, sight, shown, made, records)

    while index < len(steps):
        earlier = [result for _, result in steps[:index]]
        changed = [(step, result) for step, result in steps[index:] if _changes(step, tool_kinds)]
        changes = [step for step, _ in changed]
        confirming = conversational and not confirmed and changes and changes[0] is steps[index][0]
        # a read moved ahead of a change the user asked for first waits for that change's
        # facts: "reserve a room for a new guest" asks who the guest is before the room
        # (round 59: "Could you tell me the room number?" came first)
        passed = [
            step
            for step in changes
            if conversational and asked_in[id(step)] < asked_in[id(steps[index][0])]
        ]
        needed = [*_plain_facts(ledger, passed), *ledger.needed_for(steps[index][0])]
        for pair in choosing_facts(ledger, steps[index][0], earlier):
            if all(pair[1] is not fact for _, fact in needed):
                needed.append(pair)
        # every change's facts before the yes, asked change by change: one question naming
        # seven fields read as a form to fill in (round 24)
        later = [_plain_facts(ledger, [c]) for c in changes[1:]] if confirming else []
        turn = _ask_each([needed, *later], ledger, sight, messages, turn, steps[index][0], earlier)
        if confirming:
            confirmed = True  # once, before the first change, for every change to come
            messages += [
                {
                    "role": "assistant",
                    "content": _because(scenario.kind, answer)
                    + cost_before_yes(changed, earlier, known, descriptions)
                    + confirm_question(_decided(changes, ledger, earlier), said, turn),
                },
                {"role": "user", "content": CONFIRM},
            ]
        group = _independent_reads(steps, index, ledger, sight, tool_kinds or {})
        action = None if confirmed else said(steps[index][0])  # a yes already named it
        note = _note(
            seed + index,
            steps[index][0],
            tool_kinds or {},
            action,
            first=not any(_changes(step, tool_kinds) for step, _ in steps[:index]),
        )
        messages += tool_call_messages(index + (context.first_call if context else 0), group, note)
        for _, result in group:
            sight.read_value(result)
        index += len(group)
    new = _new_records(scenario, report)
    closing = answer or closing_message(
        scenario.initial_state,
        report.final_state or scenario.initial_state,
        report.scenario_id,
        # no news it never saw; each call with whether it changed the state, where known
        shown=[
            [step.arguments, result] + ([_changes(step, tool_kinds)] if tool_kinds else [])
            for step, result in solved
        ],
        said=" ".join(m["content"] for m in messages if m["role"] == "user"),
        made_by=_made_by(steps, tool_kinds, new, said, descriptions),
        done=_done(steps, tool_kinds, _record_ids(scenario.initial_state), new, said, descriptions),
        order=_call_order(steps, tool_kinds, new),
    )
    quoted = _unsaid_in(ledger, closing)
    if quoted:  # a refusal that names the amount asked for asks for it first
        question, answer = ask_and_answer(quoted, turn, after_results=True)
        messages += [
            {"role": "assistant", "content": question},
            {"role": "user", "content": answer},
        ]
    messages.append({"role": "assistant", "content": closing})
    return messages


def _listening(scenario: ScenarioSpec, heard: list[str]) -> tuple[FactLedger, Sight]:
    """What the agent knows of the user's facts (conversational mode) and what it has seen,
    once it has heard ``heard`` (the user's messages so far, the current one last)."""
    conversational = scenario.mode == "conversational"
    ledger = FactLedger(flatten_facts(scenario.user_facts) if conversational else [])
    sight = Sight()
    for text in heard:
        ledger.hear(text)
        sight.hear(text)
    return ledger, sight


def _made_by(
    steps: list[tuple[SolutionStep, dict[str, Any]]],
    tool_kinds: dict[str, str] | None,
    new: set[str],
    said: Callable[[SolutionStep], str],
    descriptions: dict[str, str] | None,
) -> dict[str, str]:
    """Each ``new`` record → the change whose result returned its id, done, as the agent says
    it at the end ("sold 1 ticket for Modern Dance Festival to Kim Serrano"); none for a change
    that made several (which is which?) or whose description gave no words (its name would)."""
    made: dict[str, str] = {}
    for step, result in steps:
        if not _changes(step, tool_kinds):
            continue
        returned = {str(v) for _, v in argument_leaves(result) if isinstance(v, str)}
        keys = [k for k in returned if k in new and k not in made]
        worded = described_clause(step.tool, (descriptions or {}).get(step.tool, ""))
        if len(keys) == 1 and worded:
            made[keys[0]] = past_participle(said(step))  # one new record, in the tool's words
    return made


def _done(
    steps: list[tuple[SolutionStep, dict[str, Any]]],
    tool_kinds: dict[str, str] | None,
    existing: set[str],
    new: set[str],
    said: Callable[[SolutionStep], str],
    descriptions: dict[str, str] | None,
) -> list[Done]:
    """Each change, done, as the agent says it at the end ("taken Michelle Rivera (CR-0008) off
    shift"), with the records its arguments named: the reply says the action, not the fields
    it moved on them ("its spots left are now 18", round 30). A change that made one new
    record is said by :func:`_made_by`; here it only claims the records it named."""
    done: list[Done] = []
    for step, result in steps:
        if not _changes(step, tool_kinds):
            continue
        named = frozenset(str(v) for _, v in argument_leaves(step.arguments)) & existing
        worded = described_clause(step.tool, (descriptions or {}).get(step.tool, ""))
        made = {str(v) for _, v in argument_leaves(result)} & new
        if named and (made or worded):
            done.append(Done(None if made else past_participle(said(step)), named))
    return done


def _call_order(
    steps: list[tuple[SolutionStep, dict[str, Any]]],
    tool_kinds: dict[str, str] | None,
    new: set[str],
) -> dict[str, int]:
    """Each record's id → the first change that named or made it: the reply says them in that
    order (a lost card blocked before its replacement is issued; round 37's breaker)."""
    order: dict[str, int] = {}
    for index, (step, result) in enumerate(steps):
        if _changes(step, tool_kinds):
            named = [str(v) for _, v in argument_leaves(step.arguments)]
            made = [str(v) for _, v in argument_leaves(result) if str(v) in new]
            for rid in [*named, *made]:
                order.setdefault(rid, index)
    return order


def _new_records(scenario: ScenarioSpec, report: CertificationReport) -> set[str]:
    """The ids of the records the solution made."""
    return _record_ids(report.final_state or {}) - _record_ids(scenario.initial_state)


def _record_ids(state: dict[str, Any]) -> set[str]:
    return {str(k) for records in state.values() if isinstance(records, dict) for k in records}


def _decided(
    changes: list[SolutionStep], ledger: FactLedger, earlier: list[dict[str, Any]]
) -> list[SolutionStep]:
    """The changes the agent can name now: up to the first that waits on which of two
    namesakes the user means (asked once both are found), never a guess at it."""
    decided: list[SolutionStep] = []
    for step in changes:
        waits = any(fact.noun.endswith(WHICH) for _, fact in ledger.needed_for(step))
        if decided and (waits or choosing_facts(ledger, step, earlier)):
            break
        decided.append(step)
    return decided


def _plain_facts(ledger: FactLedger, steps: list[SolutionStep]) -> list[tuple[str, Fact]]:
    """The facts later changes need that the user can say now (not which of two namesakes
    they mean, asked once the agent has found both)."""
    found: list[tuple[str, Fact]] = []
    for step in steps:
        for pair in ledger.needed_for(step):
            plain = not pair[1].noun.endswith(WHICH)
            if plain and all(pair[1] is not fact for _, fact in found):
                found.append(pair)
    return found


def _ask_each(
    groups: list[list[tuple[str, Fact]]],
    ledger: FactLedger,
    sight: Sight,
    messages: list[dict[str, Any]],
    turn: int,
    step: SolutionStep,
    earlier: list[dict[str, Any]],
) -> int:
    """Ask each group of facts the user has not given yet, a question and its answer apiece,
    onto ``messages``; the next turn's number. Groups that fit in one question together are
    asked at once: "plate, owner and make?" then "and the permit type?" read as a form taken a
    field at a time (round 64); seven fields at once read as a form too (round 24)."""
    for group in _fewest_questions(groups, ledger):
        listed = namesakes_listed(group, step, earlier)
        group = _as_new_values(group, step, earlier)
        after_results = messages[-1]["role"] == "tool"
        question, answer = ask_and_answer(group, turn, listed, after_results)
        turn += 1
        ledger.hear(answer, [fact for _, fact in group])
        sight.hear(answer)
        messages += [
            {"role": "assistant", "content": question},
            {"role": "user", "content": answer},
        ]
    return turn


def _fewest_questions(
    groups: list[list[tuple[str, Fact]]], ledger: FactLedger
) -> list[list[tuple[str, Fact]]]:
    """The groups without facts already told or asked in an earlier group (two changes may
    need one fact), each merged into the one before it while the two hold at most
    ``MAX_ASKED`` facts."""
    merged: list[list[tuple[str, Fact]]] = []
    asked = set(ledger.revealed)
    for group in groups:
        group = [pair for pair in group if pair[1].key not in asked]
        group = list({pair[1].key: pair for pair in reversed(group)}.values())[::-1]
        asked |= {fact.key for _, fact in group}
        if not group:
            continue
        if merged and len(merged[-1]) + len(group) <= MAX_ASKED:
            merged[-1] = [*merged[-1], *group]
        else:
            merged.append(group)
    return merged


MAX_ASKED = 5


def _as_new_values(
    group: list[tuple[str, Fact]], step: SolutionStep, earlier: list[dict[str, Any]]
) -> list[tuple[str, Fact]]:
    """A value that replaces one the agent has seen on the record the call names is asked
    as "the new email": "Could you give me the email, please?" did not say old or new
    (round 45). Only a call that sets values says "new": a payment's amount is not the
    pledge's "new amount" (round 49)."""
    if not _sets_values(step.tool):
        return group
    ids = {str(v) for k, v in step.arguments.items() if k.endswith("_id")}
    shown = [
        record
        for record in records_in(earlier)
        if ids & {str(v) for v in record.values() if isinstance(v, str)}
    ]
    return [
        (arg, replace(fact, noun=f"new {fact.noun}"))
        if arg in step.arguments
        and not arg.endswith("_id")
        and any(arg in record and record[arg] != step.arguments[arg] for record in shown)
        and not fact.noun.startswith("new ")
        else (arg, fact)
        for arg, fact in group
    ]


def _sets_values(tool: str) -> bool:
    """A tool named for setting what it is given ("update_email", "set_priority")."""
    return tool.split("_")[0].lower() in SETTING_VERBS


SETTING_VERBS = frozenset(
    {"set", "update", "change", "edit", "rename", "reschedule", "adjust", "correct", "modify"}
)


def _changes(step: SolutionStep, tool_kinds: dict[str, str] | None) -> bool:
    """A call that changes something: known only where ``tool_kinds`` says which tools read."""
    return tool_kinds is not None and tool_kinds.get(step.tool, "query") != "query"


def to_the_speaker(answer: str, opening: str) -> str:
    """A reply to someone who said who they are talks to them: "This is Chen Design Studio; …"
    → "Your retainer balance is $437.07, …", never "client Chen Design Studio's retainer
    balance went up" said to the client (round 28)."""
    found = SPEAKER.search(opening)
    if found is None:
        return answer
    name = re.escape(found.group(1).rstrip("."))
    yours = re.sub(rf"{CLIENT_NOUN}\b{name}\.?'s\b", "your", answer)
    return re.sub(r"(^|[.!?]\s+)your\b", lambda m: f"{m.group(1)}Your", yours)


SPEAKER = re.compile(  # a name ends at a sentence's end, but for "Inc."
    r"\b(?i:I'm|I am|my name is|this is)\s+"
    r"([A-Z][\w&'-]*(?: (?:&|[A-Z][\w&'-]*)){0,4}(?: (?:Inc|Corp|Ltd|Co)\.)?)"
)
# the noun a reply may put before a client's name: "client Baker & Sons Bakery's retainer"
CLIENT_NOUN = (
    r"(?:\b(?:client|customer|member|patient|guest|passenger|donor|tenant|student|resident|"
    r"sender|policyholder|borrower|subscriber|employee|farmer) )?"
)


def _spoken_answer(scenario: ScenarioSpec, opening: str) -> str | None:
    """The scenario's reference answer, said to the speaker where they said who they are; a
    refusal's speaker may claim to be someone they are not signed in as, so not to them."""
    answer = scenario.reference_answer
    if not answer or (scenario.kind or "").startswith("refusal"):
        return answer
    return to_the_speaker(answer, opening)


def _because(kind: str | None, answer: str | None) -> str:
    """What a conditional's confirmation says first: the number it read and the branch that
    picks ("Priya Patel's retainer balance is $913.31, below the $1,000 target. I'm ready to
    add $86.69 …"); a yes to a bare "add the deposit" left the user blind (round 28). The
    reference answer's own opening, up to its ", so …"; nothing for another kind."""
    reading = (answer or "").partition(", so ")
    conditional = (kind or "").startswith("conditional")
    return f"{reading[0]}. " if conditional and reading[1] else ""


def confirm_question(
    changes: list[SolutionStep], said: Callable[[SolutionStep], str], turn: int
) -> str:
    """ "To confirm: I'll cancel order O-12 and change Ann Lee's email address to a@x.org.
    Shall I go ahead?": each change as ``said`` puts it (``saying.say_action``)."""
    actions = [said(step) for step in changes[:MAX_CONFIRMED]]
    if len(actions) > 1:
        first, *rest = actions
        form, joiner = CONFIRM_STEPS[turn % len(CONFIRM_STEPS)]
        return form.format(first=first, rest=joiner.join(rest))
    return CONFIRM_QUESTIONS[turn % len(CONFIRM_QUESTIONS)].format(actions=actions[0])


def _without_repeated_reads(
    steps: list[tuple[SolutionStep, dict[str, Any]]],
    tool_kinds: dict[str, str],
    keep: frozenset[str] = frozenset(),
) -> list[tuple[SolutionStep, dict[str, Any]]]:
    """The solution without a read whose every record an earlier result already showed as it
    is (``get_course`` after ``search_courses`` returned that course whole): a person does
    not look again, and a model copying the reference learns to waste a call. A read whose
    record changed since is kept: it shows the new values; so is one whose result (canonical
    JSON) is in ``keep``, the results the scenario expects the agent to obtain."""
    kept: list[tuple[SolutionStep, dict[str, Any]]] = []
    seen: set[str] = set()
    for step, result in steps:
        records = {canonical_json(r) for r in _records_of(result)}
        repeated = tool_kinds.get(step.tool) == "query" and records and records <= seen
        if repeated and canonical_json(result) not in keep:
            continue
        seen |= records
        kept.append((step, result))
    return kept


def _looked_up_first(
    steps: list[tuple[SolutionStep, dict[str, Any]]],
    tool_kinds: dict[str, str],
    initial: dict[str, Any],
) -> list[tuple[SolutionStep, dict[str, Any]]]:
    """Each read moved before the changes just ahead of it where that shows the same: a person
    finds the customer before cancelling their order, not after. A read moves over a change
    only when every record it showed is as it was at the start (the change did not touch it),
    the change's own record is of another kind, and the read needs nothing the change showed."""
    unchanged = {canonical_json(r) for r in _state_records(initial)}
    ordered = list(steps)
    for index in range(1, len(ordered)):
        read = ordered[index]
        records = _records_of(read[1])
        if tool_kinds.get(read[0].tool) != "query" or not records:
            continue
        if any(canonical_json(r) not in unchanged for r in records):
            continue
        place = index
        while place > 0 and _may_pass(read, ordered[place - 1], tool_kinds):
            place -= 1
        ordered.insert(place, ordered.pop(index))
    return ordered


def _may_pass(
    read: tuple[SolutionStep, dict[str, Any]],
    change: tuple[SolutionStep, dict[str, Any]],
    tool_kinds: dict[str, str],
) -> bool:
    """``read`` may go before ``change``: it is a change, of a record of another kind (other
    fields), and shows nothing the read's arguments use."""
    if tool_kinds.get(change[0].tool, "query") == "query":
        return False
    shapes = {frozenset(r) for r in _records_of(read[1])}
    if any(frozenset(r) in shapes for r in _records_of(change[1])):
        return False
    shown = {str(v) for _, v in argument_leaves(change[1]) if v is not None}
    shown |= {str(v) for _, v in argument_leaves(change[0].arguments) if v is not None}
    return not any(str(v) in shown for _, v in argument_leaves(read[0].arguments))


def _state_records(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Every record of a state's collections (``{"orders": {"O-1": {...}}}``)."""
    return [
        record
        for collection in state.values()
        if isinstance(collection, dict)
        for record in collection.values()
        if isinstance(record, dict)
    ]


def _records_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The records a tool result shows: its data, one record or a list of them."""
    data = result.get("data") if isinstance(result, dict) else None
    return [data] if isinstance(data, dict) else _listed_records(result)


def _independent_reads(
    steps: list[tuple[SolutionStep, dict[str, Any]]],
    start: int,
    ledger: FactLedger,
    sight: Sight,
    tool_kinds: dict[str, str],
) -> list[tuple[SolutionStep, dict[str, Any]]]:
    """The step at ``start``, and the reads after it that need no answer and nothing its
    result shows (so an agent could send them at once)."""
    group = [steps[start]]
    if tool_kinds.get(steps[start][0].tool) != "query":
        return group
    earlier = [result for _, result in steps[:start]]
    for step, result in steps[start + 1 : start + MAX_PARALLEL]:
        asks = ledger.needed_for(step) or choosing_facts(ledger, step, earlier)
        independent = not asks and not sight.unseen(step.arguments)
        if tool_kinds.get(step.tool) != "query" or not independent:
            break
        group.append((step, result))
    return group


def choosing_facts(
    ledger: FactLedger, step: SolutionStep, earlier: list[dict[str, Any]]
) -> list[tuple[str, Fact]]:
    """Facts the agent needs to choose the record ``step`` names among several an earlier
    result listed ("the one hired on 1 Aug 2019"): asked before the step, as DESIGN §3.4 says."""
    ids = {str(v) for _, v in argument_leaves(step.arguments) if isinstance(v, str)}
    found: list[tuple[str, Fact]] = []
    for result in earlier:
        records = _listed_records(result)
        chosen = [r for r in records if ids & {str(v) for v in r.values()}]
        if len(records) < 2 or len(chosen) != 1:
            continue
        for fact in ledger.facts:
            fresh = fact.key not in ledger.revealed and all(fact is not f for _, f in found)
            if (
                fresh
                and isinstance(fact.value, str)
                and _telling_field(fact.value, chosen[0], records) is not None
            ):
                found.append(("", fact))
    return found


def _listed_records(result: dict[str, Any]) -> list[dict[str, Any]]:
    data = result.get("data") if isinstance(result, dict) else None
    if isinstance(data, dict):
        data = list(data.values())
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []


def _telling_field(text: str, chosen: dict[str, Any], records: list[dict[str, Any]]) -> str | None:
    """The field by which ``text`` tells ``chosen`` from the other listed records: it states
    the chosen one's value, which no other record has."""
    said, reading = normalize(text), read(text)
    # the field the text names first: "whose job title is Head of Marketing" tells apart by
    # job title, though "marketing" is also one's department (round 28)
    named = sorted(chosen.items(), key=lambda item: normalize(field_noun(item[0])) not in said)
    for field, value in named:
        if any(other is not chosen and other.get(field) == value for other in records):
            continue  # a value they share tells nothing apart
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int | float):
            if any(abs(float(value) - n) < 0.005 for n in reading.numbers):
                return field
        elif isinstance(value, str) and ISO_MOMENT.match(value):
            if value[:10] in reading.dates:
                return field
        elif isinstance(value, str) and len(value) >= 3:
            if re.search(rf"(?<!\w){re.escape(normalize(value))}(?!\w)", said):
                return field
    return None


def namesakes_listed(
    needed: list[tuple[str, Fact]], step: SolutionStep, earlier: list[dict[str, Any]]
) -> dict[str, str]:
    """Per which-one fact the agent is about to ask, the same-named records the last listing
    showed, as the agent lists them by what the user's answer tells them apart by: "one whose
    email is a@x.org and one whose email is b@y.org"."""
    ids = {str(v) for _, v in argument_leaves(step.arguments) if isinstance(v, str)}
    listed: dict[str, str] = {}
    for _, fact in needed:
        if not fact.noun.endswith(WHICH) or not isinstance(fact.value, str):
            continue
        for result in reversed(earlier):
            records = _listed_records(result)
            chosen = [r for r in records if ids & {str(v) for v in r.values()}]
            field = _telling_field(fact.value, chosen[0], records) if len(chosen) == 1 else None
            if len(records) >= 2 and field is not None:
                listed[fact.key] = _listing(_named_like(fact.value, records), field)
                break
    return listed


def _named_like(which: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records that bear the name a which-one fact starts with ("Ann Lee (whose …)")."""
    name = which.split(" (")[0].strip().casefold()
    named = [r for r in records if any(str(v).casefold() == name for v in r.values())]
    return named if len(named) >= 2 else records


def _listing(records: list[dict[str, Any]], field: str) -> str:
    """ "one whose email is a@x.org and one whose email is b@y.org", "one on 10 August 2025 at
    08:00 and one on 19 August 2025 at 16:45"."""
    ones = []
    for record in records[:MAX_LISTED]:
        value = record.get(field)
        said = say_field_value(field, value)
        ones.append(
            f"one {said_apart(field, value, said) or f'whose {field_noun(field)} is {said}'}"
        )
    return join_words(ones)


def _unsaid_in(ledger: FactLedger, reply: str) -> list[tuple[str, Fact]]:
    """Facts the user has not given that the final reply quotes: the reply may use only what
    the conversation showed, so the reference asks for them before it answers."""
    said = reply.casefold()
    quoted = []
    for fact in ledger.facts:
        text = as_text(fact.value)
        if fact.key in ledger.revealed or text is None or ledger.is_said(fact.value):
            continue
        whole = rf"(?<![\d.,]){text}(?![\d]|\.\d)"
        number = len(text) >= 2 and text.isdigit() and re.search(whole, said)
        written = any(mentions(said, form) for form in _grouped(fact.value))  # "$3,392.11"
        if (len(text) >= 3 and mentions(said, text.casefold())) or number or written:
            quoted.append((fact.key, fact))  # "the hours (56) can't be more than 15"
    return quoted


def _grouped(value: Any) -> list[str]:
    """A number as a reply writes it, in cents and with thousands grouped ("22.50", "3,392.11",
    "1,500"): a refusal quoted an amount the user never gave that way (rounds 31 and 77:
    "The amount is $22.50" to a user who had only said "I need to pay my fine")."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return []
    if isinstance(value, float):
        return [f"{value:,.2f}", f"{value:,}"]
    return [f"{value:,}"] if abs(value) >= 1000 else []


def _note(
    pick: int, step: SolutionStep, tool_kinds: dict[str, str], action: str | None, *, first: bool
) -> str | None:
    """A short note for some tool-call turns: what a read is for, or which change comes
    (``action``; none where the user just confirmed it)."""
    if int(sha256_hex(str(pick))[:4], 16) % 10 >= NOTE_SHARE:
        return None
    if tool_kinds.get(step.tool) != "query":
        # never "…: checking account now" (round 38), nor "Next, …" before the first change
        detailed = action is not None and (":" in action or action.endswith(")"))
        if action is None or (detailed and first):
            return None
        notes = CHANGE_NOTES[1:] if detailed else CHANGE_NOTES[:1] if first else CHANGE_NOTES
        note = notes[pick % len(notes)].format(action=action)
        return note.replace(" now now.", " now.")  # "end a membership now", said once
    if SESSION_READ.search(step.tool):
        return None  # who is signed in is the agent's own business (round 28)
    if (pick // 7) % 2:  # half say what the call is for
        return _read_note(step.tool) or READ_NOTES[pick % len(READ_NOTES)]
    return READ_NOTES[pick % len(READ_NOTES)]


# a read of who is signed in: "Let me look that up." before it read as a non sequitur (round
# 25), "Let me check who is signed in." as narration (round 28): it goes without a note
SESSION_READ = re.compile(r"session|signed_in|whoami|current_user")


def _read_note(tool: str) -> str | None:
    """A note read from a query's name: "Let me look up the member loans." None for a name of
    one word or one that names no object."""
    searched = bool(re.search(r"_by_\w+$", tool)) or tool.startswith(("find_", "search_"))
    tool = re.sub(r"_by_\w+$", "", tool)  # "the lots", not "the lots by name"
    verb, _, rest = tool.replace("_", " ").partition(" ")
    if searched and rest:  # a search for one named record: "the client", not "the clients"
        words = rest.split(" ")
        rest = " ".join([*words[:-1], singular(words[-1])])
    first = rest.split(" ")[0]
    if first in PARTICLES:
        rest = rest[len(first) :].strip()
    if not rest or rest.split(" ")[0] in PREPOSITIONS:
        return None
    return f"Let me look up the {rest.removeprefix('the ')}."


def reference_trajectory(
    scenario: ScenarioSpec,
    report: CertificationReport,
    *,
    introduction: str = "",
    business_rules: list[str] | None = None,
    tool_kinds: dict[str, str] | None = None,
    descriptions: dict[str, str] | None = None,
    parameters: dict[str, dict[str, str]] | None = None,
) -> TrajectoryRecord:
    """The certified solution as a conversation; raises ValueError for an uncertified scenario.
    ``tool_kinds`` (tool name -> "query" or "state_change") lets independent reads go out as
    parallel calls; ``descriptions`` (tool name -> description) give the words for a change;
    ``parameters`` (tool -> parameter -> description) name what a multi-turn scenario's user
    left out (``turns.py``)."""
    if report.status != "certified":
        raise ValueError(f"scenario {report.scenario_id} is not certified ({report.rejected_gate})")
    system = system_prompt(introduction, business_rules or [], scenario.initial_state)
    if scenario.turns or scenario.source != SYNTHETIC_SOURCE:
        from envmill.tasks.rollout.turns import multi_turn_messages  # it builds on this module

        conversation = multi_turn_messages(scenario, report, tool_kinds, descriptions, parameters)
    else:
        conversation = reference_messages(scenario, report, tool_kinds, descriptions)
    messages = [{"role": "system", "content": system}, *conversation]
    score = score_checks(report.check_results)
    return TrajectoryRecord(
        trajectory_id=content_id(
            {"scenario_id": report.scenario_id, "policy": REFERENCE_POLICY, "messages": messages}
        ),
        scenario_id=report.scenario_id,
        env_id=scenario.env_id,
        policy=REFERENCE_POLICY,
        messages=messages,
        check_results=report.check_results,
        reward=score.reward,
        success=score.success,
        steps=sum(len(m.get("tool_calls") or []) for m in conversation),
        termination="finished",
    )
