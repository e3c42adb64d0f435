"""Is the simulated user a person? Three ways an LLM playing the user breaks the episode.

- ``pasted_task``: the user recites hidden text instead of speaking: at least ``paste_share`` of
  the task's words in order, in runs of ``PASTE_RUN`` or more (for a task of at least
  ``PASTE_MIN_WORDS`` words, so an edited word does not hide a paste),
  the same for a narrative fact (a ``user_facts`` leaf that long, e.g. the procedural "full
  request"), the facts list as data (a JSON object, or ``FACT_LINES_MIN`` ``key: value`` lines
  naming facts), or a heading of the simulator's prompt. The *opening* may state the request:
  in conversational mode the task is the user's request in their own voice, and the reference
  policy opens with it verbatim (``opening.opening_message``), so an opening is judged only on task
  words the reference opening does not say, which catches a pasted "You are Alice Moreno. You
  …" instruction but accepts an opening that simply is the task. A narrative fact the reference
  solution passes as an argument is an answer, not a paste.
- ``early_stop``: the user ended the conversation (termination ``user_stop``) before any
  successful state-changing call.
- ``invented_requirement``: a user message states a specific value (``values.py``) found in none
  of the task, the later requests (``turns``), the user facts and the earlier messages (agent
  text, tool results, what the user said before).

A multi-turn scenario's later requests are sent as they are written; a user message that is one
of them is the scenario's, not a paste.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from envmill.schemas.rollout import STOP_MARKER, FilterSettings
from envmill.schemas.scenario import ScenarioSpec
from envmill.schemas.trajectory import TrajectoryRecord
from envmill.tasks.core.facts import (
    EXACT,
    WHICH,
    argument_leaves,
    flatten_facts,
    match_strength,
    noun_of,
)
from envmill.tasks.core.opening import opening_message
from envmill.tasks.rollout.values import KnownValues, extract_values

PASTE_MIN_WORDS = 12
PASTE_RUN = 3  # words in a row that count towards a recital
FACT_LINES_MIN = 3
MAX_LISTED = 10
PROMPT_HEADINGS = ("what you want done:", "what you know and may tell the agent")
KEY_VALUE_LINE = re.compile(r"^\s*(?:[-*•]\s*)?([A-Za-z][\w /-]{0,40}?)\s*:\s*\S")
JSON_OBJECT = re.compile(r"\{.*\}", re.S)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the simulated user, at a message index, with its row details."""

    code: str
    index: int
    reason: str
    details: dict[str, Any] = field(default_factory=dict)


def words_of(text: str) -> list[str]:
    """Words, normalized: case-folded, punctuation and spacing dropped."""
    return re.findall(r"[^\W_]+", text.casefold())


def user_indices(messages: list[dict[str, Any]]) -> list[int]:
    return [
        i
        for i, m in enumerate(messages)
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str)
    ]


def find_user_problems(
    trajectory: TrajectoryRecord,
    scenario: ScenarioSpec,
    *,
    state_changing_tools: set[str],
    settings: FilterSettings,
) -> list[Problem]:
    """Every problem found, in the order ``pasted_task``, ``early_stop``,
    ``invented_requirement`` (each at most once: the first message that shows it)."""
    found = [
        find_paste(trajectory.messages, scenario, settings.paste_share),
        find_early_stop(trajectory, scenario, state_changing_tools),
        find_invented(trajectory.messages, scenario),
    ]
    return [problem for problem in found if problem is not None]


# --- pasted_task -----------------------------------------------------------------------------


def hidden_texts(scenario: ScenarioSpec) -> list[tuple[str, list[str]]]:
    """(source, words) of the texts a user must not recite: the task and narrative facts."""
    used = [
        value
        for step in scenario.reference_solution
        for _, value in argument_leaves(step.arguments)
    ]
    texts = [("task", words_of(scenario.task))]
    for fact in flatten_facts(scenario.user_facts):
        if not isinstance(fact.value, str):
            continue
        if any(match_strength(fact.value, value) == EXACT for value in used):
            continue  # the reference user says it verbatim when asked
        if fact.noun.endswith(WHICH):
            continue  # "which one?" is answered by what tells them apart, said as it is
        texts.append((f"user_facts.{fact.key}", words_of(fact.value)))
    return [(source, words) for source, words in texts if len(words) >= PASTE_MIN_WORDS]


def find_paste(
    messages: list[dict[str, Any]], scenario: ScenarioSpec, share: float
) -> Problem | None:
    """The first user message that recites hidden text or the facts as data."""
    indices = user_indices(messages)
    hidden = hidden_texts(scenario)
    opening = " ".join(words_of(opening_message(scenario)))
    turns = {turn.content for turn in scenario.turns}  # the scenario's own later requests
    for i in indices:
        text = messages[i]["content"]
        if text in turns:
            continue
        problem = recited_data(i, text, scenario) or recited_text(
            i, words_of(text), hidden, share, opening if i == indices[0] else None
        )
        if problem is not None:
            return problem
    return None


