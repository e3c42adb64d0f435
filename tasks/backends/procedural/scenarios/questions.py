"""Answer scenarios (``kind: answer``): questions whose value the agent must find and report.

Three shapes, each run live in the scenario's episode so the value is what the tools return:

- a field of one record ("What is the due date of loan LN-0004?"), read with its get tool;
- a count or a total over a parent's records, maybe filtered ("How many active cards does
  account ACC-0002 have?"), from a list, count or sum tool;
- a change, then a field it changed ("… Once that's done, tell me the new balance of …").

The reference solution is the query calls (after the change steps, for the third); the reference
answer a sentence stating the value; the expected answer the typed value with its rivals, which
envmill's judge reads the reply against; the checks the guard that nothing else changed (plus the
change's own checks for the third shape).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace
from typing import Any

from envmill.schemas.answers import AnswerType, ExpectedAnswer
from envmill.schemas.scenario import SolutionStep
from envmill.tasks.backends.procedural.checks.answers import ValueKind, expected_answer
from envmill.tasks.backends.procedural.checks.derive import words_of
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment
from envmill.tasks.backends.procedural.phrasing.task import OWNED
from envmill.tasks.backends.procedural.phrasing.word_lists import PEOPLE, load_wording, words
from envmill.tasks.backends.procedural.phrasing.words import (
    humanize_value,
    is_money,
    plural_of,
    tidy_text,
)
from envmill.tasks.backends.procedural.plan import plan_environment
from envmill.tasks.backends.procedural.scenarios.subjects import (
    Subject,
    is_finished,
    name_subject,
    reader_of,
    run_query,
)
from envmill.tasks.backends.procedural.scenarios.usual import is_usual
from envmill.tasks.backends.procedural.spec.rules import CountBelow
from envmill.tasks.certify.generated import TOUCH_FIELDS
from envmill.tasks.certify.grounding import Sight
from envmill.tasks.core.facts import is_plural
from envmill.tasks.core.field_words import (
    field_noun,
    is_money_field,
    singular,
    stamped_participle,
)
from envmill.tasks.core.status_words import where_it_stands
from envmill.tasks.rollout.saying import described, what_it_is
from envmill.tasks.sandbox import ToolEpisode, known_state

ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
MAX_TEXT = 40
SKIPPED_FIELDS = frozenset({"id", "email", "phone", "address", "notes", "description"})


@dataclass
class Question:
    """A question's text, the queries that answer it, the answer and what it must state."""

    text: str
    steps: list[SolutionStep]
    answer: str
    expected: ExpectedAnswer
    vague: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    subject: str = ""
    said: str = ""  # the value as the answer writes it ("$2.81"): a report that states it is enough
    field: str = ""  # the field asked for, in words ("balance")
    shape: str = ""  # what is asked: status, money, when, count or field ("" after a change)
    about: str = ""  # whose the record is: a person's, a named thing's, or someone's record

    def in_first_person(self) -> Question:
        """The question as the record's owner asks it ("my account …", answered "your …")."""
        if not self.subject:
            return self
        bare = self.subject.removeprefix("the ")  # "my Endurance Ride class", never "my the"
        asked = self.text.replace(self.subject, f"my {bare}")
        told = re.sub(  # at a sentence's start, "Your"; never "your Your Coco" (a name)
            rf"(^|[.!?]\s+)?{re.escape(self.subject)}|{re.escape(_capital(self.subject))}",
            lambda m: f"{m.group(1) or ''}{'Your' if m.group(1) is not None else 'your'} {bare}",
            self.answer,
        )
        # "The price of your booking BKG-1 is …", not "Your booking BKG-1's price is …"
        told = re.sub(
            rf"^[Yy]our {re.escape(bare)}'s ([a-z -]+?) (is|are) ",
            rf"The \1 of your {bare} \2 ",
            told,
        )
        return replace(self, text=asked, answer=told[:1].upper() + told[1:], subject="")

    def with_a_reason(self, rng: random.Random, client: str | None) -> Question:
        """The question with why it is asked, said after it ("… I have a resident on the line
        asking about it."): a bare lookup with no purpose read as a quiz (round 59). Staff
        ask for ``client``; without one, the asker asks about their own record."""
        if not self.shape:
            return self
        if client is None:
            options = _reasons("reasons_own", self.shape)
        elif self.about == "record":
            options = words("answers", "reasons_for_client")
        else:
            options = _reasons(f"reasons_about_{self.about}", self.shape)
        client = client or ""  # "A member is asking.", in the business's word for its clients
        reason = rng.choice(options).format(client=client, client_cap=_capital(client))
        vague = f"{self.vague} {reason}" if self.vague else ""
        return replace(self, text=f"{self.text} {reason}", vague=vague)


