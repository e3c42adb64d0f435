"""Reference conversations of multi-turn scenarios (DESIGN §3.4: ``turns``).

Each user message gets the reference's work for it and then a reply of its own: the calls of its
steps and their results, then what happened, in concrete terms, as a single-message reference says
it (``reference.reference_messages`` on that message's steps, from the state it was sent in, so
its closing line is built the same way: ``closing.py``). A message whose steps only read gets
what they found; one with no steps (the user left out what the work needs) gets a reply that
says it cannot do it yet and what it needs, named as the tool's parameters describe it: the
values the next message's steps pass that the next message says and nothing before it did.

An imported scenario (a benchmark's: ``source`` other than envmill's) has a state no one wrote
for reading as records (BFCL's objects, encoded), so its diff is no news; its replies say what
each changing call's result said instead ("'log.txt' moved to 'archive/log.txt'"). A scenario
with one user message takes this path too when it is imported.
"""

from __future__ import annotations

import json
import re
from typing import Any

from envmill.schemas.benchmarks import SYNTHETIC_SOURCE
from envmill.schemas.ids import canonical_json, content_id, sha256_hex
from envmill.schemas.scenario import CertificationReport, ScenarioSpec, SolutionStep
from envmill.tasks.certify.grounding import Sight
from envmill.tasks.core.facts import join_words
from envmill.tasks.core.field_words import field_noun
from envmill.tasks.core.opening import opening_message
from envmill.tasks.rollout.reference import TurnContext, reference_messages
from envmill.tasks.rollout.saying import say_field_value

ParameterWords = dict[str, dict[str, str]]  # tool -> parameter -> its description

# a reply to a request that lacks what the work needs; {needs} names it, never its value
NOT_YET = (
    "I can't do that yet: I need {needs}. Could you tell me?",
    "Before I can do that, I need {needs}. What should I use?",
    "I don't have enough to go on yet. Please give me {needs}.",
)
CANNOT = (  # no later message says what was missing: nothing to name but the request
    "I can't do that with what I have here: none of my tools can do it as asked.",
    "That isn't something I can do with the tools available to me here.",
)
FOUND = ("Here is what I found: {found}.", "{found}.", "I checked: {found}.")
DONE = ("Done: {found}.", "{found}.", "That's done: {found}.")
MAX_SAID = 4  # values of one result said in a reply
MAX_TEXT = 80


def multi_turn_messages(
    scenario: ScenarioSpec,
    report: CertificationReport,
    tool_kinds: dict[str, str] | None = None,
    descriptions: dict[str, str] | None = None,
    parameters: ParameterWords | None = None,
) -> list[dict[str, Any]]:
    """Every user message with the reference's calls for it and its reply, in order.

    Raises:
        ValueError: the report does not say the state each message was sent in (it was not
            made by ``certify_scenario`` of this scenario).
    """
    if len(report.turn_states) != len(scenario.turns):
        raise ValueError(f"scenario {report.scenario_id}: its report has no state per message")
    final = report.final_state or scenario.initial_state
    states = [scenario.initial_state, *report.turn_states, final]
    said = [opening_message(scenario), *(turn.content for turn in scenario.turns)]
    keep = frozenset(canonical_json(r) for rs in scenario.expected_results or [] for r in rs)
    imported = scenario.source != SYNTHETIC_SOURCE
    messages: list[dict[str, Any]] = []
    for index, (start, end) in enumerate(scenario.turn_bounds()):
        seed = content_id({"scenario_id": report.scenario_id, "turn": index})
        if start == end:
            reply = missing_reply(scenario, index, report.step_results, parameters or {}, seed)
            messages += [
                {"role": "user", "content": said[index]},
                {"role": "assistant", "content": reply},
            ]
            continue
        part = _turn_part(scenario, index, start, end, states[index])
        part_report = CertificationReport(
            scenario_id=seed,
            gates=report.gates,
            final_state=states[index + 1],
            step_results=report.step_results[start:end],
        )
        heard = tuple(m["content"] for m in messages if m["role"] == "user")  # answers too
        context = TurnContext(said[index], heard, start, keep)
        turn = reference_messages(part, part_report, tool_kinds, descriptions, context=context)
        read_only = states[index] == states[index + 1]
        if not part.reference_answer and (read_only or imported):
            forms = FOUND if read_only else DONE
            turn[-1] = {"role": "assistant", "content": found_reply(turn, seed, forms)}
        messages += turn
    return messages


