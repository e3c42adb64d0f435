"""Responders for the environment check: the testing agent's calls, its probe state, and the
judge's verdicts.

The testing agent reads the tools and the state shown in the prompt and, with the compiled
manifest of the topic's module, proposes what a careful tester would (``probe_plan``): positive
calls on records in a status the tool accepts, set up by an earlier call where the state has
none, at the time the tool waits for; negative calls with an unknown id, a value outside the
allowed ones or an empty text. Asked for a probe state, it changes what stood in each tool's way.
The judge reads each probe's result and state diff and says what a careful reviewer would; the
slip ``judge_fails_all`` fails every probe, ``judge_warns`` doubts one change per answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from envmill.tasks.offline_llm.probe_fit import probe_state_answer
from envmill.tasks.offline_llm.probe_plan import Planner, laid_out
from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest
from envmill.tasks.offline_llm.skeleton import answer, slips_for, topic_of
from envmill.tasks.offline_llm.skeleton_source import topic_module

_RAISED = re.compile(r"^[A-Z]\w*(?:Error|Exception|Exit|Interrupt): ")
_MISCALLED = re.compile(
    r"^TypeError: .*(?:unexpected keyword argument|required positional argument)"
)
_HOST = re.compile(r"^(?:timeout|killed|too_large|protocol|dead|host|program): ")


def fenced_json(text: str, label: str) -> Any:
    """The JSON of the first fenced block after the line ``label``."""
    at = text.find(label)
    found = re.search(r"```(?:json)?\n(.*?)\n```", text[at:], re.DOTALL) if at >= 0 else None
    return json.loads(found.group(1)) if found else None


def respond_probe(request: ChatRequest) -> ChatReply:
    text = (request.texts("user") or [""])[0]
    tools = fenced_json(text, "Tools to test:") or []
    state = fenced_json(text, "Initial state:") or {}
    module = topic_module(topic_of(request))
    pending = {tool["name"]: len(tool.get("calls_needed", ["positive"])) for tool in tools}
    planner = Planner(module, state, bool(slips_for(request, "naive_tester")), pending=pending)
    units = [
        planner.unit(tool["name"], kind)
        for tool in tools
        for kind in tool.get("calls_needed", ["positive"])
    ]
    return answer({"calls": laid_out([unit for unit in units if unit is not None])})


def respond_probe_state(request: ChatRequest) -> ChatReply:
    """A probe state that clears what stood in each tool's way, and the calls on it
    (``useless_probe_state``: no change, the refused calls again; ``bad_probe_state``: an
    attribute the class lacks)."""
    text = (request.texts("user") or [""])[0]
    tools = fenced_json(text, "Tools that never succeeded:") or []
    state = fenced_json(text, "Initial state:") or {}
    module = topic_module(topic_of(request))
    names = [tool["name"] for tool in tools]
    useless = bool(slips_for(request, "useless_probe_state"))
    planner = Planner(module, state, useless, pending=dict.fromkeys(names, 1))
    if not useless:
        made = probe_state_answer(planner, names)
        if slips_for(request, "bad_probe_state"):
            made["state"]["audit_log"] = [{"event": "probe state"}]
        return answer(made)
    units = [unit for name in names if (unit := planner.unit(name, "positive")) is not None]
    return answer({"state": {}, "calls": laid_out(units)})


def respond_judge(request: ChatRequest) -> ChatReply:
    probes = fenced_json((request.texts("user") or [""])[0], "Probes:") or []
    fail_all = bool(slips_for(request, "judge_fails_all"))
    doubt = bool(slips_for(request, "judge_warns"))
    verdicts = []
    for probe in probes:
        verdict, reason = judge(probe)
        if fail_all:
            verdict = "fail"
            reason = "The result does not show the behaviour the docstring promises."
        elif doubt and verdict == "pass" and _changed(probe):
            doubt, verdict = False, "warning"
            reason = f"{probe['tool']} succeeded, but the value it stored follows a rule meant "
            reason += "for another kind of record (a domain doubt)."
        verdicts.append({"probe": probe["probe"], "verdict": verdict, "reason": reason})
    return answer({"verdicts": verdicts})


def _changed(probe: dict[str, Any]) -> bool:
    """A positive call that changed the state."""
    return probe.get("kind") == "positive" and bool(probe.get("state_diff"))


def judge(probe: dict[str, Any]) -> tuple[str, str]:
    """A careful reviewer's verdict on one probe, from its result and state diff."""
    result = probe.get("result") or {}
    diff = probe.get("state_diff") or []
    error = str(result.get("error", ""))
    changed = ", ".join("/".join(map(str, c["path"])) for c in diff[:3] if isinstance(c, dict))
    tool, kind = probe.get("tool", "the tool"), probe.get("kind")
    if _MISCALLED.search(error):
        return "warning", f"the call did not fit {tool}'s signature ({error[:100]}): a test slip."
    if _RAISED.match(error) or _HOST.match(error):
        return "fail", f"{tool} did not return a result dict: {error[:120]}"
    if probe.get("tool_kind") == "query" and diff:
        return "fail", f"{tool} is a query but changed the state ({changed})."
    if result.get("success") is not True and diff:
        return "fail", f"{tool} refused the call but still changed {changed}."
    if result.get("success") is True and probe.get("tool_kind") == "state_change" and not diff:
        return "warning", f"{tool} reported success but the state did not change."
    if kind == "negative" and result.get("success") is True:
        return "warning", f"{tool} accepted arguments a careful tool would refuse."
    if result.get("success") is True:
        what = f"changed {changed}" if diff else "returned the requested data"
        return "pass", f"{tool} {what} as its docstring describes."
    return "pass", f"{tool} refused with a clear reason ({error[:100]}) and changed nothing."