def _reasons(key: str, shape: str) -> list[str]:
    """The reasons in ``answers.yaml`` under ``key`` for a question of ``shape``."""
    lines = (load_wording("answers").get(key) or {}).get(shape)
    if not isinstance(lines, list) or not lines:
        raise ValueError(f"wording 'answers': no list '{key}.{shape}'")
    return lines


def value_kind(value: Any) -> ValueKind | None:
    """How an answer states ``value``; None for values a question should not ask for."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return "number"
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        return None
    if ISO_DATE.match(value):
        return "date"
    return "datetime" if ISO_DATETIME.match(value) else "text"


STATUS_LESS_OFTEN = 0.5  # how often a record with other fields worth asking is not asked its status
THOUSANDS = 10_000  # a count this big is written with a separator; a year (2013) is not


def say(name: str, value: Any) -> str:
    """The value as the reference answer writes it ("$1,250.50", "3 Mar 2025 at 16:00")."""
    if isinstance(value, float) and not is_money(name, value):
        return f"{value:.15g}" if abs(value) < 1e6 else f"{value:.2f}"  # 22323.97, not 22324
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= THOUSANDS:
        if not is_money(name, value):
            return f"{value:,}"  # "54,099 miles on the clock", not 54099 (round 65)
    text = str(value) if not isinstance(value, float) else f"{value:.2f}"
    return humanize_value(text.replace("_", " "), dollars=is_money(name, value))


def ask_field(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    rng: random.Random,
    *,
    entity: str | None = None,
    record_id: Any = None,
    fields: list[str] | None = None,
    template: str = "field_questions",
    exempt: list[Any] = (),  # type: ignore[assignment]
    allowed: set[str] | None = None,
) -> Question | None:
    """A question about one field of one record (chosen by ``rng`` unless given); ``exempt``
    values (the amounts a request names, the old value) may be stated beside the answer."""
    state = known_state(episode)
    entity = entity or _pick_entity(compiled, state, rng, allowed)
    reader = reader_of(compiled, entity) if entity else None
    records = state.get(compiled.entity_attrs.get(entity or "", ""), {})
    if reader is None or not entity or not isinstance(records, dict) or not records:
        return None  # (no entity, no reader)
    ids = sorted((r for r in records if allowed is None or r in allowed), key=str)
    if record_id is None and not ids:
        return None
    usual = [
        r for r in ids if is_usual(compiled.spec, compiled.entity_attrs, entity, records[r], state)
    ]
    rid = record_id if record_id is not None else rng.choice(usual or ids)
    record = records.get(rid) or {}
    names = [n for n in fields or sorted(record) if _askable(n, record.get(n), compiled, entity)]
    now = str(state.get("current_time") or "")
    names = names if fields is not None else _worth_asking(names, record, now, rng, rid in usual)
    if not names:
        return None
    name = rng.choice(names)
    subject = name_subject(compiled, episode, state, entity, rid)
    read = SolutionStep(tool=reader.tool, arguments={reader.args[0].name: rid})
    data = run_query(episode, read)
    if not isinstance(data, dict) or data.get(name) != record.get(name):
        return None
    value, kind = record[name], value_kind(record[name])
    others = [r.get(name) for k, r in sorted(records.items()) if k != rid and isinstance(r, dict)]
    others += enum_values(compiled, entity, name)  # listing every status must not pass
    kind_of_answer = "status_answers" if name == "status" else "field_answers"
    if template in COUNTED and _counted(name, value):  # "how many nights …"
        template, kind_of_answer = COUNTED[template], "count_field_answers"
    verb = _moment_verb(name, value, now) if template == "field_questions" else None
    verb = verb and _not_its_own_noun(verb, entity)
    if verb:  # "When was booking BKG-2 made?", not "the booking time of booking BKG-2"
        template, kind_of_answer = "moment_questions", "moment_answers"
    template, kind_of_answer = _asked_plainly(template, kind_of_answer, name, value, now)
    noun = own_field_noun(name, entity)
    unit = re.fullmatch(r"(?P<noun>[a-z ]+) in (?P<unit>[a-zA-Z]{1,5})", noun)
    if unit and kind == "number":  # "the distance of trip TR-1 is 301 km"
        noun, record = unit["noun"], {**record, "unit": unit["unit"]}
    chosen = _question(rng, template, noun)
    person = words_of(entity) in PEOPLE
    text = _fill(
        rng, "", template=chosen, field=noun, subject=subject.text, verb=verb or "",
        sum=_sum_of(noun, subject.text, person),
    )  # fmt: skip
    vague = _fill(
        rng, "", template=chosen, field=noun, subject=vague_subject(entity, allowed),
        verb=verb or "", sum=_sum_of(noun, vague_subject(entity, allowed), person),
    )  # fmt: skip
    answer = _fill(
        rng,
        kind_of_answer,
        sum=_sum_of(noun, subject.text, person),
        verb=verb or "",
        field=noun,
        subject=subject.text,
        value=_with_unit(say(name, value), value, name, record),
        field_n=singular(field_noun(name)) if value == 1 else field_noun(name),
        are="is" if value == 1 else "are",
    )
    besides = _besides(compiled, state, entity, rid, name, answer, verb, subject.text)
    if name == "status" and not besides:  # "Your leave request LR-4 (annual, from 14 Apr
        # 2025) has been withdrawn", not the bare status (rounds 74, 75: "says what, of what?")
        answer = described(answer, str(rid), what_it_is(record, _seen(data)))
    answer += besides
    expected = expected_answer(
        value,
        kind or "text",
        answer_type=answer_type(compiled, entity, name, value, kind),
        competing=[o for o in others if value_kind(o) == kind],
        exempt=[e for e in exempt if value_kind(e) == kind],
    )
    facts = subject_facts(subject)
    shown = subject.steps and _shows(run_query(episode, subject.steps[-1]), rid, name, value)
    steps = subject.steps if shown else [*subject.steps, read]  # no second read of one record
    said = say(name, value)
    return Question(
        text, steps, answer, expected, vague, facts, subject.text, said, field_noun(name),
        shape="" if template in AFTER_A_CHANGE else _shape(kind_of_answer),
        about=_about(subject),
    )  # fmt: skip


def _seen(data: Any) -> Sight:
    sight = Sight()
    sight.read_value(data)
    return sight


AFTER_A_CHANGE = ("after_change", "count_after_change")  # the change is the reason to ask
# what a question's answers template says it asks ("start_answers" → "when")
SHAPES = {
    "status": "status",
    "money": "money",
    "count_field": "count",
    "start": "when",
    "begins": "when",
    "end": "when",
    "duration": "when",
}


def _shape(answers: str) -> str:
    """What a question asks, from its answers' template ("start_answers" → "when"); a moment
    already past is a plain field ("when was it recorded? I'm planning my week around it"
    read as nonsense to a breaker)."""
    if answers.endswith("_past") or answers.startswith(("moment", "began")):
        return "field"
    return SHAPES.get(answers.rsplit("_", 1)[0], "field")


def _about(subject: Subject) -> str:
    """Whose record a question is about: a person ("Kevin Sanders"), a named thing of the
    business ("the Paint Booth machine"), or someone's record known by its id."""
    if words_of(subject.entity) in PEOPLE:
        return "person"
    return "thing" if subject.label is not None else "record"


