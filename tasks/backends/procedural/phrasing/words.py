"""Word-level helpers of the task phrasing: values as people write them, articles, capitals, the
vague (conversational) form of a template, and the facts a simulated user may reveal.

Kept apart from :mod:`phrasing` so that module reads as "pick, fill, join"; nothing here draws
random numbers, so these rules never shift a scenario's rng.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from envmill.tasks.backends.procedural.checks.derive import words_of
from envmill.tasks.backends.procedural.phrasing.lookup_words import phrase
from envmill.tasks.backends.procedural.scenarios.chains import ArgMention, ChainStep
from envmill.tasks.core.field_words import (
    COUNTED,
    MONEY_NAMES,
    MONEY_WORDS,
    field_noun,
    singular,
)
from envmill.tasks.core.opening import ONE_PLEASE

ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$")
# words after a value that are not the noun it describes ("{amount} towards", "{time} would")
NOT_NOUNS = frozenset(
    {
        "to",
        "for",
        "on",
        "at",
        "in",
        "into",
        "by",
        "with",
        "and",
        "or",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "please",
        "but",
        "so",
        "then",
        "of",
        "towards",
        "out",
        "off",
        "per",
        "via",
        "each",
        "now",
        "instead",
        "today",
        "would",
        "will",
        "x",
        "more",
    }
)
UNIT_WORDS = ("dollars", "km", "kilometres", "kilometers", "per night")
# words a template puts before an entity's id that name its type ("cancel reservation {id}")
TYPE_SYNONYMS = (
    "reservation",
    "stay",
    "visit",
    "po",
    "maintenance",
    "hold",
    "section",
    "profile",
    "booking",
    "desk",
    "account",
    "parking",
)
IDENTITY = r"(?:I'm|I am|[Mm]y name is|[Mm]y (?:[\w-]+ ){0,2}?(?:ID|id|number|account|booking) is)"
STATEMENT = re.compile(
    r"^(?:(?:the|a|an|my|our|i'm|i've|i|we|nobody|someone|it|there|this|that|sadly)\b|\S+ just\b"
    r"|(?:\w+ ){0,2}\{[^}]+\}\s+(?:is|are|has|have|had|was|were|won't|can't|just|looks|needs"
    r"|came|got|gave|went|broke|ran|left|arrived)\b)",
    re.I,
)
VOWEL_EXCEPTIONS = ("uni", "use", "usu", "eu", "one", "once", "uti")


# what happened, said in the passive ("{n} units of {item} were damaged"): news, not an order
NEWS = re.compile(r"\b(?:was|were|has been|have been)\s+[a-z]+(?:ed|en)\b")


def order_phrases(phrases: Iterable[str]) -> list[str]:
    """The orders among ``phrases``, each cut to its order ("Please cancel my order {id}; I
    changed my mind" → its first clause, "X's case is about to start; add {amount} to their
    retainer" → its second, which holds the values): what a branch of a condition can say."""
    cut = [_order_clause(p) for p in phrases if not is_statement(p)]
    return [p for p in cut if "{" in p and not is_statement(p) and not NEWS.search(p)]


def _order_clause(phrase: str) -> str:
    """The clause with the most values other than a record's name, the first of equals."""
    clauses = [c.strip() for c in re.split(r"[;:]", phrase)]
    valued = [c for c in clauses if not is_statement(c)] or clauses

    def values(clause: str) -> tuple[int, int]:
        names = re.findall(r"\{[^}]*\}", clause)
        return sum(not n.endswith(".label}") for n in names), len(names)

    return max(valued, key=values)


def is_statement(phrase: str) -> bool:
    """A phrase that tells what happened rather than asks for an act ("The truck just left.",
    "I'm bringing back the book"): it cannot be a branch of a condition."""
    return bool(STATEMENT.match(phrase.strip()))


def split_end(text: str) -> tuple[str, str]:
    """("Could you move it", "?") from "Could you move it?"; a statement ends with "."."""
    body = text.rstrip(" .!?")
    marks = text[len(body) :].strip()
    return body, ("?" if "?" in marks else "!" if "!" in marks else ".")


def format_value(value: Any) -> str:
    """A value as a user would write it: plain text, numbers without noise, yes/no for booleans."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        text = f"{value:.2f}".rstrip("0").rstrip(".")
        return text if float(text) == value else repr(value)
    if isinstance(value, str | int):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def humanize_value(text: str, *, dollars: bool = False) -> str:
    """ISO dates as "9 Feb 2025" (with " at 16:00" for a time), money as "$1,250.50"."""
    if ISO_DATE.match(text):
        day = date.fromisoformat(text)
        return f"{day.day} {day:%b %Y}"
    if ISO_DATETIME.match(text):
        moment = datetime.fromisoformat(text)
        return f"{moment.day} {moment:%b %Y} at {moment:%H:%M}"
    if dollars and re.fullmatch(r"-?\d+(\.\d+)?", text):
        number = float(text)
        return f"${number:,.2f}" if "." in text else f"${int(number):,}"
    return PROPER.sub(lambda found: found[0].title(), text)


# words a value holds in lower case (an enum's) that English writes with a capital: "the
# american restaurant" and "its cuisine is american" read as a leaked code (round 44)
PROPER = re.compile(
    r"\b(?:american|italian|mexican|japanese|chinese|indian|greek|french|thai|korean|"
    r"vietnamese|spanish|turkish|lebanese|mediterranean|caribbean|german|english|european|"
    r"asian|african|british|irish|brazilian|ethiopian|middle eastern)\b"
)


def is_money(name: str, value: Any) -> bool:
    """An amount of money, by its argument name ("amount", "nightly_rate", "cost_estimate");
    not a count that shares a word with one (a breaker: "The copies total of … is $3", "The
    leave balance … is $1")."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    said = words_of(name).split()
    words = set(said[: said.index("per")] if "per" in said[1:] else said)  # "price per kg"
    return (bool(MONEY_WORDS & words) and not words & COUNTED) or name in MONEY_NAMES


def article_for(phrase: str) -> str:
    """ "a", "an", or "some" for a plural ("some tickets")."""
    word = phrase.split()[0] if phrase.split() else ""
    if word.endswith("s") and not word.endswith("ss") and len(phrase.split()) == 1:
        return "some"
    vowel = word[:1].lower() in "aeiou" and not word.lower().startswith(VOWEL_EXCEPTIONS)
    return "an" if vowel else "a"


def plural_of(phrase: str) -> str:
    """ "appointments", "properties", "leave requests": the last word made plural."""
    head, _, last = phrase.rpartition(" ")
    if re.search(r"[^aeiou]y$", last):
        last = last[:-1] + "ies"
    elif re.search(r"(s|x|z|ch|sh)$", last):
        last += "es"
    else:
        last += "s"
    return f"{head} {last}".strip()


def lower_first(text: str) -> str:
    """Lower-case the first letter after a connector, unless the first word is "I", an acronym
    or an id ("I'd like …", "PO-7 …")."""
    first = text.split(" ", 1)[0]
    if first == "I" or first.startswith("I'") or re.search(r"\d", first):
        return text
    if len(first) > 1 and first.isupper():
        return text
    return text[:1].lower() + text[1:]


def tidy_text(text: str) -> str:
    """Single spaces, one mark per sentence end, and "an" before a vowel sound."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.;:?!])", r"\1", text)
    text = re.sub(r"([.?!])[.]+", r"\1", text)
    text = re.sub(r"[,;]([.?!])", r"\1", text)
    text = re.sub(r"([.?!]),", r"\1", text)
    text = ONE_PLEASE.sub(r"\1\2", text)  # "Please cancel my appointment, please."
    text = _one_please(text)
    text = re.sub(r"(^|[.!?] )There are 1 of us\b", r"\1It's just me", text)
    text = re.sub(r"\bthere are 1 of us\b", "it's just me", text)
    text = re.sub(r"(?<![\w.,$-])1 ((?:[a-z]+ )?)([a-z]{3,})\b", _singular_after_one, text)
    text = re.sub(r"(?<![\w.,$-])1 ([a-z]+ [a-z]+) ([a-z]{3,}s)\b", _one_of_a_compound, text)

    def article(match: re.Match[str]) -> str:
        word = match.group(2)
        if word.lower().startswith(VOWEL_EXCEPTIONS) or len(word) > 1 and word.isupper():
            return match.group(0)
        return f"{match.group(1)}n {word}"

    return re.sub(r"\b([Aa]) ([aeiouAEIOU][\w-]*)", article, text)


def _one_please(text: str) -> str:
    """Every "please" after a sentence's first goes ("…so please add it; if it is above,
    refund the excess"); a name ("Please Touch Museum") is no request."""
    sentences = re.split(r"(?<=[.!?])\s+", text)
    for index, sentence in enumerate(sentences):
        first = re.search(r"\b[Pp]lease\b", sentence)
        if first:
            rest = re.sub(r"\bplease (?=[a-z])", "", sentence[first.end() :])
            sentences[index] = sentence[: first.end()] + rest
    return " ".join(sentences)


def _singular_after_one(match: re.Match[str]) -> str:
    """ "1 tickets" -> "1 ticket", "1 premium seats" -> "1 premium seat"."""
    between, word = match.group(1), match.group(2)
    if word.endswith("ed") and between.strip().endswith("s"):  # "1 hour parked"
        return f"1 {_one(between.strip())} {word}"
    if word in NOT_NOUNS and between.strip() and between.strip() not in NOT_NOUNS:
        return f"1 {_one(between.strip())} {word}"  # "1 tickets for" -> "1 ticket for"
    if word in NOT_NOUNS or between.strip() in NOT_NOUNS or word.endswith("ss"):
        return match.group(0)
    return f"1 {between}{_one(word)}"


def _one_of_a_compound(match: re.Match[str]) -> str:
    """ "1 cancelled work orders" -> "1 cancelled work order"."""
    between, word = match.group(1), match.group(2)
    if set(between.split()) & NOT_NOUNS or word in NOT_NOUNS or word.endswith("ss"):
        return match.group(0)
    return f"1 {between} {_one(word)}"


def _one(word: str) -> str:
    return singular(word)  # "1 completed batch", not "batche"


def vague_template(template: str, mentions: Iterable[ArgMention]) -> str:
    """The template a conversational goal is filled from: no "I'm {x}" self-introductions, no
    type word before an entity ("cancel reservation {id}" -> "cancel {id}", read "cancel the
    booking"), and values used as adjectives or counts dropped ("the {plan} plan" -> "a different
    plan", "{seats} more seats" -> "some more seats")."""
    for mention in mentions:
        ph = rf"\{{{mention.name}(?:\.label)?\}}"
        if mention.source == "entity_id":
            template = _drop_entity_context(template, mention, ph)
        else:
            template = _drop_value_context(template, mention, ph)
    template = NEW_VALUE.sub(_change_the, template)
    return re.sub(r"^[\s,;.]+", "", template)


# "set request {id} to a new priority" says it as a form does; "change the priority of
# request {id}" as a person does (round 44)
NEW_VALUE = re.compile(r"^(please\s+)?(set)\s+(\S.*?)\s+to a new ([a-z ]+?)([.;!]|$)", re.I)


def _change_the(found: re.Match[str]) -> str:
    verb = "Change" if found[2][0].isupper() else "change"
    return f"{found[1] or ''}{verb} the {found[4]} of {found[3]}{found[5]}"


def value_free_template(template: str, mentions: Iterable[ArgMention]) -> str:
    """A vague template with the values the user will give when asked taken out, keeping what
    is changed ("Set the price of part {id} to {price}" -> "Set the price of part {id}";
    "Transfer {amount} from {a} …" -> "Transfer some money from {a} …"; "…; reason: {reason}"
    -> "…"; "delivered {n} kg of {material}" -> "delivered {material}")."""
    for mention in mentions:
        if mention.source == "entity_id" or mention.described:
            continue
        ph = rf"\$?\{{{mention.name}(?:\.label)?\}}"
        template = re.sub(rf"[;,]\s*[\w ]{{1,20}}:\s*{ph}", "", template)
        template = re.sub(  # "my annual income is now {x}" -> "my annual income has changed"
            rf"\b((?:my|the|their|its)\s+[\w ]{{1,30}}?)\s+(?:is|are)\s+now\s+{ph}",
            r"\1 has changed",
            template,
        )
        template = re.sub(rf"{ph}\s+(?:[a-z]+\s+)?of\s+", "", template)  # "{n} kg of {lot}"
        template = re.sub(
            rf"\s+(?:to|as|at|for|on|into|by|of|with|until|till)\s+(?:the\s+|an?\s+)?{ph}",
            "",
            template,  # "is delayed until {departs_at}" -> "is delayed", not "until the departure"
        )
        # "deposit some money into …", not "the amount I have in mind"
        said = (
            "some money"
            if is_money(mention.name, mention.value)
            else f"the {field_noun(mention.name)}"
        )
        template = re.sub(rf"\b(?:the|an?)\s+{ph}", said, template)
        template = re.sub(ph, said, template)
    template = re.sub(
        r"\b(approve|authori[sz]e|grant)\s+some money\b", r"\1 an amount", template, flags=re.I
    )
    return re.sub(r"\s+([,.;?!])", r"\1", template)


def described_template(template: str, mentions: Iterable[ArgMention]) -> str:
    """For a record the task describes ("the only frozen card of …"), drop the type word and
    the determiner before its placeholder ("block my card {card_id}" -> "block {card_id}")."""
    for mention in mentions:
        if mention.described:
            ph = rf"\{{{mention.name}(?:\.label)?\}}"
            template = _drop_entity_context(template, mention, ph)
            # "cancel my approved {id}": the description says which ("my approved leave request")
            template = re.sub(
                rf"\b(?:my|your|our|the|this|that|an?)\s+(?:[a-z]+\s+)?(?={ph})",
                "",
                template,
                flags=re.I,
            )
    return template


def has_determiner(prefix: str) -> bool:
    """Whether the text before a placeholder already says "my", "the" or "a" (then a vague
    entity reads "my booking", not "my the booking")."""
    return bool(re.search(r"\b(?:my|your|our|the|this|an?)\s+(?:[a-z]+\s+)?$", prefix, re.I))


def _drop_entity_context(template: str, mention: ArgMention, ph: str) -> str:
    entity = mention_entity(mention)
    words = {*entity.split(), *(w + "s" for w in entity.split())}
    template = re.sub(rf"\b(?:(?:{_either(words)})\s+){{1,2}}(?={ph})", "", template, flags=re.I)
    # a synonym that is a verb there stays: "Can you hold {id}" (round 41: "Can you the single
    # room for me")
    verb_at = r"(?<!\byou )(?<!\bto )(?<!\bplease )(?<!^)"
    synonym = rf"{verb_at}\b(?:{_either(set(TYPE_SYNONYMS))})\s+(?={ph})"
    template = re.sub(synonym, "", template, flags=re.I)
    return re.sub(rf"(^|[,;.]?\s+){IDENTITY}\s+{ph}(?=[.,;?!]|$)", "", template)


def _either(words: set[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


def _drop_value_context(template: str, mention: ArgMention, ph: str) -> str:
    # a trailing aside the user fills in when asked: "…, {hours} hours parked."
    template = re.sub(rf",\s*{ph}\s+[a-z ]{{1,24}}(?=[.;!?]|$)", "", template)
    noun = words_of(mention.name).split()[-1]
    if len(noun) > 2 and noun not in NOT_NOUNS:  # "with grade {grade}" -> "with {grade}"
        template = re.sub(rf"\b{re.escape(noun)}\s+(?={ph})", "", template, flags=re.IGNORECASE)
    units = "|".join(UNIT_WORDS)
    template = re.sub(rf"({ph})\s+(?:{units})\b", r"\1", template)
    match = re.search(rf"(\b(?:an?|the)\s+)?{ph}(?=[\s-]+([a-z]+)(?: ([a-z]+))?)", template)
    if match is None:
        return template
    following = match.group(2)
    number = mention.source in ("int", "float")
    if following in NOT_NOUNS and following != "more":
        return template
    plural = any(w.endswith("s") and not w.endswith("ss") for w in match.groups()[1:] if w)
    if number and plural and following != "more" and mention.value == 1:  # "a seat", never
        after = re.sub(rf"^[\s-]+{following}\b", f" {singular(following)}", template[match.end() :])
        return template[: match.start()] + "a" + after  # "some seats" for one (round 37)
    if number and (following == "more" or plural):
        return template[: match.start()] + "some" + template[match.end() :]
    if number:
        return template
    article = (match.group(1) or "").strip().lower()
    replacement = "a different" if article == "the" else "a" if article else ""
    if not article and re.search(r"\bto\s+$", template[: match.start()]):
        replacement = "a new"  # "set it to a new priority", never "set it to priority"
    rest = template[match.end() :].lstrip(" -")
    return (template[: match.start()] + replacement + " " + rest).replace("  ", " ")


def collect_user_facts(steps: list[ChainStep]) -> dict[str, Any]:
    """What a simulated user may reveal: the labels, ids, amounts and dates the chain used."""
    facts: dict[str, Any] = {}
    for step in steps:
        otherwise = step.condition.otherwise.mentions if step.condition else []
        for mention in [*step.mentions, *otherwise]:
            for key, value in _facts_of(mention):
                _put_fact(facts, key, value)
    return facts


def _facts_of(mention: ArgMention) -> list[tuple[str, Any]]:
    if mention.source != "entity_id":  # "weight in kg", not "weight kg"
        return [] if mention.described else [(field_noun(mention.name), mention.value)]
    if mention.described or mention.signed_in:  # the agent finds the id: the task says which
        return []  # record, or it is the speaker's own (the session shows it)
    entity = mention_entity(mention)
    label_words = words_of(mention.label_field or "name")
    label_key = label_words if label_words.startswith(entity) else f"{entity} {label_words}"
    if mention.by_label and mention.hint:
        return [(label_key, mention.label), (phrase("which_fact", entity=entity), mention.hint)]
    if mention.by_label:
        return [(label_key, mention.label)]
    role = ROLE_WORDS.get(mention.name.split("_")[0], "")  # "to_account_id": receiving
    pairs: list[tuple[str, Any]] = [(f"{role} {entity} id".strip(), mention.value)]
    return pairs + ([(label_key, mention.label)] if mention.label else [])


# what an id argument's prefix says of its record's part in the call ("to_account_id")
ROLE_WORDS = {"to": "receiving", "from": "sending", "source": "source", "target": "target"}


def _put_fact(facts: dict[str, Any], key: str, value: Any) -> None:
    """Add a fact; a second, different value under the same name gets a numbered key."""
    candidate, number = key, 1
    while candidate in facts:
        if facts[candidate] == value:
            return
        number += 1
        candidate = f"{key} {number}"
    facts[candidate] = value


def mention_entity(mention: ArgMention) -> str:
    """The entity an id argument names, in words ("leave request"), even without a manifest."""
    if mention.entity:
        return words_of(mention.entity)
    return words_of(re.sub(r"_?ids?$", "", mention.name) or mention.name)
