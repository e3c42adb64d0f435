"""The kind of each LLM scenario: drawn from the settings' mix, asked for in the state and task
prompts, and checked on the answer, so ScenGenerator writes the procedural backend's kinds
(DESIGN §3.3) and the ``kind`` column means the same for both backends.

A kind is checked by what the steps did and what the answer says, never by the task's words
alone: an answer or a refusal changes nothing, a created chain acts on the record it made, a
filtered lookup or a disambiguation reads a list that holds more than the one record the task
means, a conditional and an answer state the value they read, a refusal names its rule and the
values that trigger it, as the steps' results show them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from envmill.schemas.ids import canonical_json, sha256_hex
from envmill.schemas.scengen import ScenarioKind, TaskAnswer
from envmill.tasks.backends.llm.scengen.answers import shown_in
from envmill.tasks.backends.llm.scengen.solution import RanSolution
from envmill.tasks.core.statekit import diff_states

NOTHING_CHANGES = ("answer", "refusal")
SAYS_A_VALUE = ("answer", "conditional")
_SYSTEM = ("current_time", "now", "today")
_NOT_A_NAME = frozenset({"status", "state", "kind", "type", "category", "role"})
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def choose_kind(shares: Mapping[ScenarioKind, float], seed: int, env_id: str, index: int) -> str:
    """Scenario ``index``'s kind, drawn from its own seed (the same every run)."""
    digest = sha256_hex(canonical_json(["kind", seed, env_id, index]))
    drawn = sorted((kind, weight) for kind, weight in shares.items() if weight > 0)
    kinds, weights = [kind for kind, _ in drawn], [weight for _, weight in drawn]
    return random.Random(int(digest[:16], 16)).choices(kinds, weights)[0]


def kind_problem(
    kind: str,
    answer: TaskAnswer,
    ran: RanSolution,
    initial: dict,
    tools: frozenset[str] = frozenset(),
) -> str | None:
    """Why the answer is not a scenario of ``kind`` (None when it is), said for the model;
    ``tools``: the environment's, which a refusal's rules are named by."""
    changes = [c for c in diff_states(initial, ran.final_state or initial) if not _system(c)]
    if kind in NOTHING_CHANGES and changes:
        where = "/".join(map(str, changes[0]["path"]))
        return f"a {kind} scenario changes nothing, but the steps changed {where}"
    if kind not in NOTHING_CHANGES and not changes:
        return "the steps changed nothing: this kind of task must change the state"
    if kind in SAYS_A_VALUE and answer.expected_answer is None:
        return f"a {kind} scenario states the value it read: give expected_answer and reply"
    check = _CHECKS.get(kind)
    found = check(answer, ran, initial) if check else None
    return found or (_rules_named(answer, tools) if kind == "refusal" else None)


def _rules_named(answer: TaskAnswer, tools: frozenset[str]) -> str | None:
    """A refusal rests on a rule the environment has, named by the tool that enforces it
    (certification refuses any other name, and no repair of the checks can change it)."""
    rules = answer.refusal.rules if answer.refusal else []
    unknown = [rule.rule_id for rule in rules if tools and rule.rule_id not in tools]
    if not unknown:
        return None
    return (
        f"refusal.rules: rule_id {unknown[0]!r} is not a tool; name each rule by the tool that "
        f"enforces it (the one the request would call), one of: {', '.join(sorted(tools))}"
    )


def _system(change: dict[str, Any]) -> bool:
    """A change the system makes by itself: an id counter or the clock (top-level attributes,
    not a record's field that happens to share the name)."""
    if len(change["path"]) != 1:
        return False
    name = str(change["path"][0])
    return name.startswith("next_") or name in _SYSTEM


def _created_chain(answer: TaskAnswer, ran: RanSolution, initial: dict) -> str | None:
    changes = diff_states(initial, ran.final_state or initial)
    created = {c["path"][1] for c in changes if c["op"] == "add" and len(c["path"]) == 2}
    for number, result in enumerate(ran.results):
        made = created & _strings(result)
        later = ran.steps[number + 1 :]
        if made and any(made & _strings(step.arguments) for step in later):
            return None
    return "a created_chain scenario creates a record and then acts on it in a later step"


