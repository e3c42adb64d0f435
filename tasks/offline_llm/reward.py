"""The ``reward_judge`` stage, played by the test endpoint: envmill's rules on the case the
prompt carries, so ``--local-llm`` with ``[reward] judge = "llm"`` gives the rules' verdicts
(a reason included) through the whole LLM path: requests, cache, costs, call records."""

from __future__ import annotations

import json

from pydantic import ValidationError

from envmill.tasks.judge import JudgeCase, judge_case
from envmill.tasks.llm.structured import ReplyError, extract_json
from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest


def respond_reward_judge(request: ChatRequest) -> ChatReply:
    """``{"passed", "reason"}`` for the case in the first user message's JSON; a case it cannot
    read is a failed verdict that says why (the model's own words, not a crash)."""
    user = next(iter(request.texts("user")), "")
    try:
        case = JudgeCase.model_validate(extract_json(user))
    except (ReplyError, ValidationError) as exc:
        reason = f"the case could not be read: {str(exc).splitlines()[0]}"
        return ChatReply(content=json.dumps({"passed": False, "reason": reason}))
    verdict = judge_case(case)
    if verdict is None:
        answer = {"passed": True, "reason": "the scenario expects nothing said"}
    else:
        answer = {"passed": verdict.passed, "reason": verdict.reason or "as the rules read it"}
    return ChatReply(content=json.dumps(answer))