def recited_text(
    index: int,
    said: list[str],
    hidden: list[tuple[str, list[str]]],
    share: float,
    opening: str | None,
) -> Problem | None:
    """At least ``share`` of a hidden text's words recited in order, in runs of ``PASTE_RUN``
    words or more (so a word or two changed in a paste still counts, scattered common words do
    not); in the opening, runs the reference opening says too are the user's own request."""
    for source, words in hidden:
        blocks = SequenceMatcher(None, said, words, autojunk=False).get_matching_blocks()
        runs = [" ".join(words[b.b : b.b + b.size]) for b in blocks if b.size >= PASTE_RUN]
        if opening is not None:
            runs = [run for run in runs if f" {run} " not in f" {opening} "]
        recited = sum(len(run.split()) for run in runs)
        need = math.ceil(share * len(words) - 1e-9)
        if recited < need:
            continue
        return Problem(
            "pasted_task",
            index,
            f"user message {index} pastes the {source.replace('.', ' ')}: {recited} of its"
            f" {len(words)} words recited in order (paste_share {share} needs {need})",
            {"source": source, "run": recited, "words": len(words)},
        )
    return None


def recited_data(index: int, text: str, scenario: ScenarioSpec) -> Problem | None:
    """The facts list as data (JSON, ``key: value`` lines) or the simulator prompt's headings."""
    lowered = text.casefold()
    heading = next((h for h in PROMPT_HEADINGS if h in lowered), None)
    if heading is not None:
        return Problem(
            "pasted_task",
            index,
            f'user message {index} recites its instructions ("{heading}")',
            {"source": "prompt"},
        )
    if is_json_object(text):
        return Problem(
            "pasted_task",
            index,
            f"user message {index} recites data as a JSON object instead of speaking",
            {"source": "json"},
        )
    lines = fact_lines(text, scenario)
    if len(lines) >= FACT_LINES_MIN:
        return Problem(
            "pasted_task",
            index,
            f"user message {index} recites the facts list ({len(lines)} key: value lines)",
            {"source": "facts_list", "keys": lines[:MAX_LISTED]},
        )
    return None


def is_json_object(text: str) -> bool:
    found = JSON_OBJECT.search(text)
    if found is None:
        return False
    try:
        parsed = json.loads(found.group())
    except ValueError:
        return False
    return isinstance(parsed, dict) and bool(parsed)


def fact_lines(text: str, scenario: ScenarioSpec) -> list[str]:
    """The keys of ``key: value`` lines whose key names a fact (by its key or its noun)."""
    names = set()
    for fact in flatten_facts(scenario.user_facts):
        names |= {fact.key.casefold(), fact.noun.casefold(), noun_of(fact.key).casefold()}
    keys = [m.group(1).strip() for m in map(KEY_VALUE_LINE.match, text.splitlines()) if m]
    return [key for key in keys if key.casefold() in names or noun_of(key).casefold() in names]


# --- early_stop ------------------------------------------------------------------------------


def find_early_stop(
    trajectory: TrajectoryRecord, scenario: ScenarioSpec, state_changing_tools: set[str]
) -> Problem | None:
    """A ``user_stop`` before any state-changing call succeeded, in a scenario whose reference
    makes one (a question or a refusal is done without any change)."""
    if trajectory.termination != "user_stop":
        return None
    if not any(step.tool in state_changing_tools for step in scenario.reference_solution):
        return None
    calls = successful_calls(trajectory.messages)
    changes = [name for name in calls if name in state_changing_tools]
    if changes:
        return None
    index = (user_indices(trajectory.messages) or [len(trajectory.messages) - 1])[-1]
    return Problem(
        "early_stop",
        index,
        f"user ended the conversation at message {index} before any state-changing call"
        f" succeeded ({len(calls)} successful calls, none of them a change)",
        {"successful_calls": len(calls)},
    )


def successful_calls(messages: list[dict[str, Any]]) -> list[str]:
    """Names of the tool calls whose tool message parses to ``{"success": true, ...}``."""
    names: dict[str, str] = {}
    done: list[str] = []
    for message in (m for m in messages if isinstance(m, dict)):
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                names[str(call.get("id"))] = str(call["function"].get("name"))
        if message.get("role") == "tool":
            name = names.get(str(message.get("tool_call_id")))
            if name is not None and reports_success(message.get("content")):
                done.append(name)
    return done


def reports_success(content: Any) -> bool:
    try:
        result = json.loads(content) if isinstance(content, str) else content
    except ValueError:
        return False
    return isinstance(result, dict) and result.get("success") is True


# --- invented_requirement --------------------------------------------------------------------


def find_invented(messages: list[dict[str, Any]], scenario: ScenarioSpec) -> Problem | None:
    """Values user messages state that no source holds; reported at the first such message."""
    known = KnownValues(facts=[fact.value for fact in flatten_facts(scenario.user_facts)])
    known.add(scenario.task)
    for turn in scenario.turns:  # a multi-turn scenario's later requests are its own words
        known.add(turn.content)
    for fact in known.facts:
        known.add(str(fact))
    invented: list[dict[str, Any]] = []
    for i, message in enumerate(messages[1:], start=1):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            continue
        if message.get("role") == "user":
            said = content.replace(STOP_MARKER, " ")
            invented += [
                {"index": i, "kind": value.kind, "value": value.text}
                for value in extract_values(said)
                if not known.knows(value)
            ]
        known.add(content)
    if not invented:
        return None
    first = invented[0]
    listed = ", ".join(f"{v['value']} ({v['kind']})" for v in invented[:3])
    more = f" and {len(invented) - 3} more" if len(invented) > 3 else ""
    return Problem(
        "invented_requirement",
        first["index"],
        f"user states values found in neither the task, the facts nor the conversation:"
        f" {listed}{more} (first at message {first['index']})",
        {"values": invented[:MAX_LISTED], "count": len(invented)},
    )