def _besides(
    compiled: CompiledEnvironment,
    state: dict[str, Any],
    entity: str,
    rid: Any,
    name: str,
    answer: str,
    verb: str | None,
    subject: str,
) -> str:
    """What the answer adds: where the record stands when that changes what the value is worth
    ("Note that it has been cancelled."), or, to a status, what comes next ("It's due back on
    10 February 2025.": round 62, "'shows as active' leaves out the due date")."""
    record = state.get(compiled.entity_attrs.get(entity, ""), {}).get(rid) or {}
    status = record.get("status")
    if name == "status":  # not "withdrawn. It starts on 14 Jan": a finished record has no next
        finished = is_finished(compiled, entity, state, rid)
        return "" if finished else _coming_up(record, str(state.get("current_time") or ""), entity)
    noted = isinstance(status, str) and words_of(status) != verb  # not "was returned …; returned"
    noted = noted and words_of(str(status)) not in answer  # not "ended on …; it has ended"
    if noted and _worth_noting(compiled, entity, state, rid):
        return f" Note that {_where_it_stands(subject, entity, str(status))}."
    return ""


def _coming_up(record: dict[str, Any], now: str, entity: str) -> str:
    """The next moment a record's own dates hold, said after its status: a due date, an end,
    a start; nothing for a person or when no date is still to come."""
    if words_of(entity) in PEOPLE or not now:
        return ""
    for name, value in sorted(record.items()):
        if not isinstance(value, str) or value_kind(value) not in ("date", "datetime"):
            continue
        if value[:16] <= now[: len(value[:16])]:
            continue
        said = say(name, value)
        if DUE.search(name):
            return f" It's due on {said}."
        if START.match(name):
            return f" It starts on {said}."
        if END.match(name):
            return f" It ends on {said}."
    return ""


