"""He or she for the one person a sentence names, where the catalog's words say "they".

Round 74's raters marked "Leah Davis's delivered order arrived damaged; they want to send it
back" and "Sabrina Harris is leaving the company; please offboard them" as a generator's voice.
Only the people of the state count (a customer, an employee: not a book's author, a restaurant
or a street that starts with a first name, a breaker's finds), and only a sentence that names
one of them and no one else; a hint in brackets names no one. A first name says she or he by
Faker's en_US lists; one on both lists ("Taylor") keeps "they", and so does a "they" whose verb
is not one this module knows how to agree ("they usually pay" stays as it is).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from faker.providers.person.en_US import Provider as People

SENTENCE = re.compile(r"(?<=[.!?] )")
SPEAKER = re.compile(r"\b(?:I'm|I am|You are|This is)\s*$")
BRACKETED = re.compile(r"\([^()]*\)")
FORMS = {
    "she": {"they": "she", "them": "her", "their": "her", "theirs": "hers", "themself": "herself"},
    "he": {"they": "he", "them": "him", "their": "his", "theirs": "his", "themself": "himself"},
}
SHORT = {"they're": "'s", "they've": "'s", "they'd": "'d", "they'll": "'ll"}
THEY = re.compile(
    r"\b(they're|they've|they'd|they'll|they|them|their|theirs|themself)\b"
    r"(?:( are| were| have| don't| do| aren't| weren't| haven't)\b"
    r"|((?: (?:just|also|still|really|already|never|only|no longer|now))*) ([a-z']+)\b)?",
    re.I,
)
SINGULAR = {" are": " is", " were": " was", " have": " has", " don't": " doesn't", " do": " does",
            " aren't": " isn't", " weren't": " wasn't", " haven't": " hasn't"}  # fmt: skip
# the verbs a "they" of the catalog takes, as "she" takes them; past tenses and modals as they are
AGREEING = {"have": "has", "do": "does", "go": "goes"} | {
    verb: f"{verb}s"
    for verb in "want need get take keep make use work think see come earn count live plan "
    "expect hope like prefer owe know accept approve borrow buy renew reserve understand "
    "disagree leave move".split()
} | {"apply": "applies", "qualify": "qualifies", "pay": "pays", "say": "says"}  # fmt: skip
AS_THEY_ARE = frozenset(
    "got lost bought found sold gave took threw made paid broke forgot put set left had sent came "
    "went saw knew kept spent did told wrote can could will would should must might may "
    "can't couldn't won't wouldn't shouldn't didn't mustn't".split()
)


@cache
def pronoun_of(first_name: str) -> str:
    """ "she", "he", or "they" when the name does not say."""
    woman, man = first_name in People.first_names_female, first_name in People.first_names_male
    return "she" if woman and not man else "he" if man and not woman else "they"


def is_first_name(word: str) -> bool:
    return word in People.first_names_female or word in People.first_names_male


def with_pronouns(text: str, people: Iterable[str]) -> str:
    """The text with "they"/"them"/"their" after the one person of ``people`` (full names) a
    sentence names said as that person's pronoun ("they want" -> "she wants"). The speaker
    ("I'm David Hoffman …; price them") is no "they"."""
    names = [name for name in people if " " in name and name in text]
    firsts = {name.split()[0]: name for name in names}  # "William" after "William Russell"
    return "".join(_in_one_sentence(s, names, firsts) for s in SENTENCE.split(text))


def _in_one_sentence(sentence: str, names: list[str], firsts: dict[str, str]) -> str:
    plain = BRACKETED.sub(lambda m: " " * len(m[0]), sentence)  # "(the one by Angela Savage)"
    named = {name for name in names if name in plain}
    named |= {firsts[w] for w in re.findall(r"\b[A-Z][a-z]+\b", plain) if w in firsts}
    if len(named) != 1:
        return sentence  # no one, or two people "they" may mean together
    (name,) = named
    said = pronoun_of(name.split()[0])
    at = plain.find(name) if name in plain else plain.find(name.split()[0])
    if said == "they" or SPEAKER.search(plain[:at]):
        return sentence
    end = at + len(name if name in plain else name.split()[0])
    forms = FORMS[said]
    return sentence[:end] + THEY.sub(lambda m: _said(m, forms), sentence[end:])


def _said(match: re.Match, forms: dict[str, str]) -> str:
    word, aux, adverbs, verb = match[1], match[2], match[3], match[4]
    lower = word.lower()
    said = forms["they"] + SHORT[lower] if lower in SHORT else forms[lower]
    said = said.capitalize() if word[0].isupper() else said
    if lower != "they":
        return said + match[0][len(word) :]
    if aux:
        return said + SINGULAR[aux]
    if verb is None:
        return said
    past = verb.endswith("ed") and not verb.endswith("eed")  # "proceed" is no past
    agreed = AGREEING.get(verb) or (verb if verb in AS_THEY_ARE or past else None)
    if agreed is None:
        return match[0]  # a verb it does not know: "they" stays, and agrees
    return f"{said}{adverbs or ''} {agreed}"
