"""Responder for stage ``skeleton_rules``: the fake model finds no contradiction in the rules it
is shown, and gives them back as they were.

Slip ``contradictory_rules`` makes it find one in the plan's own rules (rules 1 and 2), and give
them back without rule 2; the rewrite it is then shown has no such pair. Persistent, it finds
one in any rules, so the topic fails at this stage.
"""

from __future__ import annotations

import re

from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest
from envmill.tasks.offline_llm.skeleton import answer, slips_for, topic_of
from envmill.tasks.offline_llm.skeleton_source import topic_module

_RULE = re.compile(r"^\d+\. (.+)$", re.MULTILINE)


def respond_rules(request: ChatRequest) -> ChatReply:
    rules = _RULE.findall((request.texts("user") or [""])[0])
    planned = topic_module(topic_of(request)).plan["business_rules"]
    slips = slips_for(request, "contradictory_rules")
    if len(rules) < 2 or not any(s.persistent or rules == planned for s in slips):
        return answer({"contradictions": [], "rules": rules})
    contradiction = {
        "between": "rule 1 and rule 2",
        "explanation": "a state that keeps rule 1 can break rule 2, so the agent is told both",
    }
    return answer({"contradictions": [contradiction], "rules": [rules[0], *rules[2:]]})