DUE = re.compile(r"(?:^|_)due(?:_|$)")


def _asked_plainly(template: str, answers: str, name: str, value: Any, now: str) -> tuple[str, str]:
    """ "When is my appointment AP-7?", "How long is my booking DB-2?": what a person asks, not
    "the start time of appointment AP-7" or "how many hours my booking has" (round 38)."""
    timed = template == "field_questions" and value_kind(value) in ("datetime", "date")
    past = str(value) < now[: len(str(value))]
    if timed and START.match(name) and value_kind(value) == "date":  # a policy, a lease
        return (
            ("began_questions", "began_answers") if past else ("begins_questions", "begins_answers")
        )
    if timed and START.match(name):
        return (
            ("start_questions_past", "start_answers_past")
            if past
            else ("start_questions", "start_answers")
        )
    if timed and END.match(name):
        return (
            ("end_questions_past", "end_answers_past") if past else ("end_questions", "end_answers")
        )
    if template == "count_field_questions" and field_noun(name) in DURATIONS:
        return "duration_questions", "duration_answers"
    if template == "field_questions" and is_money_field(name) and answers == "field_answers":
        return "money_questions", "money_answers"  # "How much is the balance on …?"
    if template == "field_questions" and name == "stock":  # "has 1 in stock", not "'s stock is 1"
        return "stock_questions", "stock_answers"
    return template, answers


START = re.compile(
    r"(?:starts?_(?:at|time|on)|start_(?:date|time)|scheduled_(?:at|for)|valid_from|begins_on)$"
)
END = re.compile(r"(?:ends?_(?:at|time|on)|end_(?:date|time)|ended_(?:at|on)|valid_until)$")
DURATIONS = frozenset({"hours", "nights", "days", "weeks", "months", "minutes"})


def _with_unit(said: str, value: Any, name: str, record: dict[str, Any]) -> str:
    """A quantity in the unit its record keeps it in: "686.44 kg", not "686.44" (round 35)."""
    unit = record.get("unit")
    plain = isinstance(value, int | float) and not isinstance(value, bool)
    if plain and isinstance(unit, str) and UNIT.fullmatch(unit) and not is_money_field(name):
        return f"{said} {unit}"
    return said


UNIT = re.compile(r"[a-z]{1,5}")  # "kg", "m", "l", "pcs", "hours"


def _moment_verb(name: str, value: Any, now: str | None = None) -> str | None:
    """The participle a time field is named by ("booked_at" → "made"), for a moment it holds
    that is past by ``now`` (when given); None for another field ("starts_at" says no past
    event) or a time still to come ("scheduled" of a visit next week)."""
    verb = stamped_participle(name)
    if verb is None or verb in NOT_DONE_TO or value_kind(value) not in ("date", "datetime"):
        return None
    if now is not None and str(value) > now[: len(str(value))]:
        return None
    return MOMENT_VERBS.get(verb, verb)


def _not_its_own_noun(verb: str, entity: str) -> str:
    """ "When was my credit purchase CP-7 made?", never "… purchased?" (round 39)."""
    return "made" if verb[:5] == words_of(entity).split()[-1][:5] else verb


MOMENT_VERBS = {"booked": "made", "enrolled": "made"}  # "when was booking BKG-2 made?"
# what happens, rather than is done to a record: never "when was the event occurred?"
NOT_DONE_TO = frozenset(
    """occurred happened arrived departed expired joined ended started finished updated
    modified changed lasted stayed scheduled expected planned due speed need embed feed seed
    bed red shed""".split()
)


