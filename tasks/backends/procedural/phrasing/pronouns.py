"""He or she for the one person a task names, where the catalog's words say "they".

Round 74's raters marked "Leah Davis's delivered order arrived damaged; they want to send it
back" and "Sabrina Harris is leaving the company; please offboard them" as a generator's
voice. A person's first name comes from Faker's en_US lists, which say whether it is a woman's or
a man's; a name on both lists ("Taylor"), on neither, or a task naming two people keeps "they".
"""

from __future__ import annotations

import re
from functools import cache

from faker.providers.person.en_US import Provider as People

CAPITALS = re.compile(r"\b[A-Z][a-z-]+(?: [A-Z][a-z-]+)*")
SENTENCE = re.compile(r"(?<=[.!?] )")
SPEAKER = re.compile(r"\b(?:I'm|I am|You are|This is)\s*$")
FORMS = {
    "she": {"they": "she", "them": "her", "their": "her", "theirs": "hers", "themself": "herself"},
    "he": {"they": "he", "them": "him", "their": "his", "theirs": "his", "themself": "himself"},
}
SHORT = {"they're": "'s", "they've": "'s", "they'd": "'d", "they'll": "'ll"}
THEY = re.compile(
    r"\b(they're|they've|they'd|they'll|they|them|their|theirs|themself)\b"
    r"(?:( are| were| have| don't| do| aren't| weren't| haven't)\b"
    r"|((?: (?:just|also|still|really|already|never|only|no longer|now))*) ([a-z]+)\b)?",
    re.I,
)
SINGULAR = {" are": " is", " were": " was", " have": " has", " don't": " doesn't", " do": " does",
            " aren't": " isn't", " weren't": " wasn't", " haven't": " hasn't"}  # fmt: skip
PAST_OR_MODAL = frozenset(
    "got lost bought found sold gave took threw made paid broke forgot put set left had sent came "
    "went saw knew kept spent cut hit let read can can't could will won't would should must might "
    "may".split()
)


@cache
def pronoun_of(first_name: str) -> str:
    """ "she", "he", or "they" when the name does not say."""
    woman, man = first_name in People.first_names_female, first_name in People.first_names_male
    return "she" if woman and not man else "he" if man and not woman else "they"


def with_pronouns(text: str) -> str:
    """The text with "they"/"them"/"their" said as the pronoun of the person named last before
    them in the same sentence ("they want" -> "she wants", "they're" -> "she's"). The speaker
    ("I'm David Hoffman …; price them") is no "they"."""
    firsts = {first for *_, first in _people(text, set())}  # "William" after "William Russell"
    return "".join(_in_one_sentence(s, firsts) for s in SENTENCE.split(text))


def _in_one_sentence(sentence: str, firsts: set[str]) -> str:
    people = _people(sentence, firsts)
    if not people:
        return sentence
    pieces = [sentence[: people[0][1]]]
    for (start, end, first), following in zip(people, [*people[1:], None], strict=True):
        piece = sentence[end : following[0] if following else len(sentence)]
        said = pronoun_of(first)
        if said != "they" and not SPEAKER.search(sentence[:start]):
            piece = THEY.sub(lambda m, forms=FORMS[said]: _said(m, forms), piece)
        pieces += [piece, sentence[following[0] : following[1]] if following else ""]
    return "".join(pieces)


def _people(text: str, firsts: set[str]) -> list[tuple[int, int, str]]:
    """Where a person is named, as (start, end, first name): a first name and a surname
    ("Member John Carpenter" from "John"), or a first name alone that an earlier full name has
    ("William" after "William Russell")."""
    found = []
    for capitals in CAPITALS.finditer(text):
        words = list(re.finditer(r"[A-Z][a-z-]+", capitals[0]))
        first = next((w for w in words[:-1] if _is_a_person(w[0])), None)
        if first is not None:
            found.append((capitals.start() + first.start(), capitals.end(), first[0]))
        elif len(words) == 1 and words[0][0] in firsts:
            found.append((capitals.start(), capitals.end(), words[0][0]))
    return found


def _is_a_person(first: str) -> bool:
    return first in People.first_names_female or first in People.first_names_male


def _said(match: re.Match, forms: dict[str, str]) -> str:
    word, aux, adverbs, verb = match[1], match[2], match[3], match[4]
    lower = word.lower()
    if lower in SHORT:
        said = forms["they"] + SHORT[lower]
    else:
        said = forms[lower]
    if word[0].isupper():
        said = said.capitalize()
    if lower != "they":
        return said + (aux or "") + (adverbs or "") + (f" {verb}" if verb else "")
    if aux:
        return said + SINGULAR[aux]
    if verb:
        return f"{said}{adverbs or ''} {_agreeing(verb)}"
    return said


def _agreeing(verb: str) -> str:
    """The verb after "she": "want" -> "wants", "apply" -> "applies", "go" -> "goes"; a past
    tense or a modal as it is."""
    if verb in PAST_OR_MODAL or verb.endswith("ed") or verb.endswith("s"):
        return verb
    if verb in {"have", "do", "go", "are", "were"}:
        return {"have": "has", "do": "does", "go": "goes", "are": "is", "were": "was"}[verb]
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    if re.search(r"(?:s|sh|ch|x|z|o)$", verb):
        return verb + "es"
    return verb + "s"
