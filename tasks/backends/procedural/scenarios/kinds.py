"""Which kind each procedural scenario is, and the assembly of the answer and refusal kinds.

The kind is drawn from its own seed (the scenario's index and the word "kind"), so adding kinds
leaves every ``change`` scenario exactly as it was. A kind that cannot be built in an environment
(no rule refuses anything, nothing to ask) returns None and the scenario falls back to
``change``: the generator's shortfalls stay those of the chain sampler.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace
from typing import Any

from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.backends.procedural.checks.derive import derive_checks
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment
from envmill.tasks.backends.procedural.phrasing.openers import open_request
from envmill.tasks.backends.procedural.phrasing.persona import client_asking
from envmill.tasks.backends.procedural.phrasing.task import phrase_task, voice_of
from envmill.tasks.backends.procedural.scenarios.chains import Chain, sample_chain
from envmill.tasks.backends.procedural.scenarios.questions import Question, ask_aggregate, ask_field
from envmill.tasks.backends.procedural.scenarios.refusals import (
    Refusal,
    find_refusal,
    owner_trail,
    target_values,
)
from envmill.tasks.backends.procedural.scenarios.subjects import acting_member, owned_ids, run_query
from envmill.tasks.certify.guard import guard_check
from envmill.tasks.rollout.closing import changed_numbers, what_changed
from envmill.tasks.sandbox import ToolEpisode, known_state

KIND_SHARES: dict[str, float] = {"change": 0.6, "answer": 0.25, "refusal": 0.15}
AFTER_CHANGE_SHARE = 0.35  # of answer scenarios: a change, then a field it changed
MAX_REPORT_CHAIN = 3


def choose_scenario_kind(rng: random.Random, shares: dict[str, float]) -> str:
    """A kind drawn with ``shares`` (weights; they need not sum to 1)."""
    kinds = sorted(shares)
    return rng.choices(kinds, weights=[shares[k] for k in kinds])[0]


def build_kind(
    kind: str,
    compiled: CompiledEnvironment,
    env_id: str,
    episode: ToolEpisode,
    rng: random.Random,
    faker: Any,
    *,
    conversational: bool = False,
) -> ScenarioSpec | None:
    """A scenario of ``kind`` (``answer`` or ``refusal``) in the open episode, or None.

    A conversational one opens with the request in general terms ("the status of one of my
    bookings") and leaves which record to the simulated user's facts (DESIGN §3.4)."""
    state = known_state(episode)
    member = acting_member(compiled, state)
    allowed = owned_ids(state, member[1]) if member else None
    if kind == "refusal":
        request = find_refusal(compiled, episode, rng, faker)
    elif kind == "answer" and rng.random() < AFTER_CHANGE_SHARE:
        built = _report_after_change(compiled, env_id, episode, rng, faker, allowed)
        if built is not None:
            return _labelled(built, member)
        request = _ask(compiled, episode, rng, allowed)
    else:
        request = _ask(compiled, episode, rng, allowed) if kind == "answer" else None
    if request is None:
        return None
    # a question is a conversation only about the asker's own record ("my reservation":
    # "what's its number?"); staff holding back which lot or member they mean read as a
    # quiz (rounds 45 and 46: "the capacity of a lot")
    talk = conversational and bool(request.facts) and (kind != "answer" or allowed is not None)
    return _labelled(_spec(kind, request, state, env_id, rng, talk), member)


def _labelled(spec: ScenarioSpec, member: tuple[str, str] | None) -> ScenarioSpec:
    """``answer+customer``, ``refusal+customer``: the kind with the acting role, when the
    signed-in identity is a record (a customer asks, and may touch only their own)."""
    return spec.model_copy(update={"kind": f"{spec.kind}+{member[0]}"}) if member else spec


def _ask(compiled: CompiledEnvironment, episode: ToolEpisode, rng: random.Random, allowed):
    """A field or aggregate question; a signed-in customer asks only about their own records."""
    ask = (ask_aggregate, ask_field) if rng.random() < 0.5 else (ask_field, ask_aggregate)
    question = ask[0](compiled, episode, rng, allowed=allowed) or ask[1](
        compiled, episode, rng, allowed=allowed
    )
    if question is None:
        return None
    asked_for = None if allowed is not None else client_asking(compiled)
    question = question.with_a_reason(rng, asked_for)
    if allowed is None:
        return question
    return _owner_shown(compiled, episode, question.in_first_person())


def _owner_shown(
    compiled: CompiledEnvironment, episode: ToolEpisode, question: Question
) -> Question | None:
    """A signed-in client's question with the reads that show the record is theirs (the
    transaction, then its account and the customer on it); None where no read shows it. Round
    50: "gives out the posting time without checking that ACC-000007 belongs to the signed-in
    C-000007", where the policy says a signed-in person acts as their own record."""
    me = known_state(episode).get("acting_id")
    results = [run_query(episode, step) for step in question.steps]
    trail = owner_trail(compiled, episode, str(me), question.steps, results)
    if trail is None:
        return None
    return replace(question, steps=[*question.steps, *(read for read, _ in trail)])


def _spec(
    kind: str,
    request: Question | Refusal,
    state: dict[str, Any],
    env_id: str,
    rng: random.Random,
    conversational: bool,
) -> ScenarioSpec:
    """The scenario: the guard that nothing changed, and what the reply must say (the typed
    answer or the rule to decline by); a conversational one opens vaguely and hands the details
    to the simulated user, who says each when asked."""
    conversational = conversational and bool(request.facts)  # else nothing to give when asked
    task = open_request(request.vague if conversational else request.text, rng)
    facts = dict(request.facts) if conversational else {}
    return ScenarioSpec(
        env_id=env_id,
        backend="procedural",
        kind=kind,
        mode="conversational" if conversational else "non_conversational",
        task=task,
        user_facts=facts,
        initial_state=state,
        reference_solution=request.steps,
        checks=[guard_check(state, state)],
        reference_answer=request.answer,
        expected_answer=request.expected if isinstance(request, Question) else None,
        refusal=request.refusal if isinstance(request, Refusal) else None,
    )


def _report_after_change(
    compiled: CompiledEnvironment, env_id: str, episode: ToolEpisode, rng, faker, allowed=None
) -> ScenarioSpec | None:
    """A short chain, then a question about a field its last step changed (of a record of the
    signed-in customer's own, with ``allowed``)."""
    state = known_state(episode)
    chain = sample_chain(compiled, episode, rng, faker, rng.randint(1, MAX_REPORT_CHAIN))
    question = _question_about_change(compiled, episode, rng, chain, allowed) if chain else None
    if question is not None and allowed is not None:  # the customer's own: "my account …"
        question = question.in_first_person()
    checks = []
    if chain is not None and question is not None:
        checks = derive_checks(
            chain.initial_state,
            chain.final_state,
            step_changes=[step.changes for step in chain.steps],
            entity_names={attr: entity for entity, attr in sorted(compiled.entity_attrs.items())},
            label_fields=compiled.label_fields,
        )
    if chain is None or question is None or not checks:
        episode.load_state(state)  # the fallback question starts from the initial state
        return None
    tool_names = [t.tool for t in compiled.tools]
    voice = voice_of(compiled, chain.initial_state)
    request, _ = phrase_task(
        chain.steps, rng, "non_conversational", tool_names, voice, thanks=False
    )  # "…, thanks a lot. Then tell me …" thanks too soon
    return ScenarioSpec(
        env_id=env_id,
        backend="procedural",
        kind="answer",
        task=f"{request} {question.text}",
        initial_state=chain.initial_state,
        reference_solution=[
            *chain.solution,
            *[step for step in question.steps[:-1] if step not in chain.solution],
            question.steps[-1],  # the read after the change, even when an earlier one matches
        ],
        checks=[*checks, guard_check(chain.initial_state, chain.final_state)],
        reference_answer=_with_the_change(chain, question),
        expected_answer=question.expected,
    )


NUMBER_RANGE = re.compile(r"\d\s*[-–]\s*\d")


def _with_the_change(chain: Chain, question: Question) -> str:
    """The answer after a report of the work ("I've closed account A2; its balance is now
    $2.81."): the user asked for both. When the report already states the value asked for,
    it is the whole answer; saying it twice reads as a template."""
    known = [[step.arguments, step.result] for step in chain.steps]
    done = what_changed(chain.initial_state, chain.final_state, known)
    if not done or NUMBER_RANGE.search(done):  # "(745)427-8739" reads as a hedge "7-8"
        return question.answer
    done = done[:1].upper() + done[1:]
    said = question.said
    if (
        said
        and question.field in done.lower()
        and re.search(rf"(?<![\w$.,]){re.escape(said)}(?![\w]|[.,]\d)", done)
    ):  # the value once, and still what matters most ("Note that the lease has ended.")
        note = question.answer.partition(" Note that ")[2]
        said = note and re.search(rf"\b{re.escape(note.split()[-1].rstrip('.'))}\b", done)
        return f"{done}. Note that {note}" if note and not said else f"{done}."
    return f"{done}. {question.answer}"


def _question_about_change(
    compiled: CompiledEnvironment, episode: ToolEpisode, rng: random.Random, chain: Chain, allowed
) -> Question | None:
    by_attr = {attr: entity for entity, attr in compiled.entity_attrs.items()}
    implied = target_values(compiled).get(chain.steps[-1].manifest.tool, set())
    for change in chain.steps[-1].changes:
        path = change["path"]
        if len(path) != 3 or change["op"] != "change" or path[0] not in by_attr:
            continue
        if allowed is not None and path[1] not in allowed:
            continue
        if _given(change.get("new"), chain) or str(change.get("new")).casefold() in implied:
            continue  # "freeze it / set it to frozen, then tell me the status": the task says it
        if STAMPED.match(str(change.get("new"))):
            continue  # "I just handed over the food; what is the time of my delivery after that?"
        exempt = [change.get("old")] + [
            v for step in chain.steps for v in step.arguments.values() if not isinstance(v, bool)
        ]
        # the reply reports the change too ("… is now $1,440.00"): not a guess
        exempt += changed_numbers(chain.initial_state, chain.final_state)
        question = ask_field(
            compiled,
            episode,
            rng,
            entity=by_attr[path[0]],
            record_id=path[1],
            fields=[path[2]],
            template="after_change",
            exempt=exempt,
        )
        if question is not None:
            return question
    return None


STAMPED = re.compile(r"\d{4}-\d{2}-\d{2}T")  # a time the act stamps: its answer is "now"


def _given(value: Any, chain: Chain) -> bool:
    """Whether the request already names ``value`` (an argument of one of its steps), so a
    question about it would be answered by the task text itself."""
    for step in chain.steps:
        for given in step.arguments.values():
            if isinstance(given, bool) or isinstance(value, bool):
                continue
            if isinstance(given, int | float) and isinstance(value, int | float):
                if abs(given - value) < 0.005:
                    return True
            elif str(given).casefold() == str(value).casefold():
                return True
    return False