def own_field_noun(name: str, entity: str) -> str:
    """A field in words without its record's noun: "the type of permit PM-4", never "the permit
    type of permit PM-4" (round 28)."""
    noun, own = field_noun(name), words_of(entity)
    rest = noun[len(own) + 1 :] if noun.startswith(f"{own} ") else ""
    return rest if rest and rest in OWN_FIELD_NOUNS else noun


OWN_FIELD_NOUNS = frozenset("type kind number name status date time category plan tier".split())


# how a question about a field that counts is asked ("how many nights …")
COUNTED = {"field_questions": "count_field_questions", "after_change": "count_after_change"}


def _counted(name: str, value: Any) -> bool:
    """A field that counts something ("nights", "seats"): asked "how many", not "the nights of"."""
    whole = isinstance(value, int) and not isinstance(value, bool)
    return whole and is_plural(field_noun(name)) and not is_money(name, value)


def _shows(data: Any, rid: Any, name: str, value: Any) -> bool:
    """Whether a lookup's data already holds the record ``rid`` with ``name`` equal to ``value``
    (a search by name returns whole records: reading the record again adds nothing)."""
    items = data if isinstance(data, list) else [data]
    return any(
        isinstance(item, dict) and rid in item.values() and name in item and item[name] == value
        for item in items
    )


def answer_type(
    compiled: CompiledEnvironment, entity: str, name: str, value: Any, kind: ValueKind | None
) -> AnswerType | None:
    """The typed answer's type where the field says more than its value: money, an enum, an
    id of another record."""
    if kind == "number":
        return "money" if is_money(name, value) else None
    if kind == "text" and enum_values(compiled, entity, name):
        return "enum"
    if kind == "text" and name.endswith("_id"):
        return "id"
    return None


def ask_aggregate(
    compiled: CompiledEnvironment,
    episode: ToolEpisode,
    rng: random.Random,
    allowed: set[str] | None = None,
) -> Question | None:
    """A count or total over one parent's records, maybe filtered by one enum value; with
    ``allowed``, only over a parent among those ids (a signed-in customer's own)."""
    ops = {tool.name: tool.op for tool in plan_environment(compiled.spec, compiled.seed).tools}
    tools = [t for t in compiled.tools if t.kind == "query" and _aggregates(ops.get(t.tool))]
    state = known_state(episode)
    for tool in rng.sample(tools, len(tools)):
        op, parent = ops[tool.tool], tool.args[0]
        if op.kind != "sum" and (
            _holds_several(compiled, tool.entity) or _is_log(compiled, tool.entity)
        ):
            continue
        records = state.get(compiled.entity_attrs.get(parent.entity or "", ""), {})
        owners = sorted((r for r in records if allowed is None or r in allowed), key=str)
        if not owners:
            continue
        rid = rng.choice(owners)
        args, *filter_words = _filter(tool, rng, {parent.name: rid})
        if op.kind != "sum" and _at_most_one(compiled, tool.entity, parent.name, args):
            continue
        value = _aggregate_value(
            op.kind, run_query(episode, SolutionStep(tool=tool.tool, arguments=args))
        )
        if value is None or value == 0:
            continue
        unfiltered = _aggregate_value(
            op.kind, run_query(episode, SolutionStep(tool=tool.tool, arguments={parent.name: rid}))
        )
        subject = name_subject(compiled, episode, state, parent.entity or "", rid)
        reader = reader_of(compiled, parent.entity or "")
        if allowed is not None and not subject.steps and reader is not None:
            # a customer's own account is read before its records are counted: whose it is
            # shows in the record, not in the list (round 40: "lists transactions without
            # checking that the account is theirs")
            own = SolutionStep(tool=reader.tool, arguments={reader.args[0].name: rid})
            subject = replace(subject, steps=[own])
        return _aggregate_question(
            rng, op, tool.entity, subject, args, tool.tool, value, unfiltered, filter_words, allowed
        )
    return None


# a status that changes what the value is worth to the asker: "the price is $14.00" of a dish
# that is sold out (round 24: "the reply leaves out that the item is sold_out")
UNAVAILABLE = re.compile(
    r"^(?:sold_out|out_of_stock|unavailable|suspended|frozen|blocked|on_hold|inactive|"
    r"discontinued|expired|overdue|closed|full|waitlisted|lapsed|delinquent)$"
)


