"""A conversational task as τ-bench writes one: an instruction to the simulated user.

It says who the user is (a signed-in customer by name, or a member of staff serving one), what
they want (the request, with the agent left to work out the steps), what they will tell the agent
when asked (their facts, with the values, as τ-bench's instructions hold them) and what they will
accept. ``tasks.core.opening.opening_message`` turns it back into the user's first message:
the self-introduction and the lines about conduct go, the rest is put in the first person.

Built from the finished first-person request, so every kind of scenario gets the same treatment
at one seam; the framing of that request (greetings, "I have a few requests about …", thanks) is
dropped, since the persona replaces it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Set as AbstractSet
from functools import cache
from typing import Any

from envmill.schemas.scenario import ScenarioSpec, SolutionStep
from envmill.tasks.backends.procedural.checks.derive import words_of
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment
from envmill.tasks.backends.procedural.phrasing.word_lists import load_wording, words
from envmill.tasks.backends.procedural.phrasing.words import (
    article_for,
    format_value,
    humanize_value,
    is_money,
    tidy_text,
)
from envmill.tasks.backends.procedural.state.contact import plain_name
from envmill.tasks.core.field_words import field_noun

CONNECTOR = re.compile(r"^((?:First|Then|After that|Also|Next|Finally|Lastly),\s+)(.*)$", re.S)
FIRST_PERSON = (
    (r"\bI'm\b", "you're"),
    (r"\bI'd\b", "you'd"),
    (r"\bI've\b", "you've"),
    (r"\bI'll\b", "you'll"),
    (r"\bI am\b", "you are"),
    (r"\bI was\b", "you were"),
    (r"\bmyself\b", "yourself"),
    (r"\bmine\b", "yours"),
    (r"\bmy\b", "your"),
    (r"\bMy\b", "Your"),  # "You are Mary Ortiz. Your company's travel policy changed" (round 28)
    (r"\bme\b", "you"),
    (r"\bI\b", "you"),
)
# a question to the agent, as what the user wants to know (the way back to a question is not
# needed: "I want to know the fare of …" is a fine opening)
NUMBERED_FIRST = re.compile(r"^[A-Za-z]+(?: [a-z]+)? [A-Z]{2,}[A-Z0-9]*-\d+\b")
QUESTIONS = (
    (
        r"^(?:Could|Can) you count the (.+?) of ((?:one of )?.+?)(?: for me)?\?$",
        r"You want to know how many \1 \2 has.",
    ),
    (r"^How many (.+?) does (.+?) have\?$", r"You want to know how many \1 \2 has."),
    (r"^Could you add up the (.+?)(?: for me)?\?$", r"You want to know the total \1."),
    (
        r"^(?:What(?: is|'s| are)|(?:Could|Can) you (?:tell me|check)) (.+?)(?: for me)?\?$",
        r"You want to know \1.",
    ),
    (r"^When (was|were) (.+?) (\w+)\?$", r"You want to know when \2 \1 \3."),
    (r"^(?:When|What time) (is|was) (.+?)\?$", r"You want to know when \2 \1."),
    (r"^How long is (.+?)(?: for)?\?$", r"You want to know how long \1 is for."),
    (r"^How much (is|was) (.+?)\?$", r"You want to know how much \2 \1."),
    (r"^When does (.+?) (start|end)\?$", r"You want to know when \1 \2s."),
    (r"^When did (.+?) (start|end)\?$", r"You want to know when \1 \2ed."),
    (r"^(?:Could|Can) you (.+?)(?: for me)?\?$", r"You want the agent to \1."),
    (r"^(?:Can|Could|May) (?:I|you) (.+?)\?$", r"You want to \1."),  # "Can I renew my loan?"
    # "I've caught up on loan L-2; can you put it back in good standing?" asks for an act
    # (round 70: "You want to know this: you've caught up …")
    (r"^(.+?); (?:can|could) you (.+?)\?$", r"\1; you want the agent to \2."),
    (r"^(.+?); (?:can|could) (?:I|we) (.+?)\?$", r"\1; you want to \2."),
    (r"^(.+)\?$", r"You want to know this: \1."),
)
# verbs of orders that are not tool names ("Check the balance …: if …")
COMMON_VERBS = frozenset(
    """add mark pause set put cancel book move return restock register update change close open
    void refund approve reject renew transfer assign issue record submit withdraw reinstate
    terminate drop sign release sell give take bill increase raise lower reduce confirm complete
    schedule reschedule enroll pay settle post apply block freeze lend create fit scrap deliver
    dispatch ship send redirect finish start launch extend clear remove archive check tell find
    look count let make see get hold order reserve reopen suspend resume decline deny
    charge""".split()
)
# words a request sentence starts with that are not the verb of an order ("The order …")
NOT_VERBS = frozenset(
    "i i'm i'd i've my the a an we our this that it there when if nobody someone "
    "you your their his her its one what how which".split()
)


def persona_task(
    spec: ScenarioSpec,
    compiled: CompiledEnvironment,
    voice: str | None,
    rng: random.Random,
    faker: Any,
) -> str:
    """The instruction for the simulated user of conversational ``spec``, in the second person."""
    request = in_second_person(bare_request(spec.task), verbs_of(compiled))
    client = _client_of(compiled)
    if voice != "self":  # staff serve a client: "cancel the customer's order", not "your order"
        request = re.sub(r"\byour\b", f"the {client}'s", request)
    else:  # the signed-in sender is "you", not "the sender"
        own = _acting_entity(compiled, spec.initial_state, spec.user_facts, spec.reference_solution)
        request = as_yourself(request, own)
        name = _acting_label(compiled, spec.initial_state)
        if name:  # "Mary Young's loan" said by Mary Young
            request = request.replace(f"{name}'s", "your")
    # "the agent" is the assistant the user talks to, never a record ("a support agent"); a
    # record a filter picks stays definite ("the event on sale" is one, "an event on sale" any)
    if not (spec.kind or "").startswith("filtered_lookup"):
        nouns = (_entity_words(compiled) | {client}) - {"agent"} - _named(request, spec.user_facts)
        request = first_mention_indefinite(request, nouns)
    people = {
        words_of(name)
        for name, entity in compiled.spec.entities.items()
        if CONTACT_FIELDS & set(entity.fields)
    }
    request = names_the_record(request, spec.user_facts, rng, staff=voice != "self", people=people)
    lines = [
        *who_you_are(compiled, spec.initial_state, voice, faker),
        request,
        str(rng.choice(load_wording("conduct")["knowledge"])),
        what_you_accept(spec.kind, rng),
        what_you_know(spec.user_facts),  # last: values may hold "." ("Apt. 270"), see opening
    ]
    return tidy_text(" ".join(line for line in lines if line))


def names_the_record(
    request: str,
    facts: dict[str, Any],
    rng: random.Random,
    *,
    staff: bool = False,
    people: AbstractSet[str] = frozenset(),
) -> str:
    """The user names the record they mean in their first words: a person by noun and name
    ("change the email of member Tyler Maddox"), a thing by its name ("cancel the Cell Biology
    course", round 36: "cancel event Future of AI Talk" lacked its article), a number as such
    ("cancel booking BKG-9"). Staff always do, a customer half the time and only by name
    (round 34: "staff open vaguely and hold back the one detail needed"; a customer's "one of
    my bookings" is how people talk)."""
    if (not staff and rng.random() < NAMED_UP_FRONT) or len(facts) < 2:
        return request  # a conversation with nothing left to ask is no conversation
    if any(_says(request, value) for value in facts.values()):
        return request  # the goal names its record already ("add an employee to Payments"):
        # another name would land on the wrong noun ("add employee Sabrina Harris", whose leave
        # the second step files)
    said_by = r"name|title|id" if staff else r"name|title"
    for key, value in facts.items():
        label = re.fullmatch(rf"(\w+(?: \w+)?) (?:{said_by})", key)
        if label is None or not isinstance(value, str) or "(" in value:
            continue
        noun = label.group(1)
        found = re.search(rf"\b(?:a|an|the) {re.escape(noun)}\b(?!')", request)
        if found and MAKES.search(request[: found.start()]):
            continue  # the record a step makes ("add an employee") is no record they name
        if found:
            thing = key.endswith(("name", "title")) and noun not in people
            said = f"the {value} {noun}" if thing else f"{noun} {value}"
            said = value if thing and noun in NAMED_ALONE else said  # "Pip and the Paper Boat"
            return f"{request[: found.start()]}{said}{request[found.end() :]}"
    return request


def _named(request: str, facts: dict[str, Any]) -> set[str]:
    """The nouns whose record the request names: "Melissa Williams's last lots; suspend the
    farmer" has said which farmer, so "the farmer" stays (never "suspend a farmer")."""
    return {
        key.rsplit(" ", 1)[0]
        for key, value in facts.items()
        if key.endswith((" name", " title")) and _says(request, value)
    }


def _says(request: str, value: Any) -> bool:
    """The request names ``value`` as a word of its own (a grade "A" is not in "Add …")."""
    if not isinstance(value, str) or len(value) < 3:
        return False
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", request) is not None


MAKES = re.compile(r"\b(?:add|create|register|open|hire|onboard|enrol|enroll|set up)\s+$", re.I)
CONTACT_FIELDS = frozenset({"email", "phone"})  # an entity with them is a person
NAMED_ALONE = frozenset({"book", "product", "item", "dish", "film", "movie", "title"})


NAMED_UP_FRONT = 0.5  # the share of customers' conversations that name their record at once


def who_you_are(
    compiled: CompiledEnvironment, state: dict[str, Any], voice: str | None, faker: Any
) -> list[str]:
    """ "You are Dana Ruiz. You are a member of the fitness club." (signed in as herself) or a
    member of staff."""
    persona = _personas().get(compiled.domain) or {}
    if voice == "self":
        name = _acting_label(compiled, state)
        place = persona.get("self") or f"You use the {words_of(compiled.domain)} service."
    else:
        name = plain_name(faker)
        place = persona.get("staff") or f"You work in {compiled.spec.title.lower()}."
    if not name:
        return [place]
    # "You are Ann Lee (you work on the front desk)": said with the name, so the opening, which
    # leaves the introduction out, does not start every chat with "I work on the … desk"
    return [f"You are {name} ({place[:1].lower()}{place[1:].rstrip('.')})."]


def bare_request(task: str) -> str:
    """The request without its framing: the greeting, the "I have a request about …" line and
    the thanks, which a persona replaces."""
    text, framing = task.strip(), _framing()
    while (found := framing.match(text)) and found.end() < len(text):
        text = text[found.end() :].lstrip()
    text = re.sub(rf"\s*(?:{_closers()})$", "", text)
    return text[:1].upper() + text[1:]


def in_second_person(request: str, verbs: frozenset[str]) -> str:
    """ "Drop my class booking. Also, I'd like …" → "You want to drop your class booking. Also,
    you'd like …"; a "please" inside a sentence becomes "you want the agent to", which
    ``opening_message`` turns back into "please"."""
    sentences = re.split(r"(?<!\bDr\.)(?<=[.!?])\s+", request.strip())  # not at "Dr."
    return " ".join(_second_person_sentence(s, verbs) for s in sentences if s)


def _second_person_sentence(sentence: str, verbs: frozenset[str]) -> str:
    connector, body = "", sentence
    if found := CONNECTOR.match(sentence):
        connector, body = found.group(1), found.group(2)
    for pattern, replacement in QUESTIONS:
        asked = re.sub(pattern, replacement, body[:1].upper() + body[1:])
        if asked != body[:1].upper() + body[1:]:
            body = asked
            break
    for pattern, replacement in FIRST_PERSON:
        body = re.sub(pattern, replacement, body)
    body = re.sub(r"^please,?\s+", "You want the agent to ", body, flags=re.I)
    body = re.sub(
        r"([,;:]\s+(?:and\s+)?(?:then\s+)?|\bso\s+)please\s+", r"\1you want the agent to ", body
    )
    first = body.split(" ", 1)[0].lower()
    numbered = NUMBERED_FIRST.match(body)  # "Pay run RUN-5 was set up by mistake": a record
    if first in verbs and first not in NOT_VERBS and not numbered:  # an order: "Void the invoice."
        body = f"You want the agent to {body[:1].lower()}{body[1:]}"
    body = _orders_wanted(body, verbs)  # "…, renew the permit; if not, …"
    if connector:
        body = body[:1].lower() + body[1:] if not body.startswith("I ") else body
    else:
        body = body[:1].upper() + body[1:]
    return connector + body


def _orders_wanted(body: str, verbs: frozenset[str]) -> str:
    """The orders inside a sentence said as wants: "if …, renew the permit; otherwise, …" →
    "if …, you want the agent to renew the permit; otherwise, …"; "The lot is done; open it"."""

    def want(match: re.Match[str]) -> str:
        verb = match.group(2)
        wanted = verb.lower() in verbs
        return match.group(1) + (f"you want the agent to {verb}" if wanted else verb)

    lead = r"((?:,|;|:)\s+(?:otherwise,\s+|if not,\s+|if it is not,\s+)?)"
    return re.sub(lead + r"([A-Za-z]+)\b", want, body)


def what_you_know(facts: dict[str, Any]) -> str:
    """The user's details, as τ-bench's instructions hold them ("Your booking is BKG-3."): the
    user knows what they are asked for. The opening cuts the task at these lines
    (``DETAILS`` there), so the agent still has to ask."""
    lines = []
    details = [
        f"{fact_words(key)}: {fact_value(key, value)}"
        for key, value in facts.items()
        if not key.endswith(" you mean")
    ]
    if details:
        lines.append(f"If asked, these are your details: {'; '.join(details)}.")
    for key, value in facts.items():
        if key.endswith(" you mean"):
            noun = key.removesuffix(" you mean")
            which = re.sub(r"^.*\((?:the one )?([^()]+)\)$", r"\1", str(value))
            if which == str(value):
                meant = "you say which one"
            elif re.fullmatch(r"the .+ one", which):  # "(the in progress one)"
                meant = f"you mean {which}"
            else:
                meant = f"you mean the one {which}"
            lines.append(f"If the agent finds more than one {noun} by that name, {meant}.")
    return " ".join(lines)


def fact_words(key: str) -> str:
    """A fact's name as a person says it ("weight in kg", not "weight kg")."""
    return field_noun(key.replace(" ", "_"))


def fact_value(key: str, value: Any) -> str:
    """A fact's value as a person writes it: "$2.99", "23 Aug 2025 at 17:00"."""
    text = format_value(value).rstrip(".!?")  # "We deployed a fix." before the next "; "
    return humanize_value(text, dollars=is_money(key.replace(" ", "_"), value))


def what_you_accept(kind: str | None, rng: random.Random) -> str:
    """How the user takes the outcome, by kind: a refusal is accepted once explained, either
    branch of a condition is fine once the agent says which applied."""
    base = (kind or "").split("+", 1)[0]
    lines = load_wording("conduct")
    options = lines.get(base) or lines["default"]
    return str(rng.choice(options))


def verbs_of(compiled: CompiledEnvironment) -> frozenset[str]:
    """Words an order can start with here: common verbs and the first words of the tools' names
    (a phrase's first word may be a noun: "Housekeeping finished the room")."""
    firsts = {words_of(tool.tool).split()[0] for tool in compiled.tools}
    return frozenset((firsts | COMMON_VERBS) - NOT_VERBS)


def first_mention_indefinite(request: str, nouns: set[str]) -> str:
    """A record first said as "a claim", not "the claim": nothing before the goal has named
    it, and the rating read "give the claim to the adjuster" as pointing at nothing. Later
    mentions keep "the"; "the only …" and "the new …" point at something and stay."""
    alternatives = "|".join(sorted((re.escape(n) for n in nouns if n), key=len, reverse=True))
    if not alternatives:
        return request
    request = re.sub(
        rf"\bone of the ({alternatives})'s ((?:[a-z]+ )*?[a-z]+?)s\b", r"a \1's \2", request
    )
    seen: set[str] = set()

    def indefinite(found: re.Match[str]) -> str:
        noun = found.group(2)
        if noun in seen:
            return found.group(0)
        seen.add(noun)
        article = "an" if article_for(noun) == "an" else "a"  # one record, never "some"
        return f"{article if found.group(1) == 'the' else article.capitalize()} {noun}"

    # only the record itself, never a compound ("the order time", "the member contact")
    after = r"(?='s\b|[.,;:!?]|$| (?:of|for|to|with|as|and|on|in|from|by|that|at|is|are|has)\b)"
    return re.sub(rf"\b([Tt]he) ({alternatives}){after}", indefinite, request)


def _entity_words(compiled: CompiledEnvironment) -> set[str]:
    return {words_of(entity) for entity in compiled.entity_attrs}


def _client_of(compiled: CompiledEnvironment) -> str:
    """Whom staff serve here ("guest", "member")."""
    return (_personas().get(compiled.domain) or {}).get("client") or "customer"


def client_asking(compiled: CompiledEnvironment) -> str | None:
    """Whom staff ask on behalf of, with its article ("a resident", "an employee"); None where
    the user asks for themselves (a household runs its own smart home: ``asks_for: self``)."""
    persona = _personas().get(compiled.domain) or {}
    if persona.get("asks_for") == "self":
        return None
    client = _client_of(compiled)
    return f"{'an' if article_for(client) == 'an' else 'a'} {client}"


def as_yourself(request: str, entity: str | None) -> str:
    """The request with the signed-in person's own record said as "you": "check the credit of
    the sender: …, top up the sender" → "check your credit: …, top you up"."""
    if not entity:
        return request
    noun = re.escape(entity)
    request = re.sub(rf"\bthe ((?:[a-z]+ ){{0,2}}?[a-z]+) of the {noun}\b", r"your \1", request)
    request = re.sub(rf"\bthe {noun}'s\b", "your", request)
    request = re.sub(rf"\bthe {noun}\b", "you", request)
    return re.sub(r"\b(up|out|off|in|back|down) you\b", r"you \1", request)


def _acting_entity(
    compiled: CompiledEnvironment,
    state: dict[str, Any],
    facts: dict[str, Any],
    solution: list[SolutionStep] = (),  # type: ignore[assignment]
) -> str | None:
    """The words of the signed-in person's entity ("sender") when the request is about their
    own record (a fact holds their name or id, or a step acts on their id: round 28's guest
    asked to "change the phone of a guest", his own), else None."""
    role = compiled.roles.get(str(state.get(compiled.acting_role_attr or "")))
    if role is None or role.entity is None:
        return None
    acting = str(state.get(compiled.acting_id_attr or ""))
    own = {_acting_label(compiled, state), acting}
    acted_on = any(acting == str(v) for step in solution for v in step.arguments.values())
    return words_of(role.entity) if acted_on or own & {str(v) for v in facts.values()} else None


def _acting_label(compiled: CompiledEnvironment, state: dict[str, Any]) -> str | None:
    """The signed-in person's name (their record's label), or None."""
    role = compiled.roles.get(str(state.get(compiled.acting_role_attr or "")))
    if role is None or role.entity is None:
        return None
    records = state.get(compiled.entity_attrs.get(role.entity, ""), {})
    record = records.get(str(state.get(compiled.acting_id_attr or ""))) or {}
    label = record.get(compiled.label_fields.get(role.entity, ""))
    return label if isinstance(label, str) and label.strip() else None


@cache
def _personas() -> dict[str, dict[str, str]]:
    return load_wording("personas")


@cache
def _framing() -> re.Pattern[str]:
    """A greeting, an opening line or a context line at the start of a request."""
    fixed = [*words("openers", "greetings"), *words("openers", "contexts")]
    fixed += [*words("requests", "openers")]
    shaped = [*words("requests", "owned_openings"), *words("requests", "general_openings")]
    options = [re.escape(line) for line in fixed if line]
    options += [
        re.escape(line).replace(r"\{things\}", r"[^.?!]+?").replace(r"\{requests\}", r"[^.?!]+?")
        for line in shaped
    ]
    options.sort(key=len, reverse=True)
    return re.compile(rf"(?:{'|'.join(options)})\s*")


@cache
def _closers() -> str:
    lines = [*words("openers", "closers"), *words("requests", "closers")]
    return "|".join(re.escape(line) for line in sorted(set(lines), key=len, reverse=True) if line)