def _listed(answer: TaskAnswer, ran: RanSolution, initial: dict) -> str | None:
    if any(len(records) >= 2 for records in _record_lists(ran.results)):
        return None
    return (
        "the steps must read a list that holds several records (a search or a filtered list) "
        "and pick the one the task means from it"
    )


def _namesakes(answer: TaskAnswer, ran: RanSolution, initial: dict) -> str | None:
    said = canonical_json([answer.task, answer.user_facts]).casefold()
    for records in _record_lists(ran.results):
        seen: dict[tuple[str, str], int] = {}
        for record in records:
            for field, value in record.items():
                if field in _NOT_A_NAME or field.endswith(("_status", "_id")):
                    continue  # two records "active" or of one owner are not namesakes
                if isinstance(value, str) and len(value) > 2 and value.casefold() in said:
                    seen[field, value.casefold()] = seen.get((field, value.casefold()), 0) + 1
        if any(count >= 2 for count in seen.values()):
            return None
    return (
        "a disambiguation scenario names a record by a name two records share: a step's result "
        "must list both, and the task must give that name and a detail that tells them apart"
    )


def _refused(answer: TaskAnswer, ran: RanSolution, initial: dict) -> str | None:
    if answer.refusal is None:
        return "a refusal scenario gives `refusal`: the rule and the state values that trigger it"
    if not (answer.reply or "").strip():
        return "reply: a refusal ends with the reply that declines and says why"
    for rule in answer.refusal.rules:
        said = f"{rule.condition} {rule.policy} {answer.reply}".casefold()
        reasons = [value for value in rule.triggers if _a_reason(value)]
        if reasons and not any(word.casefold() in said for word in reasons):
            return f"refusal triggers: none of {reasons} is in the rule or the reply"
        for value in (value for value in rule.triggers if not _a_reason(value)):
            if shown_in(value, ran.results) or _a_number_of(
                value, f"{rule.condition} {rule.policy}"
            ):
                continue
            if _a_date(value) and _DATE.search(canonical_json([rule.condition, ran.results])):
                continue  # a date the rule reckons from dates it or the steps show (a deadline)
            if shown_in(value, [initial]):
                return (
                    f"refusal triggers: {value!r} is a value of the state that no step read; "
                    "begin with the lookup that shows it, as an agent would"
                )
            return (
                f"refusal triggers: {value!r} is neither in the steps' results nor in the rule; "
                "give the state values that make the rule apply, as the lookups returned them"
            )
    return None


def _a_date(value: Any) -> bool:
    return isinstance(value, str) and _DATE.fullmatch(value) is not None


def _a_reason(value: Any) -> bool:
    """Words, not a value: no digits, codes or ids (those must come from the state)."""
    return isinstance(value, str) and re.fullmatch(r"[A-Za-z][A-Za-z ']{2,}", value) is not None


def _a_number_of(value: Any, text: str) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    numbers = [float(n.replace(",", "")) for n in _NUMBER.findall(text)]
    return any(abs(number - value) < 0.005 for number in numbers)


_CHECKS = {
    "created_chain": _created_chain,
    "filtered_lookup": _listed,
    "disambiguation": _namesakes,
    "refusal": _refused,
}


def _strings(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set().union(*(_strings(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return {value} if isinstance(value, str) else set()


def _record_lists(results: list[Any]) -> list[list[dict[str, Any]]]:
    """Every list of records (dicts) found in the results, at any depth."""
    found: list[list[dict[str, Any]]] = []

    def walk(value: Any, depth: int = 0) -> None:
        if depth > 8:
            return
        if isinstance(value, list):
            records = [v for v in value if isinstance(v, dict)]
            if records:
                found.append(records)
            for item in value:
                walk(item, depth + 1)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item, depth + 1)

    walk(results)
    return found