def _where_it_stands(subject: str, entity: str, status: str) -> str:
    """ "it has been cancelled" of a booking whose price was asked, the price being not what
    matters most; a person is not "it" (round 39: "There are 219 visits on Michael Vazquez.
    Note that it has been cancelled"), nor "their record" when they are unavailable (round 50),
    and a record, not a person, "has been cancelled" (a breaker)."""
    person = words_of(entity) in PEOPLE
    said = where_it_stands(subject if person else "it", words_of(status))
    if person and " has been " in said:
        return where_it_stands(f"{subject}'s record", words_of(status))
    return said


def _worth_noting(
    compiled: CompiledEnvironment, entity: str, state: dict[str, Any], rid: Any
) -> bool:
    status = ((state.get(compiled.entity_attrs.get(entity, ""), {}) or {}).get(rid) or {}).get(
        "status"
    )
    if isinstance(status, str) and UNAVAILABLE.match(status):
        return True
    return is_finished(compiled, entity, state, rid)


def _holds_several(compiled: CompiledEnvironment, entity: str | None) -> bool:
    """A record that stands for several things ("ticket" with a quantity: an order of 2
    tickets): "how many used tickets" would count orders (a rater's worst item: "I count 1
    used ticket" of one order of 2)."""
    spec = compiled.spec.entities.get(entity or "")
    named = (entity or "").split("_")[-1] in UNIT_RECORDS  # an order of stock counts as orders
    return named and spec is not None and any(n in ("quantity", "qty") for n in spec.fields)


def _is_log(compiled: CompiledEnvironment, entity: str | None) -> bool:
    """A history of another record's statuses (tracking events, in the order of the statuses
    they record): "how many tracking events does a shipment have" is asked of the API, not by
    a sender (round 35)."""
    spec = compiled.spec.entities.get(entity or "")
    return spec is not None and any(i.kind == "order" for i in spec.invariants)


def _at_most_one(compiled: CompiledEnvironment, entity: str, via: str, args: dict) -> bool:
    """A count a rule keeps at one or none ("A job has at most one invoice that is not void",
    a machine runs one batch at a time): "how many issued invoices does WO-4 have" is no
    question a person asks (round 34)."""
    status = args.get("status")
    link = getattr(compiled.spec.entities.get(entity), "fields", {}).get(via)
    if status is not None and status in getattr(link, "claims", {}):
        return True  # a running batch claims its machine: "one batch at a time"
    return status is not None and any(
        isinstance(pre, CountBelow)
        and pre.limit == 1
        and (pre.entity, pre.via) == (entity, via)
        and status in (pre.where.get("status") or [status])
        for op in compiled.spec.operations()
        for pre in op.preconditions
    )


# records named after the unit their quantity counts: a "ticket" of quantity 2 is 2 tickets
UNIT_RECORDS = frozenset({"ticket", "seat", "pass", "voucher"})


def _aggregate_question(
    rng, op, entity, subject: Subject, args, tool, value, unfiltered, filter_words, allowed=None
) -> Question:
    before, after = filter_words
    things = before + plural_of(words_of(entity))
    shown = say(op.field or "count", value) if op.kind == "sum" else str(value)
    key = "total" if op.kind == "sum" else "count"
    fill = {
        "field": field_noun(op.field or ""),
        "things": things,
        "filter": after,
        "owner": subject.text,
        "value": shown,
        "are": "is" if value == 1 else "are",
    }
    rivals = [unfiltered] if unfiltered not in (None, value) else []
    if op.kind != "sum":
        rivals += [value - 1, value + 1]
    money = op.kind == "sum" and is_money(op.field or "", value)
    expected = expected_answer(
        value,
        "number",
        answer_type="count" if op.kind != "sum" else ("money" if money else "number"),
        competing=rivals,
    )
    step = SolutionStep(tool=tool, arguments=args)
    template = rng.choice(words("answers", f"{key}_questions"))
    text = _fill(rng, f"{key}_questions", template=template, **fill)
    vague = _fill(
        rng, "", template=template, **{**fill, "owner": vague_subject(subject.entity, allowed)}
    )
    one = op.kind != "sum" and value == 1  # "I count 1 transfer-in transaction"
    answer = _fill(
        rng, f"{key}_answers", **{**fill, "things": before + words_of(entity)} if one else fill
    )
    # "has 3 current enrolments", never "currently has 3 current enrolments" (round 60)
    answer = answer.replace(f"currently has {shown} current", f"has {shown} current")
    facts = subject_facts(subject)
    return Question(
        text, [*subject.steps, step], answer, expected, vague, facts, subject.text,
        shape="money" if money else "count", about=_about(subject),
    )  # fmt: skip


