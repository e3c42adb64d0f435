"""Responders for the environment check: the testing agent's calls and the judge's verdicts.

The testing agent reads the tools and the state shown in the prompt and, with the compiled
manifest of the topic's module, proposes what a careful tester would: positive calls on records
that exist (preferring ones in a status the tool accepts) and negative calls with an unknown id,
a value outside the allowed ones or an empty text. The judge reads each probe's result and state
diff and says what a careful reviewer would; the slip ``judge_fails_all`` fails every probe.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from envmill.tasks.backends.procedural.manifest import ArgManifest
from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest
from envmill.tasks.offline_llm.skeleton import answer, slips_for, topic_of
from envmill.tasks.offline_llm.skeleton_source import TopicModule, topic_module

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
    calls = []
    for tool in tools:
        for kind in tool.get("calls_needed", ["positive"]):
            made = propose(module, tool, kind, state)
            if made is not None:
                calls.append(made)
    return answer({"calls": calls})


def propose(module: TopicModule, tool: dict[str, Any], kind: str, state: dict) -> dict | None:
    """One call of ``tool``: valid arguments for a positive one, a wrong one for a negative."""
    manifest = module.tool(tool["name"])
    if manifest is None:
        return None
    arguments = {a.name: positive_value(a, state, module) for a in manifest.args if a.required}
    verb = tool["name"].replace("_", " ")
    if kind == "positive":
        where = ", ".join(f"{k}={v!r}" for k, v in arguments.items()) or "no arguments"
        expectation = f"Should {verb} for {where} and report success."
        return _call(tool["name"], kind, arguments, expectation)
    if not manifest.args:
        return None
    arg = min(manifest.args, key=_weak_spot)
    wrong, why = negative_value(arg, state)
    expectation = f"Should refuse to {verb}: {why}."
    return _call(tool["name"], kind, {**arguments, arg.name: wrong}, expectation)


def _call(tool: str, kind: str, arguments: dict[str, Any], expectation: str) -> dict[str, Any]:
    return {"tool": tool, "kind": kind, "arguments": arguments, "expectation": expectation}


def positive_value(arg: ArgManifest, state: dict, module: TopicModule) -> Any:
    """A value a careful tester picks from the state for one argument."""
    records = state.get(arg.state_attr or "", {}) if arg.state_attr else {}
    if arg.source == "entity_id":
        return _pick_record(records, arg.prefer) or f"{arg.entity or 'item'}-0001"
    if arg.source == "str" and arg.entity and records:
        label = module.compiled.label_fields.get(arg.entity, "")
        first = next(iter(records.values()), {})
        return str(first.get(label, "a")).split()[0]
    if arg.source == "enum":
        preferred = [v for v in (arg.values or []) if v in arg.prefer.get(arg.name, [])]
        return (preferred or arg.values or ["a"])[0]
    if arg.source in ("int", "float"):
        low = arg.minimum if arg.minimum is not None else 1
        value = min(max(low, 1), arg.maximum if arg.maximum is not None else 1000)
        return int(value) if arg.source == "int" else round(float(value) + 0.5, 2)
    if arg.source in ("date", "datetime"):
        now = _parse(state.get("current_time")) or datetime(2025, 6, 2, 9)
        later = (now + timedelta(days=7)).replace(hour=10, minute=0, second=0)
        return later.date().isoformat() if arg.source == "date" else later.isoformat()
    if arg.source == "bool":
        return True
    return _text_for(arg)


def _weak_spot(arg: ArgManifest) -> int:
    """Which argument a tester spoils first: an id, a closed choice, a bounded number, text."""
    order = {"entity_id": 0, "enum": 1, "int": 2, "float": 2, "date": 3, "datetime": 3}
    return 4 if arg.faker else order.get(arg.source, 4)


def negative_value(arg: ArgManifest, state: dict) -> tuple[Any, str]:
    """A wrong value for one argument, and why it is wrong."""
    if arg.faker:
        return "", f"{arg.name} must not be empty"
    if arg.source == "entity_id":
        records = state.get(arg.state_attr or "", {})
        prefix = next(iter(records), "ID-1").rsplit("-", 1)[0]
        return f"{prefix}-9999", f"{arg.entity} {prefix}-9999 does not exist"
    if arg.source == "enum":
        return "unknown", f"'unknown' is not an allowed {arg.name}"
    if arg.source in ("int", "float"):
        return -5, f"{arg.name} cannot be negative"
    if arg.source in ("date", "datetime"):
        return "next tuesday", f"{arg.name} is not an ISO date"
    if arg.source == "bool":
        return "yes", f"{arg.name} must be a boolean"
    return "", f"{arg.name} must not be empty"


def _pick_record(records: dict, prefer: dict[str, list[Any]]) -> str | None:
    for key, record in records.items():
        if all(record.get(field) in values for field, values in prefer.items()):
            return key
    return next(iter(records), None)


def _text_for(arg: ArgManifest) -> str:
    samples = {
        "email": "jordan.reyes@example.org",
        "phone_number": "555-0142",
        "basic_phone_number": "555-0142",
        "name": "Jordan Reyes",
    }
    return samples.get(arg.faker or "", samples.get(arg.name, f"Test {arg.name.replace('_', ' ')}"))


def _parse(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def respond_judge(request: ChatRequest) -> ChatReply:
    probes = fenced_json((request.texts("user") or [""])[0], "Probes:") or []
    fail_all = bool(slips_for(request, "judge_fails_all"))
    verdicts = []
    for probe in probes:
        verdict, reason = judge(probe)
        if fail_all:
            verdict = "fail"
            reason = "The result does not show the behaviour the docstring promises."
        verdicts.append({"probe": probe["probe"], "verdict": verdict, "reason": reason})
    return answer({"verdicts": verdicts})


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