def _turn_part(
    scenario: ScenarioSpec, index: int, start: int, end: int, state: dict[str, Any]
) -> ScenarioSpec:
    """One user message's share of the scenario: its steps from the state it was sent in; the
    last message keeps the reply the scenario expects."""
    last = index == len(scenario.turns)
    return scenario.model_copy(
        update={
            "task": scenario.user_messages[index],
            "initial_state": state,
            "reference_solution": scenario.reference_solution[start:end],
            "turns": [],
            "expected_results": None,
            "reference_answer": scenario.reference_answer if last else None,
            "expected_answer": scenario.expected_answer if last else None,
            "refusal": scenario.refusal if last else None,
            "kind": scenario.kind if last else None,
        }
    )


def found_reply(turn: list[dict[str, Any]], seed: str, forms: tuple[str, ...] = FOUND) -> str:
    """What a message's steps found or did: the values its results showed (the last two)."""
    results = [m["content"] for m in turn if m.get("role") == "tool"]
    found = [said for content in results if (said := _said_result(content))]
    pick = int(sha256_hex(seed)[:8], 16)
    if not found:
        return "I looked, but found nothing to report."
    text = "; ".join(found[-2:]).rstrip(".")
    form = forms[pick % len(forms)]
    return form.format(found=text[:1].upper() + text[1:] if form.startswith("{") else text)


def _said_result(content: str) -> str:
    """A tool result's values in words: "status is shipped, total is $40.00"."""
    try:
        result = json.loads(content)
    except ValueError:
        return content[:MAX_TEXT]
    data = result.get("data", result) if isinstance(result, dict) else result
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in ("success",)}
        pairs = [(k, v) for k, v in data.items() if not isinstance(v, dict | list)][:MAX_SAID]
        listed = [(k, v) for k, v in data.items() if isinstance(v, list)][:1]
        parts = [f"{field_noun(k)} is {say_field_value(k, v)}" for k, v in pairs]
        parts += [f"{field_noun(k)}: {_listed(v)}" for k, v in listed]
        return ", ".join(parts)
    if isinstance(data, list):
        return _listed(data)
    return say_field_value("", data)[:MAX_TEXT] if data is not None else ""


def _listed(items: list[Any]) -> str:
    if not items:
        return "none"
    words = [str(i) if not isinstance(i, dict | list) else canonical_json(i) for i in items]
    shown = [w[:MAX_TEXT] for w in words[:MAX_SAID]]
    more = f" and {len(words) - MAX_SAID} more" if len(words) > MAX_SAID else ""
    return join_words(shown) + more


def missing_reply(
    scenario: ScenarioSpec,
    index: int,
    results: list[dict[str, Any]],
    parameters: ParameterWords,
    seed: str,
) -> str:
    """The reply to user message ``index``, which has no steps: what the work needs that the
    user has not given, as the tool's parameters describe it."""
    needs = missing_needs(scenario, index, results, parameters)
    pick = int(sha256_hex(seed)[:8], 16)
    if not needs:
        return CANNOT[pick % len(CANNOT)]
    return NOT_YET[pick % len(NOT_YET)].format(needs=join_words(needs))


def missing_needs(
    scenario: ScenarioSpec,
    index: int,
    results: list[dict[str, Any]],
    parameters: ParameterWords,
) -> list[str]:
    """What was missing at user message ``index``: the arguments of the next message's steps
    whose values that message says and no earlier message (nor a result before it) showed."""
    later = index + 1
    if later > len(scenario.turns):
        return []
    start, end = scenario.turn_bounds()[later]
    before, after = Sight(), Sight()
    for text in scenario.user_messages[:later]:
        before.hear(text)
    for result in results[:start]:
        before.read_value(result)
    after.hear(scenario.user_messages[later])
    needs: list[str] = []
    for step in scenario.reference_solution[start:end]:
        told = set(before.unseen(step.arguments)) - set(after.unseen(step.arguments))
        for name, _ in sorted(told, key=lambda pair: list(step.arguments).index(_top(pair[0]))):
            noun = parameter_noun(step, _top(name), parameters)
            if noun not in needs:
                needs.append(noun)
    return needs


def parameter_noun(step: SolutionStep, name: str, parameters: ParameterWords) -> str:
    """A parameter as the agent asks for it: its description's first clause ("the name of
    the file to create"), else its name in words ("the file name")."""
    described = parameters.get(step.tool, {}).get(name, "")
    clause = re.split(r"[.;(]|, e\.g\.", described.strip(), maxsplit=1)[0].strip()
    if clause and len(clause) <= MAX_TEXT:
        clause = clause[0].lower() + clause[1:]
        return clause if clause.startswith(("the ", "a ", "an ", "which ")) else f"the {clause}"
    return f"the {field_noun(name)}"


def _top(name: str) -> str:
    """The top-level argument a leaf's name belongs to ("address city" → "address")."""
    return name.split(" ", 1)[0]