def enum_values(compiled: CompiledEnvironment, entity: str, name: str) -> list[str]:
    """The values an enum field may take (none for other fields): when every other record
    shares the asked one, the state alone offers no competitor to an answer that lists them all."""
    spec = compiled.spec.entities.get(entity)
    field = spec.fields.get(name) if spec is not None else None
    return list(field.values) if field is not None else []


def vague_subject(entity: str, own: set[str] | None = None) -> str:
    """How a conversational opening names a record before the user is asked which one: "my
    booking", as people say it ("one of my bookings" read as a template, round 37); a signed-in
    customer's (``own``: their records' ids) is always theirs ("how many delivered parcels a
    shipment has" of their own shipment, round 60)."""
    noun = words_of(entity)
    return f"my {noun}" if entity in OWNED or own is not None else f"a {noun}"


def subject_facts(subject: Subject) -> dict[str, Any]:
    """What the simulated user holds about a record: its name when it is found by name, else
    its id (the keys read as :func:`collect_user_facts` writes them)."""
    noun = words_of(subject.entity)
    if subject.label is not None:
        return {subject.label_key or f"{noun} name": subject.label}
    return {f"{noun} id": subject.record_id}


def _aggregates(op: Any) -> bool:
    return op is not None and op.kind in ("list", "count", "sum") and not op.group_by and op.parent


