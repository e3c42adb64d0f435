"""The ``topics`` responder: plausible topic verdicts for any corpus task, from the catalog.

A task's words are matched against the catalog's domains, entities and operations; the best match
(ties and no-match cases broken by a hash of the task, so the answer is stable) names the topic,
and hashed qualifiers vary it, so 100+ distinct tasks get 100+ distinct topics. Tasks that
read like computations or public lookups are judged not stateful. Every verdict carries the
three-sentence introduction ``TopicVerdict`` requires.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache

from envmill.tasks.backends.procedural.catalog import list_domains, load_domain
from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest

# User requests in a corpus's voice, for the tests and benchmarks that drive this responder.
REQUEST_VERBS = [
    "Book",
    "Cancel",
    "Reschedule",
    "Check the status of",
    "Refund",
    "Update",
    "Transfer",
]
REQUEST_OBJECTS = [
    "a flight to Rome",
    "my dentist appointment",
    "order 4411",
    "the library loan for Dune",
    "two concert tickets",
    "a van for Tuesday's deliveries",
    "my annual leave request",
    "the stock of item SKU-88",
    "the enrolment in Biology 101",
    "a beach house for July",
    "support ticket 5120",
    "500 dollars to savings",
]

STATELESS_WORDS = frozenset(
    "weather translate translation calculate calculator convert joke define definition "
    "wikipedia news forecast synonym poem square root time timezone".split()
)
FEATURES = (
    "with manager approvals",
    "with audit history",
    "with daily limits",
    "with waitlists",
    "with loyalty tiers",
    "with refunds and penalties",
    "with seasonal capacity",
    "with priority handling",
    "with reminders",
    "with shared accounts",
    "with fees and discounts",
    "with blackout dates",
)
SCALES = (
    "for a small business",
    "for a regional operator",
    "for a national chain",
    "for a franchise network",
    "for a city office",
    "for a startup",
    "for a cooperative",
    "for a university campus",
)
CHANNELS = ("at the front desk", "by phone", "online", "through a partner portal")
GENERIC_WORDS = frozenset("get find list count sum by in of to the name a an for".split())
_WORD = re.compile(r"[a-z]+")


@lru_cache(maxsize=1)
def _options() -> list[tuple[str, str, str, frozenset[str]]]:
    """(domain title, entity title, operation phrase, keywords) for every catalog operation."""
    options = []
    for name in list_domains():
        domain = load_domain(name)
        for entity_name, entity in domain.entities.items():
            entity_title = entity.title or entity_name.replace("_", " ")
            for operation in entity.operations:
                words = {*_WORD.findall(operation.name), *_WORD.findall(entity_name)}
                words |= {*_WORD.findall(entity.plural or ""), *_WORD.findall(name)}
                words -= GENERIC_WORDS
                phrase = operation.name.replace("_", " ")
                options.append((domain.title.lower(), entity_title, phrase, frozenset(words)))
    return options


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def verdict_for(task: str) -> dict[str, object]:
    """The topic verdict the fake model gives for one task."""
    words = set(_WORD.findall(task.lower()))
    digest = _digest(task)
    options = _options()
    scores = [len(words & keywords) for *_, keywords in options]
    best = max(scores)
    pool = [i for i, score in enumerate(scores) if score == best]
    domain, entity, phrase, _ = options[pool[digest % len(pool)]]
    feature = FEATURES[(digest >> 16) % len(FEATURES)]
    scale = SCALES[(digest >> 24) % len(SCALES)]
    channel = CHANNELS[(digest >> 32) % len(CHANNELS)]
    # a stateless word decides: with a catalog of 40 domains nearly every task shares some
    # keyword with an operation, so a keyword match alone no longer says "stateful"
    stateful = not words & STATELESS_WORDS
    return {
        "stateful": stateful,
        "domain_specific": stateful,
        "reason": (
            f"The task works on {entity} records kept by the {domain} system."
            if stateful
            else "The task needs no state a system keeps between requests."
        ),
        "topic": f"{domain}: {phrase} {feature}, {channel}, {scale}",
        "introduction": (
            f"The {domain} system {scale} keeps {entity} records and their history. "
            f"Staff and customers {phrase} {channel}, {feature}. "
            "Every change is checked against the system's rules before it is saved."
        ),
        "usefulness": 4 if best > 1 else 3,
        "modelability": 5 if stateful else 1,
    }


def warm_topics() -> None:
    _options()


def respond_topics(request: ChatRequest) -> ChatReply:
    """The verdict for the task in the first user message (repair turns come later)."""
    return ChatReply(content=json.dumps(verdict_for((request.texts("user") or [""])[0])))
