"""Which design the model writes for a topic: the one whose words the topic uses most, else one
chosen by the topic's hash, so any topic gets a design and always the same one."""

from __future__ import annotations

import hashlib
import re

from envmill.tasks.offline_llm.model_style.blood_bank import DESIGN as BLOOD_BANK
from envmill.tasks.offline_llm.model_style.dental_clinic import DESIGN as DENTAL_CLINIC
from envmill.tasks.offline_llm.model_style.design import Design
from envmill.tasks.offline_llm.model_style.tool_library import DESIGN as TOOL_LIBRARY
from envmill.tasks.offline_llm.responders import ChatRequest
from envmill.tasks.offline_llm.skeleton import topic_of

DESIGNS: tuple[Design, ...] = (BLOOD_BANK, TOOL_LIBRARY, DENTAL_CLINIC)
_WORD = re.compile(r"[a-z]+")


def topic_seed(topic: str) -> int:
    """A number from the topic (the same topic, the same number), for the states it fills."""
    return int.from_bytes(hashlib.sha256(topic.strip().lower().encode()).digest()[:4], "big")


def design_for(topic: str) -> Design:
    words = set(_WORD.findall(topic.lower()))
    scores = [len(words & design.words) for design in DESIGNS]
    best = max(scores)
    pool = [d for d, score in zip(DESIGNS, scores, strict=True) if score == best]
    return pool[topic_seed(topic) % len(pool)]


def design_of(request: ChatRequest) -> Design:
    return design_for(topic_of(request))