def _filter(tool, rng: random.Random, args: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
    """Maybe one enum filter: the arguments and the words that say it, before and after the
    noun ("active loans", "charges whose category is minibar")."""
    enums = [a for a in tool.args[1:] if a.source == "enum" and a.values]
    statuses = [a for a in enums if a.name == "status"]
    if statuses:  # "how many bookings" is unclear when some are cancelled: say which
        enums = statuses
    elif not enums or rng.random() < 0.4:
        return args, "", ""
    arg = rng.choice(enums)
    value = rng.choice(arg.values)
    said = words_of(str(value))
    same_stem = said[:4] == words_of(tool.entity)[:4]
    if arg.name == "status" and re.match(r"(?:on|in|at|under|out) ", said):  # "lots on sale"
        return {**args, arg.name: value}, "", f" {said}"
    if arg.name == "status" and not same_stem:
        return {**args, arg.name: value}, f"{said} ", ""  # "active loans"
    if arg.name == "status" and " " not in said:  # "current enrolments", not "enrolled …"
        return {**args, arg.name: value}, "current ", ""
    if SORTED_BY.search(arg.name):  # "transfer-in transactions", not "… whose kind is transfer in"
        return {**args, arg.name: value}, f"{said.replace(' ', '-')} ", ""
    return {**args, arg.name: value}, "", f" whose {field_noun(arg.name)} is {said}"


SORTED_BY = re.compile(r"(?:^|_)(?:kind|type|category)$")


def _aggregate_value(kind: str, data: Any) -> float | int | None:
    if kind == "list":
        return len(data) if isinstance(data, list) else None
    if isinstance(data, dict):  # {"total": …} or {"count": …}
        numbers = [
            v for v in data.values() if isinstance(v, int | float) and not isinstance(v, bool)
        ]
        data = numbers[0] if len(numbers) == 1 else None
    if isinstance(data, bool) or not isinstance(data, int | float):
        return None
    return round(data, 2) if isinstance(data, float) else data


def _pick_entity(
    compiled: CompiledEnvironment, state: dict[str, Any], rng: random.Random, allowed=None
):
    usable = [
        e
        for e, attr in sorted(compiled.entity_attrs.items())
        if state.get(attr)
        and reader_of(compiled, e)
        and (allowed is None or any(r in allowed for r in state[attr]))
    ]
    return rng.choice(usable) if usable else None


def _sum_of(noun: str, subject: str, person: bool) -> str:
    """A sum as people name it: "Kevin Sanders's balance due", "the postage on my shipment"
    (round 58: "the balance due of Kevin Sanders" read as a field query)."""
    if person:
        return f"{subject}'s {noun}"
    if noun == "amount":  # "How much is invoice INV-8?", not "the amount of invoice INV-8"
        return subject
    on = noun.split()[-1] in {"balance", "due", "postage", "tip", "charges", "owed", "arrears"}
    return f"the {noun} {'on' if on else 'of'} {subject}"  # "the price of my booking"


def _has_a_motive(name: str, value: Any, now: str) -> bool:
    """Whether a person would want this field now: where a record stands (its status, a sum,
    what is left of something), or what is coming (a due date, a start); not a moment already
    past ("when was my enrolment made?", a courier's own pick-up time), a fixture ("the
    capacity of the garage") nor a tally ("how many pauses a membership has"), all rated
    contrived (rounds 53 to 55)."""
    if name in FIXTURES:
        return False
    if isinstance(value, str) and ISO_DATE.match(value):  # "due today" is still to come
        return bool(now) and value >= now[:10]
    if isinstance(value, str) and ISO_DATETIME.match(value):
        return bool(now) and value[:16] > now[:16]
    if name == "status" or is_money_field(name):
        return True
    return isinstance(value, int | float) and bool(STANDING.search(name))


# a number that says where something stands: seats left, free spaces, the stock, the credits
STANDING = re.compile(r"available|free|left|remaining|stock|credits|balance|due|owed|points")
NO_VALUE = frozenset({"none", "n/a", "unknown", "null"})
# what a place or a thing is built with, not what anyone asks a desk about
FIXTURES = frozenset({"capacity", "seats", "rooms", "floors", "spaces"})


def _question(rng: random.Random, template: str, noun: str) -> str:
    """One of ``template``'s questions; of a sum that is the record itself, "How much is my
    pledge PLG-5?", never "Could you tell me my pledge PLG-5?" (round 71)."""
    chosen = rng.choice(words("answers", template))  # drawn either way: a seed draws as before
    if template == "money_questions" and noun == "amount":
        return words("answers", template)[0]
    return chosen


def _worth_asking(
    names: list[str], record: dict, now: str, rng: random.Random, usual: bool = True
) -> list[str]:
    """The fields someone has a reason to ask, where the record has them; its status only
    half the time beside two others (a status alone answers thinly: rounds 66 to 70); of a
    record that is over (a used ticket, a refunded purchase), only where it stands (round 72:
    "the total of a used ticket, to plan my spending")."""
    if not usual or not names:
        return [n for n in names if n == "status"]
    names = [n for n in names if _has_a_motive(n, record.get(n), now)] or names
    if len(names) > 2 and rng.random() < STATUS_LESS_OFTEN:
        names = [n for n in names if n != "status"]
    return names


def _askable(name: str, value: Any, compiled: CompiledEnvironment, entity: str) -> bool:
    """A field worth asking: a number, a date, a status or a short name; never an id (its own or
    a linked record's: a member asks for the book's title, not its book id)."""
    if name in SKIPPED_FIELDS or name == compiled.label_fields.get(entity):
        return False
    if name == "status" and words_of(entity) in PEOPLE:  # "the status of Joshua Chen" is no
        return False  # question a person asks (round 70); their balance or joining date is
    if name.endswith("_id") or name in TOUCH_FIELDS:  # an id (a user asks for names); a stamp
        return False
    if isinstance(value, str) and len(value.strip()) < 2:  # zone "A": no reply could be judged
        return False  # by it (a failed episode in a breaker's run)
    if isinstance(value, str) and value.strip().casefold() in NO_VALUE:
        return False  # "The insurance of Kevin Sanders is none." (a default run)
    return value_kind(value) is not None


def _fill(rng: random.Random, key: str, template: str = "", **values: str) -> str:
    template = template or rng.choice(words("answers", key))
    subject = values.get("subject", "")
    if subject.startswith(("my ", "the ")):  # not "The Our Town Revival event's price"
        template = template.replace("{subject_cap}'s {field}", "The {field} of {subject}")
    values["subject_cap"] = _capital(subject)
    values["owner_cap"] = _capital(values.get("owner", ""))
    values["sum_cap"] = _capital(values.get("sum", ""))
    # "deduction D-8 is marked as ended", not "is ended": the status with the verb it takes
    values["stands_cap"] = _capital(
        where_it_stands(values.get("subject", ""), values.get("value", ""))
    )
    if " has been " in values["stands_cap"]:  # not "… has been cancelled at the moment"
        template = template.replace(" at the moment.", ".")
    values.setdefault("is", "are" if is_plural(values.get("field", "")) else "is")
    return tidy_text(template.format(**values))


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
