"""The model-style checklist: one fact per thing the steps changed, each a small check written
as a model writes them (``final_state.get(...)``, a created record found by what it holds, a
new id checked only as new), from the changes the checks prompt lists. A question or a
refusal changes nothing: its list is empty, as the prompt allows. A repair keeps the list: the
model stands by checks that state exactly what the task did."""

from __future__ import annotations

import re
from typing import Any

from envmill.tasks.offline_llm.model_style.scenes import scenario_of
from envmill.tasks.offline_llm.responders import ChatReply, ChatRequest
from envmill.tasks.offline_llm.skeleton import answer
from envmill.tasks.offline_llm.skeleton_check import fenced_json

MAX_CHECKS = 14
_SYSTEM = re.compile(r"^(?:next_\w+|current_time)$")
Change = dict[str, Any]


def respond_checks(request: ChatRequest) -> ChatReply:
    text = (request.texts("user") or [""])[0]
    if request.stage == "scenario_repair":
        return answer({"checks": fenced_json(text, "Checks:") or []})
    _, kind = scenario_of(request)
    changes = fenced_json(text, "What the steps changed") or []
    if kind in ("answer", "refusal"):
        return answer({"checks": []})
    return answer({"checks": checklist(changes)})


def checklist(changes: list[Change]) -> list[dict[str, str]]:
    """The checks of ``changes`` (counters and the clock left out: the system moves them)."""
    kept = [c for c in changes if c["path"] and not _SYSTEM.match(str(c["path"][0]))]
    created = {
        (c["path"][0], c["path"][1]): c["new"]
        for c in kept
        if c["op"] == "add" and len(c["path"]) == 2
    }
    new_ids = {key: attr for attr, key in created}
    checks = [_created(attr, key, record, new_ids) for (attr, key), record in created.items()]
    fields = [c for c in kept if len(c["path"]) >= 3]
    if len(checks) + len(fields) > MAX_CHECKS:
        return checks + _per_record(fields, new_ids)
    return checks + [_field(change, new_ids) for change in fields]


def _is_new(value: Any, new_ids: dict[str, str]) -> bool:
    return isinstance(value, str) and value in new_ids


def _noun(attr: str) -> str:
    word = attr[:-3] + "y" if attr.endswith("ies") else attr.removesuffix("s")
    return word.replace("_", " ")


def _created(attr: str, key: str, record: Any, new_ids: dict[str, str]) -> dict[str, str]:
    record = record if isinstance(record, dict) else {}
    fixed = {f: v for f, v in record.items() if v != key and not _is_new(v, new_ids)}
    pointing = {f: new_ids[v] for f, v in record.items() if _is_new(v, new_ids) and v != key}
    label = next((record.get(f) for f in ("full_name", "name", "title") if record.get(f)), None)
    conditions = [_equals(f"record.get({f!r})", value) for f, value in fixed.items()]
    conditions += [
        f"record.get({f!r}) in final_state.get({other!r}, {{}}) and record.get({f!r}) not in "
        f"initial_state.get({other!r}, {{}})"
        for f, other in pointing.items()
    ]
    body = "\n            and ".join(conditions) or "True"
    code = (
        "def check(initial_state, final_state):\n"
        f"    before = initial_state.get({attr!r}, {{}})\n"
        f"    for key, record in final_state.get({attr!r}, {{}}).items():\n"
        "        if key in before:\n"
        "            continue\n"
        f"        if ({body}):\n"
        "            return True\n"
        "    return False\n"
    )
    what = f" for {label}" if label else ""
    return {"fact": f"A new {_noun(attr)}{what} exists with the details given.", "code": code}


def _test(change: Change, new_ids: dict[str, str]) -> tuple[str, str]:
    """What a check reads of the changed record (``record``), and the fact in words."""
    attr, key, *path = change["path"]
    value = change["new"]
    read = f"record.get({path[0]!r})" + "".join(f"[{p!r}]" for p in path[1:])
    if isinstance(value, str) and value in new_ids:
        other = new_ids[value]
        test = (
            f"{read} in final_state.get({other!r}, {{}}) and {read} not in "
            f"initial_state.get({other!r}, {{}})"
        )
        return test, f"{_noun(attr).capitalize()} {key} points at the new {_noun(other)}."
    return _equals(read, value), _said(attr, key, path, value, change["op"])


def _record_check(attr: str, key: str, tests: list[str]) -> str:
    joined = " and ".join(f"({test})" for test in tests) if len(tests) > 1 else tests[0]
    return (
        "def check(initial_state, final_state):\n"
        f"    record = final_state.get({attr!r}, {{}}).get({key!r})\n"
        "    if record is None:\n"
        "        return False\n"
        "    try:\n"
        f"        return bool({joined})\n"
        "    except (KeyError, IndexError, TypeError):\n"
        "        return False\n"
    )


def _field(change: Change, new_ids: dict[str, str]) -> dict[str, str]:
    test, fact = _test(change, new_ids)
    return {"fact": fact, "code": _record_check(change["path"][0], change["path"][1], [test])}


def _per_record(fields: list[Change], new_ids: dict[str, str]) -> list[dict[str, str]]:
    """One check per changed record, every changed field in it (a long list kept short)."""
    grouped: dict[tuple[str, str], list[Change]] = {}
    for change in fields:
        grouped.setdefault((change["path"][0], change["path"][1]), []).append(change)
    checks = []
    for (attr, key), changes in grouped.items():
        tests = [_test(change, new_ids)[0] for change in changes]
        said = ", ".join(str(c["path"][2]).replace("_", " ") for c in changes)
        fact = f"{_noun(attr).capitalize()} {key} has its new {said}."
        checks.append({"fact": fact, "code": _record_check(attr, key, tests)})
    return checks


def _equals(read: str, value: Any) -> str:
    if isinstance(value, float):
        return f"isinstance({read}, (int, float)) and abs({read} - {value!r}) < 0.005"
    return f"{read} == {value!r}"


def _said(attr: str, key: str, path: list[Any], value: Any, op: str) -> str:
    noun = _noun(attr).capitalize()
    name = str(path[0]).replace("_", " ")
    if op == "remove":
        return f"{noun} {key} no longer has a {name}."
    if path[0] == "status" and len(path) == 1:
        return f"{noun} {key} is now {value}."
    if isinstance(value, list):
        shown = ", ".join(map(str, value)) or "nothing"
        return f"{noun} {key}'s {name} holds {shown}."
    return f"{noun} {key}'s {name} is now {value}."
