"""Task text and user facts for a sampled chain, in the user's voice, with no tool names.

Each state-change step is phrased from one of its manifest templates (placeholders ``{arg}`` or
``{arg.label}``), filled with the values the chain used; an argument the template leaves out is
appended, because a check may verify it and the agent can only do what it was told. A
conversational scenario keeps the details out of the opening request and hands them to the
simulated user as ``user_facts``.

The clauses are joined like a person writes: a clause after "Then," or "; then" starts in lower
case unless it starts with a name or an id, each sentence ends with one mark, dates read as
"9 Feb 2025 at 16:00" (the reference solution keeps the ISO value), amounts of money carry "$".
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Literal

from envmill.tasks.backends.procedural.checks.derive import words_of
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment
from envmill.tasks.backends.procedural.phrasing.lookup_words import say
from envmill.tasks.backends.procedural.phrasing.word_lists import PEOPLE, words
from envmill.tasks.backends.procedural.phrasing.words import (
    NOT_NOUNS,
    TYPE_SYNONYMS,
    article_for,
    collect_user_facts,
    described_template,
    format_value,
    has_determiner,
    humanize_value,
    is_money,
    lower_first,
    mention_entity,
    order_phrases,
    plural_of,
    split_end,
    tidy_text,
    vague_template,
    value_free_template,
)
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ChainStep, Condition
from envmill.tasks.backends.procedural.scenarios.lookups import shown
from envmill.tasks.core.facts import ASKED_AS, PURPOSES, a_or_an, as_purpose, is_plural
from envmill.tasks.core.field_words import COUNT_NAMES, field_noun, singular
from envmill.tasks.core.instructions import described_clause

# tool verbs a person says otherwise ("intake a lot" is "take in a lot")
SPOKEN_VERBS = {"intake": "take in", "onboard": "sign up"}
# the other side of a staff verb, as the client says it ("I'd like to lend a book", round 47)
SELF_VERBS = {"lend": "borrow", "loan": "borrow", "issue": "get"}
# records that are people: "their retainer", not "its"
PLACEHOLDER = re.compile(r"\{(\w+)(\.label)?\}")
OPENERS = tuple(words("requests", "openers"))
CLOSERS = tuple(words("requests", "closers"))
OWNED_OPENINGS = tuple(words("requests", "owned_openings"))
GENERAL_OPENINGS = tuple(words("requests", "general_openings"))
# entities a customer calls "my …"; with others (a doctor, a flight) the opening stays neutral
OWNED = frozenset(words("requests", "owned_entities"))
MIDDLE_CONNECTORS = tuple(words("requests", "middle_connectors"))
LAST_CONNECTORS = tuple(words("requests", "last_connectors"))
CREATE_LEADS = tuple(words("requests", "create_leads"))
PARTICLES = frozenset({"up", "in", "out", "off", "on"})
# "enroll in a course" is what the user does: "I'd like to enroll in …", never "please enroll in"
SUBJECT_DOES = frozenset({"in", "on"})
ADJECTIVES = frozenset({"new", "extra", "another"})  # tool names that start with no verb


Voice = Literal["staff", "self"] | None  # who is signed in: staff relay, a member speaks
# a template that tells a story around its request ("the car is sold, so please cancel …")
BESIDES_THE_ACT = re.compile(r"[;:]|[.!?]\s+\S|,\s+(?:so|please)\b")
WITH_A_REASON = re.compile(r";|[.!?]\s+\S|,\s+(?:so|I|they)\b|\bbecause\b|\bsince\b")
FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|[Mm]y|[Mm]e|[Mm]ine)\b")


def voice_of(compiled: CompiledEnvironment, state: dict[str, Any]) -> Voice:
    """ "staff" when the signed-in role acts for anyone, "self" when it acts as its own record,
    None when the environment has no roles."""
    role = compiled.roles.get(str(state.get(compiled.acting_role_attr or "")))
    if role is None:
        return None
    return "staff" if role.entity is None else "self"


@dataclass(frozen=True)
class Clause:
    """One step in words: its text without the final mark, that mark, and whether it starts
    with a name or id that keeps its capital after a connector."""

    body: str
    end: str = "."
    keep_case: bool = False

    def lead(self) -> str:
        """The clause after a connector ("Then, could you …")."""
        return self.body if self.keep_case else lower_first(self.body)

    def sentence(self) -> str:
        return self.body[:1].upper() + self.body[1:] + self.end

    @property
    def simple(self) -> bool:
        """A plain statement that can be chained with "; then" or ", and then"."""
        return self.end == "." and not re.search(r"[;:]|[.?!](\s|$)", self.body)


def phrase_task(
    steps: list[ChainStep],
    rng: random.Random,
    mode: str,
    tool_names: list[str],
    voice: Voice = None,
    *,
    thanks: bool = True,
) -> tuple[str, dict[str, Any]]:
    """The task text and user facts for ``mode`` (``non_conversational`` or ``conversational``),
    in the ``voice`` of whoever is signed in (``voice_of``); no closing thanks without
    ``thanks`` (a question follows)."""
    detailed = [phrase_step(step, rng, voice=voice) for step in steps]
    request = once_introduced(scrub_tool_names(compose_clauses(detailed, rng), tool_names))
    if mode != "conversational":
        opener, closer = rng.choice(OPENERS), rng.choice(CLOSERS)
        if not request[:1].isupper():  # "09DE380 has reached end of life" needs a greeting first
            opener = opener or OPENERS[0]
        closer = closer if thanks else ""
        return tidy_text(" ".join(part for part in (opener, request, closer) if part)), {}
    named = name_the_record(steps, voice)
    wanted = made_for_the_next(named)
    goals = [phrase_step(step, rng, vague=True, voice=voice) for step in wanted]
    goals = distinguish_repeats(wanted, goals)
    opening = choose_opening(wanted, rng, voice)
    task = scrub_tool_names(tidy_text(f"{opening} {compose_clauses(goals, rng)}"), tool_names)
    return task, _not_said_yet(named, collect_user_facts(steps))  # said when asked


def name_the_record(steps: list[ChainStep], voice: Voice = None) -> list[ChainStep]:
    """The steps with the first record the user knows by name named in the goal ("I'd like
    some tickets for Rock Showcase", "Ronnie Bowen is leaving; please offboard them"): a goal
    that held back even what it is about read as staged (round 53: "Please book some
    tickets."). Staff name a record they know by number by it (``_by_number``). The details
    still wait for the agent's questions."""
    named = _by_label(steps)
    return _by_number(steps) if named is steps and voice != "self" else named


def _by_number(steps: list[ChainStep]) -> list[ChainStep]:
    """The first change's own record named by its number, as staff say it ("Please void folio
    charge CHG-000001"): staff who hold the number back until asked read as coy (round 66:
    "Please remove a payslip from its run.", "Please release a work order.")."""
    step = steps[0] if steps else None
    if step is None or step.condition is not None or any(m.described for m in step.mentions):
        return steps
    for mention in step.mentions:
        own = mention.source == "entity_id" and mention.entity == step.manifest.entity
        if own and not (mention.made or mention.signed_in or mention.by_label):
            said = replace(mention, described=f"{mention_entity(mention)} {mention.value}")
            mentions = [said if m is mention else m for m in step.mentions]
            return [replace(step, mentions=mentions), *steps[1:]]
    return steps


def _by_label(steps: list[ChainStep]) -> list[ChainStep]:
    """The steps with the first record the user knows by name named (``name_the_record``)."""
    for index, step in enumerate(steps):
        if any(m.described and m.source == "entity_id" for m in step.mentions):
            continue  # named already ("the flight from ATL"): a second name would drop it
        for mention in step.mentions:
            if mention.source != "entity_id" or not mention.by_label or not mention.label:
                continue
            if mention.signed_in or mention.described:
                continue  # the namesake's telling detail (``hint``) still waits to be asked
            label = str(mention.label)
            if " " not in label and re.search(r"\d", label):  # "flight SK447", not "SK447"
                label = f"{mention_entity(mention)} {label}"
            named = replace(mention, described=label)
            mentions = [named if m is mention else m for m in step.mentions]
            condition = step.condition
            if condition is not None and condition.record.name == mention.name:
                condition = replace(condition, record=named)  # "Lakeside Medical's retainer"
            elif condition is not None:
                continue
            named_step = replace(step, mentions=mentions, condition=condition)
            return [*steps[:index], named_step, *steps[index + 1 :]]
    return steps


def made_for_the_next(steps: list[ChainStep]) -> list[ChainStep]:
    """The goals without a record made only for the next step, which says it as "a new …":
    "I need to reserve a room for a new guest", not "register a guest, and then I need to
    reserve a room for them" (round 59: a list of steps where a person states one goal). The
    agent works out that the guest is registered first; the user still gives each detail."""
    if len(steps) != 2 or not is_create(steps[0]):
        return steps
    made, used = steps
    for mention in used.mentions:
        if mention.entity == made.manifest.entity and mention.made:
            new = replace(mention, described=f"a new {mention_entity(mention)}")
            return [replace(used, mentions=[new if m is mention else m for m in used.mentions])]
    return steps


def _not_said_yet(steps: list[ChainStep], facts: dict[str, Any]) -> dict[str, Any]:
    """The facts less a count of one a create's goal already says ("reserve a seat", "buy a
    ticket"): an agent that then asks "how many?" has not listened (round 53)."""
    said = set()
    for step in steps:
        counted = _one_counted(step, _goal_words(step)[2]) if is_create(step) else None
        said |= {field_noun(counted.name)} if counted and step.condition is None else set()
    return {key: value for key, value in facts.items() if key not in said}


def phrase_step(
    step: ChainStep,
    rng: random.Random,
    *,
    vague: bool = False,
    voice: Voice = None,
    plain: bool = False,
) -> Clause:
    """One clause for a step: a template filled with values (or, when vague, with references)."""
    if step.condition is not None:
        return conditional_clause(step, step.condition, rng, vague=vague, voice=voice)
    if vague and is_create(step):
        return create_goal(step, rng, voice)
    template = _choose_template(step, rng, vague, voice, plain)
    if vague and _names_a_value(template, step.mentions):  # the user says the values when asked
        freed = value_free_template(template, step.mentions)
        # "Please call me on {phone} from now on" must not become "Please call me from now on"
        template = freed if _still_says_what_changes(template, freed, step) else ""
    if vague and (not template or _names_a_value(template, step.mentions)):
        return value_free_goal(step, rng)
    body, end = split_end(fill_template(template, step.mentions, vague))
    body = SELF_WHICH.sub(r"\1 \2 (my \3 \4 \5)", body)
    body = OWNED_AFTER_NOTE.sub(r"the \2 of \1", body)
    body = NAMED_AFTER_NOTE.sub(r"the \2 of \1", body)
    used = _names_in(template)
    extras = [m for m in step.mentions if m.name not in used]
    if extras and not vague:  # "… is now 559-412-1611; I'm Ann" without its "I'm Ann": no ";,"
        body = body.rstrip(" ;,") + ", " + " and ".join(_extra_text(m) for m in extras)
    keep_case = not vague and bool(re.match(r"\s*\{", template))
    return Clause(body, end, keep_case)


def once_introduced(text: str) -> str:
    """The text with a repeated self-introduction ("I'm Darryl Mueller.") said once."""
    seen: set[str] = set()
    kept = []
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if re.match(r"(?:I'm|I am|My name is)\s", sentence):
            if sentence in seen:
                continue
            seen.add(sentence)
        kept.append(sentence)
    return " ".join(kept)


# "I'm Ann Lee (the one whose phone is 555)": a person says "I'm Ann Lee (my phone is 555)"
SELF_WHICH = re.compile(  # the value may hold parentheses: "(801)517-9086"
    r"\b(I'm|My name is) ([^()]+?) \((?:the one )?whose ([^()]+?) (is|are) "
    r"((?:[^()]|\([^()]*\))+)\)"
)
# "resident Zachary Adams (whose email is z@x.org)'s phone": the possessive after a note
OWNED_AFTER_NOTE = re.compile(
    r"(?<!please )(\b(?!(?:for|to|from|of|with|and|the|an?|in|on|at|by|is|me|my|about|over|"
    r"into|against|after|before|under|towards)\b)[a-z]+ "
    r"(?:[A-Z][\w.'-]* )+\([^()]*\))'s ((?:\w+ ){0,2}?\w+)(?= to\b| from\b|[.,;?!]|$)"
)
# "about April Woods (whose phone is 555)'s last lots": a name with no noun before it (round 33
# read "complained the last lots of about April Woods")
NAMED_AFTER_NOTE = re.compile(
    r"((?:[A-Z][\w.'-]* )+\([^()]*\))'s ((?:\w+ ){0,2}?\w+)(?= to\b| from\b|[.,;?!]|$)"
)
# a story that says which way a number went ("our rates went up", "drop it to …")
GOES_UP = re.compile(
    r"\b(?:went up|gone up|raised?|raising|increas\w*|higher|more expensive)\b", re.I
)
GOES_DOWN = re.compile(
    r"\b(?:went down|gone down|drop\w*|lower\w*|reduc\w*|cut|cheaper|discount\w*|decreas\w*)\b",
    re.I,
)
# a record described by its owner's name ("Ann Lee's pending order")
NAMED_OWNER = re.compile(r"[A-Z][\w.-]*(?: [A-Z][\w.-]*)*'s\s")
# a record described by the person who serves it ("the open course taught by David Rodriguez")
SERVED = re.compile(r"\b(?:taught by|handled by|assigned to|with) [A-Z]")


def _choose_template(
    step: ChainStep, rng: random.Random, vague: bool, voice: Voice, plain: bool = False
) -> str:
    """A manifest phrase naming only arguments the call used, without a greeting (the opener
    greets), in the signed-in person's voice where one fits, one bare clause when ``plain`` (a
    branch of a condition: "…, renew it; otherwise, …", not "my permit ran out; renew it"), in
    its vague form for a conversational goal."""
    names = {m.name for m in step.mentions}
    usable = [p for p in step.manifest.phrases if _names_in(p) <= names]
    # a phrase that says every value, not one with ", with the amount set to $500" tacked on
    said = names - {m.name for m in step.mentions if m.described}
    usable = [p for p in usable if said <= _names_in(p)] or usable
    # the new record in its place ("a deduction of $75 for them"), not tacked on after the
    # rest ("$480 taken from every paycheck for pension, for them": round 61)
    made = {m.name for m in step.mentions if m.made}
    usable = [p for p in usable if made <= _names_in(p)] or usable
    if plain:  # the order alone: "Please cancel my order {id}; I changed my mind" → its order
        orders = [p for p in order_phrases(usable) if not BESIDES_THE_ACT.search(p)]
        usable = orders or [p for p in usable if not BESIDES_THE_ACT.search(p.strip())] or usable
    usable = _same_way(usable, step) or usable  # "our rates went up" only with a higher rate
    if vague:  # "The adjuster knows that area well; put them on a claim": which adjuster?
        usable = [p for p in usable if sum("{" in c for c in re.split(r"[;:]", p)) < 2] or usable
    owner_named = any(NAMED_OWNER.match(str(m.described or "")) for m in step.mentions)
    owned = owner_named or any(SERVED.search(str(m.described or "")) for m in step.mentions)
    # someone else's record ("Amanda Miller's latest order") keeps its owner's reason, told of
    # them: "… arrived damaged, they want to send it back" (rounds 68 to 73: "no reason")
    about = {m.name for m in step.mentions if m.described}
    told = [in_third_person(_relayed_record(p), about) for p in usable] if owner_named else []
    if voice is not None:  # staff relay ("Withdraw farmer X"); a member speaks for themself
        mine = [p for p in usable if bool(FIRST_PERSON.search(p)) == (voice == "self")]
        if voice == "staff" and not mine:  # never "refund my tickets" from the box office
            mine = [t for t in (as_relayed(p) for p in usable) if t is not None]
        usable = mine or ([] if voice == "staff" else usable)
    if voice != "self" and owned:  # not "I changed my mind, cancel Amanda Miller's order"
        usable = [p for p in usable if not FIRST_PERSON.search(p)] + [
            t for t in told if t
        ] or usable
    if owned:
        # "Rachel Woodard's closed course" may be the one she teaches: not "The instructor
        # for Rachel Woodard's closed course is unavailable" (round 60)
        usable = [p for p in usable if not _names_a_person(p)] or usable
    if not plain:  # the reason where the catalog has one: "…; it arrived damaged", not a bare
        # order ("Please process a return for …", rounds 65 to 67: "no reason is given")
        usable = [p for p in usable if WITH_A_REASON.search(p)] or usable
    template = rng.choice(usable) if usable else _fallback_template(step)
    template = re.sub(r"^\s*(?:Hi|Hello|Hey)(?: there)?[,!.]\s*", "", template)
    template = described_template(template, step.mentions)
    return vague_template(template, step.mentions) if vague else template


def _names_a_person(template: str) -> bool:
    """The template names someone by their role outside its placeholders ("The instructor
    for {course_id.label} …")."""
    outside = re.sub(r"\{[^}]*\}", " ", template).lower()
    return any(word in PEOPLE for word in re.findall(r"[a-z]+", outside))


def as_relayed(template: str) -> str | None:
    """A member's own request as staff pass it on: "Cancel my appointment {id}" -> "Cancel the
    appointment {id}", "I want to drop the course in {id}" -> "Please drop the course in {id}";
    None when the first person is part of the story ("my plans changed")."""
    relayed = _without_the_asker(template)
    return None if FIRST_PERSON.search(relayed) else relayed


def _without_the_asker(template: str) -> str:
    """ "I'd like to cancel my booking {id}; …" -> "Please cancel the booking {id}; …"."""
    asked = re.sub(r"^(?:I want|I'd like|I need) to\b", "Please", template.strip())
    return _relayed_record(asked)


def _relayed_record(template: str) -> str:
    """ "my booking {id}" -> "the booking {id}"."""
    return re.sub(
        r"\b([Mm])y(?=(?: [a-z]+){0,2} \{)", lambda m: "The" if m[1] == "M" else "the", template
    )


# the first person told of someone else, longest forms first ("I'm" before "I")
THIRD_PERSON = {
    "I'm": "they're",
    "I've": "they've",
    "I'd": "they'd",
    "I'll": "they'll",
    "I am": "they are",
    "I was": "they were",
    "I wasn't": "they weren't",
    "I": "they",
    "my": "their",
    "me": "them",
    "mine": "theirs",
    "myself": "themself",
}
SAID_OF_THEM = re.compile(rf"\b(?:{'|'.join(sorted(THIRD_PERSON, key=len, reverse=True))})\b", re.I)


def in_third_person(template: str, about: set[str]) -> str | None:
    """A first-person story told of the record's owner, whom the description of the record
    (one of the placeholders ``about``) names before it: "Order {id} arrived damaged, I want to
    send it back" -> "{id} arrived damaged; they want to send it back". None when the story
    speaks before that ("I'd like to return {id}": "they" would come before the person it
    means), speaks for a business ("we") or not in the first person at all."""
    first = FIRST_PERSON.search(template)
    opening = re.search(r"\{(\w+)", template)
    if first is None or opening is None or opening[1] not in about:
        return None
    if opening.start() > first.start() or re.search(r"\b(?:[Ww]e|[Oo]ur|us)\b", template):
        return None

    def told(match: re.Match) -> str:
        said = THIRD_PERSON.get(match[0]) or THIRD_PERSON[match[0].lower()]
        opens = re.search(r"(?:^|[.!?]\s+)$", template[: match.start()])
        return said.capitalize() if opens else said

    return SAID_OF_THEM.sub(told, re.sub(r",\s+(?=I\b)", "; ", template))


def _same_way(phrases: list[str], step: ChainStep) -> list[str]:
    """The phrases whose story goes the way the step moves a number: "the supplier raised
    prices" not with a lower price, "drop it to $0.65" not with a higher one."""
    moves = [
        c["new"] > c["old"]
        for c in step.changes
        if all(
            isinstance(c.get(k), int | float) and not isinstance(c.get(k), bool)
            for k in ("old", "new")
        )
        and c["new"] != c["old"]
    ]
    if len(set(moves)) != 1:
        return phrases
    against = GOES_DOWN if moves[0] else GOES_UP
    return [p for p in phrases if not against.search(p)]


def fill_template(template: str, mentions: list[ArgMention], vague: bool) -> str:
    """The template with each placeholder replaced by its value (or a vague reference)."""
    by_name = {m.name: m for m in mentions}
    said_nouns: list[str] = []
    used = _names_in(template)
    both = {n for n in used if "{" + n + "}" in template and "{" + n + ".label}" in template}
    template = in_dollar_signs(template, by_name)

    def replace(match: re.Match[str]) -> str:
        mention, before = by_name[match.group(1)], template[: match.start()]
        if mention.described or (mention.hint and not vague):
            text = str(mention.described or mention.hint)
            after = template[match.end() :]
            if text in ("them", "it") and (after.startswith("'") or not before.strip()):
                text = f"the new {mention_entity(mention)}"  # never "them's", never "Them …"
            if re.search(r"\b(?:my|your|our|the|this|an?)\s+$", before, re.I):
                text = re.sub(r"^(?:the|a|an|my|your)\s+", "", text, flags=re.I)  # not "the the"
            if re.search(r"\b(?:my|your|our)\s+$", before, re.I):  # "my Ann Lee's order"
                text = re.sub(r"^[^,;]+?'s\s+", "", text)
            return text
        if mention.signed_in and mention.source == "entity_id":
            return ME  # the speaker's own record: "my phone", never "the phone of a guest"
        if vague:
            text = _vague_text(mention)
            determined = mention.source == "entity_id" and has_determiner(before)
            if mention.source == "entity_id":  # "from the account into another account"
                noun = text.removeprefix("the ")
                if noun in said_nouns:
                    text = f"other {noun}" if determined else f"another {noun}"
                    determined = False
                said_nouns.append(noun)
            return text.removeprefix("the ") if determined else text
        as_label = bool(match.group(2)) or (mention.by_label and mention.name not in both)
        return _exact_text(mention, as_label, before)

    filled = without_repeated_type(_as_mine(PLACEHOLDER.sub(replace, template).strip()), mentions)
    # an order whose verb is the name after it: "Please mark Mark Thomas's delivery", never
    # "Mark Mark Thomas's delivery" (round 28)
    return re.sub(r"^([A-Z][a-z]+) (?=\1\b)", lambda m: f"Please {m[1].lower()} ", filled)


ME = "\0me"


def _as_mine(text: str) -> str:
    """ "the phone of ME" → "my phone", "ME's booking" → "my booking", else "me"; "I'm ME"
    goes: the session says who is signed in."""
    text = re.sub(rf"\s*\b(?:I'm|I am|my name is|this is) {ME}\b[.,;]?", "", text, flags=re.I)
    text = re.sub(
        rf"\b(?:the|a|an) ((?:[a-z]+ ){{0,2}}[a-z]+) of (?:(?:the|a|an) )?(?:[a-z]+ )?{ME}",
        r"my \1",
        text,
    )
    text = re.sub(rf"(?:\b(?:the|a|an|my) )?{ME}'s\b", "my", text)
    return re.sub(rf"(?:\b(?:the|a|an) (?:[a-z]+ )?)?{ME}", "me", text)


def in_dollar_signs(template: str, by_name: dict[str, ArgMention]) -> str:
    """ "{amount} dollars" as "{amount}", which is filled as "$20.89": one format for money in
    a request, so "move 20.89 dollars …; otherwise, put $31.17 …" never mixes two."""

    def one(match: re.Match[str]) -> str:
        mention = by_name.get(match.group(1))
        money = mention is not None and is_money(mention.name, mention.value)
        return "{" + match.group(1) + "}" if money else match.group(0)

    return re.sub(r"\{(\w+)\} dollars\b", one, template)


def without_repeated_type(text: str, mentions: list[ArgMention]) -> str:
    """ "crew Signals Crew" → "Signals Crew": a type word before a name that already says it."""
    for mention in mentions:
        label = str(mention.label or "")
        for word in {w.casefold() for w in label.split() if w.isalpha()}:
            verb = r"(?<!^)(?<!please )"  # the order's verb: "Mark Mark Thomas's delivery …"
            text = re.sub(
                rf"{verb}\b{re.escape(word)}\s+(?={re.escape(label)})", "", text, flags=re.I
            )
    return text


def conditional_clause(
    step: ChainStep, condition: Condition, rng: random.Random, *, vague: bool, voice: Voice = None
) -> Clause:
    """ "if the balance of account X is at least $500, <one step>; otherwise, <the other>": the
    step the chain took goes in the branch its condition (true or false in the state) picks
    (with ``vague``, the record is "the account" until the user is asked which);
    ``condition`` is ``step.condition``, handed in by the caller that checked it is set."""
    # the branches keep their values even in a goal: "move $20.89 from it", never "move the
    # amount"; only the record the condition reads waits to be asked for
    taken = _branch(replace(step, condition=None), rng, voice, condition.target)
    other = _branch(condition.otherwise, rng, voice, condition.target)
    then, otherwise = (taken, other) if condition.holds else (other, taken)
    record = condition.record
    if condition.target:  # each branch moves the number by its distance to the mark
        below, above = (then, otherwise) if condition.op == "<" else (otherwise, then)
        noun = field_noun(condition.field)
        subject = condition_subject(record, noun, vague=vague)
        mark = shown(condition.field, condition.threshold)
        leads = SELF_MARK_LEADS if voice == "self" else MARK_LEADS
        lead = leads[0] if vague else rng.choice(leads)  # a goal: the user's own
        low, high = (DIFFERENCE_OF.sub(_from, as_it(c.lead(), record)) for c in (below, above))
        label = record.label if record.by_label else None
        if voice is None and not vague and label and subject.startswith(f"{label}'s "):
            return Clause(_for_the_client(label, noun, mark, low, high))
        entity = mention_entity(record)
        if voice == "staff" and entity in HELD:  # the holder is at the desk (round 38)
            lead = _holder_here(record, entity, noun, vague)
        # money on its way is not money in hand (round 45: "records a deposit before the money
        # has arrived"): a holder at the desk pays it in, a client's card on file is charged
        payer = PAID_IN if entity in HELD else CARD_ON_FILE
        low = _paid_in(low, "I'll pay in the difference" if voice == "self" else payer)
        said = lead.format(subject=subject, mark=mark)
        said = f"{said[:1].upper()}{said[1:]}"
        return Clause(f"{said} If it is below that, {low}; if it is above, {high}")
    noun = field_noun(condition.field)
    value = shown(condition.field, condition.threshold)
    counted = is_plural(noun) and float(condition.threshold).is_integer() and " " not in noun
    comparison = say("at_least" if condition.op == ">=" else "below", rng, value=value)
    if counted:  # "if leave request LR-6 is for 5 days or more", not "the days of … are 5"
        n = int(condition.threshold)
        more = condition.op == ">="
        comparison = f"for {n} {noun} or more" if more else f"for fewer than {n} {noun}"
    subject = condition_subject(record, noun, vague=vague)
    if counted:
        subject = subject.removeprefix(f"the {noun} of ")
    body = say(
        "conditional",
        rng,
        field="" if counted else noun,
        subject=subject,
        comparison=comparison,
        then=as_it(then.lead(), record),
        otherwise=as_it(otherwise.lead(), record),
    )
    if condition.why:  # a policy, and a look it asks for: "Long leave needs the head's sign-off
        # . Please check leave request LR-6: if it is for 5 days or more, decline it;
        # otherwise, approve it." (round 40: a rule recited about a number no one has read)
        more = "" if counted else f" the {noun} of"
        named = subject if counted else subject.removeprefix(f"the {noun} of ")
        it = "it is"
        limit = f"{int(condition.threshold)} {noun}" if counted else value
        written = None if vague else _policy_asks(condition, rng, named, limit)
        if written is not None:  # a goal (a user's instruction) keeps the plain form
            return written
        then_said, other_said = as_it(then.lead(), record), as_it(otherwise.lead(), record)
        if rng.random() < ACT_FIRST:  # the act before its test, as a manager asks (round 43:
            # "if it is X or more, do A; otherwise do B" read as a template every time)
            then_said, other_said = (_unasked(c) for c in (then_said, other_said))
            return Clause(
                f"{condition.why}. Please look at {named} and {then_said} if {it} {comparison}, "
                f"or {other_said} if not"
            )
        return Clause(
            f"{condition.why}. Please check{more} {named}: if {it} {comparison}, {then_said}; "
            f"otherwise, {other_said}"
        )
    return Clause(body)


ACT_FIRST = 0.5  # the share of policy conditionals said act first


def _policy_asks(
    condition: Condition, rng: random.Random, record: str, limit: str
) -> Clause | None:
    """The request as the domain writes it whole ("The owner of the car on work order WO-1
    called back: they'll go ahead if the estimate is under $300 …"); None where it writes none
    for this voice. Every generic form read as a template to raters (rounds 38 to 44)."""
    policy = condition.policy
    asks = (policy.asks_own if condition.own else policy.asks) if policy else []
    if not asks:
        return None
    said = rng.choice(asks).format(record=record, limit=limit)
    return Clause(f"{said[:1].upper()}{said[1:-1]}", end=said[-1])


def _unasked(clause: str) -> str:
    """A branch after "and": no second "please" ("…and charge it to my card if …")."""
    return re.sub(r"^please\s+", "", clause, flags=re.I)


def _branch(step: ChainStep, rng: random.Random, voice: Voice, target: bool) -> Clause:
    """A branch as a request, never a question ("…; otherwise, can I pay it with the credit on
    my account.", round 41); aimed at a mark, not one that hands the money over ("here's the
    difference towards the retainer": the user hands nothing over, the agent works it out)."""
    clause = phrase_step(step, rng, voice=voice, plain=True)
    for _ in range(MAX_REPHRASES):
        if clause.end != "?" and not (target and HANDING_OVER.match(clause.lead())):
            break
        clause = phrase_step(step, rng, voice=voice, plain=True)
    return clause


MAX_REPHRASES = 6
# why a balance is brought to a mark: what the user keeps it at, or what was agreed, and a
# request to look (round 25: "make the retainer exactly $X" read as synthetic; round 33: "I'd
# like the balance to be $300" read as a template no one would write)
MARK_LEADS = (
    "{subject} is meant to stay at {mark}; please check where it stands.",
    "{subject} is to be kept at {mark}, as its holder asked; please check where it stands.",
)
SELF_MARK_LEADS = (
    "I like to keep {subject} at {mark}; please check where it stands.",
    "I keep {subject} at {mark}; please look at where it stands now.",
)
# money added to bring a number up to a mark comes from someone (round 28: "please put the
# difference into it" read as money from nowhere)
PAID_IN = "they'll pay in the difference"  # only if it is short: said before a look
# a client's agreed top-up is charged, not promised (round 38: "the deposit is made without any
# payment actually being received")
CARD_ON_FILE = "they've authorised us to charge the difference to their card on file"
HANDING_OVER = re.compile(r"(?:here's|here is|i'm paying|i am paying|i'll pay)\b", re.I)


# what a holder keeps a number of, who can be at the desk while staff bring it to a mark
HELD = frozenset({"account", "card", "wallet", "transit card", "policy"})


def _holder_here(record: ArgMention, entity: str, noun: str, vague: bool) -> str:
    """Staff bring a holder's balance to a mark with the holder at the desk, who pays in the
    difference or takes the excess: a staff member paying out cash with no one there, or
    recording money no one paid, read as made up (round 38)."""
    if vague:  # which one is asked for later
        who = f"{a_or_an(entity)} {entity} holder is here; they keep the {noun} of their {entity}"
    else:
        who = f"the holder of {entity} {record.value} is here; they keep its {noun}"
    return f"{who} at {{mark}}. Please check where it stands."


def _for_the_client(label: str, noun: str, mark: str, low: str, high: str) -> str:
    """Where no one signs in, staff pass on what the client agreed and asked ("Summit
    Logistics Corp. keeps their retainer balance at $150 under their agreement with us and has
    asked us to check it. If it is below that, they'll pay in the difference, so please add
    it to their retainer; …"): a mark of no one's read as unmotivated (round 25), money as
    coming from nowhere (round 27), and a caller saying "This is Baker & Sons Bakery" as a
    stranger told a confidential balance (round 33)."""
    low = _paid_in(low, CARD_ON_FILE)
    return (
        f"{label} keeps their {noun} at {mark} under their agreement with us and has asked us to "
        f"check it. If it is below that, {low}; if it is above, {high}"
    )


def _paid_in(low: str, payer: str) -> str:
    """ "add the difference to my retainer" → "I'll pay in the difference, so please add it to
    my retainer"; a branch that says where the money comes from ("move the difference into it
    from ACC-1") stays as it is."""
    found = re.match(r"^(?:please )?(.+?)\bthe difference\b(.*)$", low)
    if found is None or re.search(r"\bfrom\b", low):
        return low
    before, after = found.groups()
    said = f"{before}it{after}"
    if re.search(r"\bit\b.*\bit\b", said):  # never "put it into it"
        said = f"{before}that amount{after}"
    return f"{payer}, so please {said}"


def _a_person(label: str) -> bool:
    """ "Elena Novak", not "Lakeside Food Bank" or "Chen Design Studio": two or three names,
    none of them a word businesses are named with."""
    words = label.replace(".", "").split()
    names = all(re.fullmatch(r"[A-Z][a-z'-]+", w) for w in words)
    return names and 2 <= len(words) <= 3 and not set(words) & ORGANISATION_WORDS


ORGANISATION_WORDS = frozenset(
    """Inc Corp LLC Ltd Co Company Group Partners Associates Sons Holdings Trust Foundation Bank
    Studio Bakery Landscaping Auto Body Design Logistics Medical Food Youth Center Centre Rescue
    Animal Clinic Farm Farms Shop Cafe Services Consulting Market Agency School Church
    Street""".split()
)


DIFFERENCE_OF = re.compile(r"\$?\b(the (?:difference|excess))(?: of\b)?")


def _from(found: re.Match[str]) -> str:
    """ "refund the excess of their retainer" → "refund the excess from their retainer"."""
    return f"{found.group(1)} from" if found.group(0).endswith(" of") else found.group(1)


def condition_subject(record: ArgMention, noun: str, *, vague: bool) -> str:
    """The number a condition reads, named as a person names it: "Ryan Reed's retainer
    balance", "the balance of account ACC-000006", and in a goal, before the user is asked
    which, "the balance of my account" (a record of theirs) or "the amount of the fine"."""
    entity = mention_entity(record)
    if vague and record.described:  # the goal names the record (``name_the_record``)
        named = record.described
        return f"{named}'s {noun}" if entity in PEOPLE else f"the {noun} of {named}"
    if vague:
        owner = "my" if entity.replace(" ", "_") in OWNED else "the"
        return f"the {noun} of {owner} {entity}"
    if record.hint or not (record.by_label or record.label):
        named = record.hint or f"{entity} {record.value}"
        return f"the {noun} of {named}"
    named = _exact_text(record, True)
    if entity in PEOPLE and record.by_label:  # "Ryan Reed's retainer balance"
        return f"{named}'s {noun}"
    return f"the {noun} of {named}"


def as_it(branch: str, record: ArgMention) -> str:
    """A branch of a condition with the record the condition named said as "it": "if the fee of
    fine FN-4 is below $19, pay it; otherwise, open an appeal on it", not "fine FN-4" thrice."""
    names = [str(n) for n in (record.label, record.value) if isinstance(n, str) and n.strip()]
    if not names:
        return branch
    nouns = {*mention_entity(record).split(), *TYPE_SYNONYMS}
    noun = "|".join(re.escape(w) for w in sorted(nouns, key=len, reverse=True))
    name = "|".join(  # "Lakeside Medical Group Inc." is said without its full stop before ";"
        re.escape(n.rstrip(".")) + (r"\.?" if n.endswith(".") else "")
        for n in sorted(names, key=len, reverse=True)
    )
    said = rf"(?:\b(?:my|the)\s+(?:[a-z]+\s+)?)?(?:\b(?:{noun})\s+){{0,2}}(?:{name})(?!\w)"
    branch = re.sub(rf",? (?:my|the) [a-z]+ (?:[a-z]+ )?is (?:{name})(?!\w)", "", branch)
    its = "their" if mention_entity(record) in PEOPLE else "its"
    branch = re.sub(rf"{said}'s\b", its, branch, flags=re.I)
    branch = re.sub(rf"\bthe ((?:[a-z]+ )?[a-z]+) of {said}(?!['\w-])", rf"{its} \1", branch)
    pronoun = "them" if its == "their" else "it"  # not in "to Main Hall Annex"
    branch = re.sub(rf"{said}(?!['\w-]|\s+(?-i:[A-Z]))", pronoun, branch, flags=re.I)
    if re.search(rf"\b{its}\b", branch):  # "add $500 to their retainer, for them"
        branch = re.sub(rf", for {pronoun}$", "", branch)
    return re.sub(r"\b(out|up|off|down|back|in) (it|them)\b", r"\2 \1", branch)


def compose_clauses(clauses: list[Clause], rng: random.Random) -> str:
    """Join clauses into sentences ("First, …, and then …", "Then, …", "Finally, …"), with one
    "please" to a request (round 25: "Please mark …, and then cancel an appointment, please.")."""
    if len(clauses) == 1:
        return clauses[0].sentence()
    first, *rest = clauses
    polite = bool(PLEASE.search(first.body))
    leads = [PLEASE_AFTER.sub("", c.lead()) if polite else c.lead() for c in rest]
    # "First, 139 units of …"; two requests need no "First" (round 60: "First, … Next, …"
    # read as a list)
    say_first = (rng.random() < 0.4 and len(clauses) > 2) or not first.body[:1].isalpha()
    if all(c.simple for c in clauses) and rng.random() < 0.6:
        if len(clauses) == 2:
            opening = f"First, {first.lead()}" if say_first else first.sentence()[:-1]
            return f"{opening}, and then {leads[0]}."
        middle = "".join(f"; then {lead}" for lead in leads[:-1])
        return f"First, {first.lead()}{middle}; and finally {leads[-1]}."
    sentences = [f"First, {first.lead()}{first.end}" if say_first else first.sentence()]
    for index, (clause, lead) in enumerate(zip(rest, leads, strict=True)):
        last = index == len(rest) - 1 and len(clauses) >= 3
        connector = rng.choice(LAST_CONNECTORS if last else MIDDLE_CONNECTORS)
        sentences.append(f"{connector} {lead}{clause.end}")
    return " ".join(sentences)


PLEASE = re.compile(r"\bplease\b", re.I)
PLEASE_AFTER = re.compile(r",?\s*please$", re.I)


def choose_opening(steps: list[ChainStep], rng: random.Random, voice: Voice = None) -> str:
    """A first line that fits the entities the steps touch ("my appointments", "a doctor");
    staff never say "my"."""
    names = [step.manifest.entity for step in steps]
    kinds = list(dict.fromkeys(names))
    if len(kinds) == 1 and kinds[0] in OWNED and voice != "staff":
        thing = words_of(kinds[0])
        thing = plural_of(thing) if len(steps) > 1 else thing
        return rng.choice(OWNED_OPENINGS).format(things=thing)
    nouns = [words_of(kind) for kind in kinds]
    things = [
        plural_of(noun) if names.count(kind) > 1 else f"{article_for(noun)} {noun}"
        for kind, noun in zip(kinds, nouns, strict=True)
    ]
    listed = things[0] if len(things) == 1 else ", ".join(things[:-1]) + " and " + things[-1]
    requests = "a request" if len(steps) == 1 else "a few requests"
    return rng.choice(GENERAL_OPENINGS).format(things=listed, requests=requests)


def is_create(step: ChainStep) -> bool:
    """A step that makes a new record: no argument names an existing one of its own entity."""
    own = step.manifest.entity
    return not any(m.source == "entity_id" and m.entity == own for m in step.mentions)


def _still_says_what_changes(template: str, freed: str, step: ChainStep) -> bool:
    """Whether a value-free template still names each value it dropped, by its field ("change
    the phone"), or as money ("some money"): else the goal says nothing of what changes."""
    dropped = [m for m in step.mentions if m.name in _names_in(template) - _names_in(freed)]
    said = freed.lower()
    return all(  # "raise the salary of employee X" says what changes as well as "some money"
        (bool(SUM_WORDS.search(said)) and is_money(m.name, m.value))
        or any(w in said for w in words_of(m.name).split())
        for m in dropped
        if m.source != "entity_id"
    )


# words that say a sum changes hands without saying how much ("make a payment towards my pledge")
SUM_WORDS = re.compile(
    r"\b(?:some money|payments?|payouts?|deposits?|refunds?|top-ups?|donations?)\b"
)


def _names_a_value(template: str, mentions: list[ArgMention]) -> bool:
    """The template still says an amount, a date or a name the user would give when asked."""
    values = {m.name for m in mentions if m.source != "entity_id" and not m.described}
    return bool(_names_in(template) & values)


def value_free_goal(step: ChainStep, rng: random.Random) -> Clause:
    """What the user wants, without the values they will give when asked ("I need to change
    the hourly rate for the Delgado Custody matter"), from the tool's words and its record."""
    words = words_of(step.manifest.tool).split()
    index = 2 if len(words) > 2 and words[1] in PARTICLES else 1
    verb, obj = " ".join(words[:index]), " ".join(words[index:])
    target = next((m for m in step.mentions if m.source == "entity_id"), None)
    if target is None:
        phrase = f"{verb} the {obj}" if obj else verb
    else:
        entity = mention_entity(target)
        owner = "my" if entity in OWNED else "the"
        record = target.described or f"{owner} {entity}"
        described = _described_goal(step, entity, record)
        if described:
            return Clause(f"{rng.choice(CREATE_LEADS)} {described}")
        # "change_resident_phone": "change the phone of the resident", never "change the
        # resident" (which a signed-in resident says as "change me")
        rest = " ".join(w for w in obj.split() if w not in entity.split())
        if rest in LINKING_WORDS:  # "deduct_from_payslip": "deduct from X", not "the from of X"
            return Clause(f"{rng.choice(CREATE_LEADS)} {verb} {rest} {record}")
        rest = ASKED_AS.get(rest, field_noun(rest.replace(" ", "_"))) if rest else ""
        phrase = f"{verb} the {rest} of {record}" if rest else f"{verb} {record}"
    return Clause(f"{rng.choice(CREATE_LEADS)} {phrase}")


def _described_goal(step: ChainStep, entity: str, record: str) -> str | None:
    """ "take a payment against James Whitfield's earliest pledge", from the description
    ("Take a payment against an open pledge"), where the tool's name does not name the record
    it acts on: "receive_gift" gave "receive the gift of James Whitfield's earliest pledge"
    (round 44)."""
    if entity.split()[-1] in words_of(step.manifest.tool).split():
        return None
    clause = described_clause(step.manifest.tool, step.manifest.doc)
    # the record after a preposition, so the verb keeps its object: "send a shipment" (for
    # "change_destination") and "record the passed inspection" lost what the tool does
    named = re.search(
        rf"\b(?:against|on|for|to|from|of|in|with|into)\s+((?:an?|the)\s+(?:[a-z]+\s+)?"
        rf"{re.escape(entity)})\b",
        clause or "",
    )
    if clause is None or named is None:
        return None
    return f"{clause[: named.start(1)]}{record}{clause[named.end(1) :]}"


def create_goal(step: ChainStep, rng: random.Random, voice: Voice = None) -> Clause:
    """A vague goal for a create ("I'd like to book an appointment"), from the tool's words;
    staff put someone else in ("enroll a student in a course", not "enroll in a course")."""
    words, index, obj = _goal_words(step)
    spoken = {**SPOKEN_VERBS, **(SELF_VERBS if voice == "self" else {})}
    verb = spoken.get(words[0], words[0]).split()
    words, index = [*verb, *words[1:]], index + len(verb) - 1
    ids = [mention_entity(m) for m in step.mentions if m.source == "entity_id"]
    person = next((noun for noun in ids if noun in PEOPLE), None)
    if voice == "staff" and person and index == 2 and words[1] in SUBJECT_DOES:
        words = [words[0], article_for(person), person, *words[1:]]
        index += 2
    if _one_counted(step, obj):  # "reserve a seat", never "some seats" for one (round 45)
        obj = [*obj[:-1], singular(obj[-1])]
    phrase = " ".join([*words[:index], article_for(" ".join(obj)), *_with_articles(obj)])
    which = next((m for m in step.mentions if m.described), None)
    if which is not None:  # "assign a courier for the only ready order of Le Petit Bistro"
        noun = re.escape(mention_entity(which))
        said = re.sub(rf"\b(?:a|an) {noun}\b", str(which.described), phrase, count=1)
        # "enrol a student in Kathryn Anderson's latest course", not "… in a course for …"
        by = "with" if mention_entity(which) in PROVIDERS else "for"  # "with the dermatologist"
        phrase = said if said != phrase else f"{phrase} {by} {which.described}"
    lead = rng.choice(CREATE_LEADS)
    if lead == "please" and index == 2 and words[1] in SUBJECT_DOES:
        lead = "I'd like to"
    elif lead == "I'd like to" and voice == "staff":  # a desk's "I'd like to park it" read as
        lead = "please"  # the clerk's own car (round 57)
    return Clause(f"{lead} {phrase}")


def _with_articles(obj: list[str]) -> list[str]:
    """The object with an article after each preposition: a tool named
    ``add_parcel_to_shipment`` asks to "add a parcel to a shipment", not "… to shipment"."""
    spoken: list[str] = []
    for word, after in zip(obj, [*obj[1:], ""], strict=True):
        spoken.append(word)
        if word in OBJECT_PREPOSITIONS and after and after not in ARTICLES:
            spoken.append(article_for(after))
    return spoken


OBJECT_PREPOSITIONS = frozenset({"to", "into", "onto", "for", "from", "on", "in", "with"})
LINKING_WORDS = OBJECT_PREPOSITIONS | {"at", "of"}  # "deduct from", not "the from of"
ARTICLES = frozenset({"a", "an", "the", "my", "your", "their", "its"})


def _goal_words(step: ChainStep) -> tuple[list[str], int, list[str]]:
    """A create's words, where its object starts, and the object: "sign up guest" is 2."""
    words = words_of(step.manifest.tool).split()
    entity = words_of(step.manifest.entity).split()
    index = 2 if len(words) >= 2 and words[1] in PARTICLES else 1  # "sign up guest"
    obj = words[index:]
    if not obj or obj[0] in NOT_NOUNS:  # "add_to_course", "reply_to_ticket": name the record
        return ["set", "up"], 2, ["new", *entity]
    if words[0] in ADJECTIVES:  # "new_shipment" names a thing, not a verb
        return ["create", *words], 1, words
    if not set(obj) & set(entity) and " ".join(entity) in PEOPLE:  # "join_coop" → a farmer
        return ["add"], 1, ["new", *entity]
    return words, index, obj


def _one_counted(step: ChainStep, obj: list[str]) -> ArgMention | None:
    """The count of one the goal's plural stands for ("seats": 1, "quantity": 1), if any."""
    if not obj or singular(obj[-1]) == obj[-1]:
        return None
    counts = [m for m in step.mentions if m.source == "int" and not isinstance(m.value, bool)]
    named = [m for m in counts if m.name == obj[-1] or m.name in COUNT_NAMES]
    return named[0] if len(named) == 1 and named[0].value == 1 else None


# people one has an appointment or a session with, not for
PROVIDERS = frozenset(
    "doctor vet veterinarian physician specialist instructor trainer attorney lawyer therapist "
    "stylist tutor adviser advisor counsellor counselor dentist".split()
)


def distinguish_repeats(steps: list[ChainStep], clauses: list[Clause]) -> list[Clause]:
    """A vague goal said twice ("Put the event on sale") becomes "… another event …"."""
    seen: set[str] = set()
    result = []
    for step, clause in zip(steps, clauses, strict=True):
        body, core = clause.body, _core(clause.body)
        if core in seen:
            nouns = [mention_entity(m) for m in step.mentions if m.source == "entity_id"]
            nouns.append(words_of(step.manifest.entity))
            pattern = "|".join(re.escape(n) for n in nouns)
            changed = re.sub(rf"\bthe ({pattern})\b", r"another \1", body, count=1)
            if changed == body:
                changed = re.sub(rf"\bmy ({pattern})\b", r"my other \1", body, count=1)
            if changed == body and is_create(step):  # "register another patient", "buy more …"
                changed = re.sub(r"\b(?:an?) (?=\w)", "another ", body, count=1)
                changed = changed if changed != body else re.sub(r"\bsome\b", "more", body, count=1)
            elif changed == body:  # "please check me in for another booking"
                changed = f"{body} for another {words_of(step.manifest.entity)}"
            body = changed
        seen.add(core)
        result.append(Clause(body, clause.end, clause.keep_case))
    return result


def _core(body: str) -> str:
    """A goal without its lead-in, to spot repeats ("I need to add a patient" == "please …")."""
    lowered = body.lower()
    for lead in CREATE_LEADS:
        lowered = lowered.removeprefix(lead.lower() + " ")
    return lowered


def scrub_tool_names(text: str, tool_names: list[str]) -> str:
    """Replace any tool identifier a template leaked with plain words (``cancel_order``)."""
    for name in sorted(tool_names, key=len, reverse=True):
        if "_" in name:
            text = _tool_name_pattern(name).sub(words_of(name), text)
    return text


@lru_cache(maxsize=1024)
def _tool_name_pattern(name: str) -> re.Pattern[str]:
    """Compiled once: a run names more tools than the ``re`` module's cache keeps."""
    return re.compile(rf"\b{re.escape(name)}\b", flags=re.IGNORECASE)


def _exact_text(mention: ArgMention, as_label: bool, before: str = "") -> str:
    """The value; for an entity, its label when the task names it by label, else its id.
    ``before`` is the text it follows: after "$" a sum is a bare number, after "for" a reason
    takes its article ("for a second opinion", "for ongoing pain", round 41)."""
    if mention.source != "entity_id":
        dollars = not before.endswith("$") and is_money(mention.name, mention.value)
        text = humanize_value(format_value(mention.value), dollars=dollars)
        purpose = field_noun(mention.name) in PURPOSES and before.endswith("for ")
        return as_purpose(text) if purpose else text
    if not as_label:
        return str(mention.value)
    if mention.by_label:
        return str(mention.label)
    return f"{mention.label} ({mention.value})" if mention.label else str(mention.value)


def _vague_text(mention: ArgMention) -> str:
    """How a goal names a record before the user says which ("the booking"); no value reaches
    here, since a template naming one is phrased by ``value_free_goal``."""
    return f"the {mention_entity(mention)}"


def _extra_text(mention: ArgMention) -> str:
    if mention.described or mention.hint:
        return f"for {mention.described or mention.hint}"
    if mention.source == "entity_id":
        return f"for the {mention_entity(mention)} {_exact_text(mention, True)}"
    return f"with the {field_noun(mention.name)} set to {_exact_text(mention, False)}"


def _fallback_template(step: ChainStep) -> str:
    """Used when the manifest has no usable phrase: the tool's words and its main entity."""
    manifest = step.manifest
    target = next((m for m in step.mentions if m.entity == manifest.entity), None)
    if target is None:
        target = next((m for m in step.mentions if m.source == "entity_id"), None)
    if target is None:
        return f"please {words_of(manifest.tool)}"
    words = words_of(manifest.tool)
    verb, _, rest = words.partition(" ")
    entity = mention_entity(target)
    if rest.startswith(f"{entity} ") and rest != entity:  # "update Cy Moss's contact"
        return f"please {verb} {{{target.name}.label}}'s {rest.removeprefix(entity).strip()}"
    # "remove member Cy Moss", but "add data for line 0790"
    joiner = " " if words.endswith(entity) else " for "
    return f"please {words}{joiner}{{{target.name}.label}}"


def _names_in(template: str) -> set[str]:
    return {match.group(1) for match in PLACEHOLDER.finditer(template)}
