"""One environment's scenarios from the LLM: for each, an initial state, a task with the steps
that fulfil it (run as written), checks from its checklist, then certification; a refused
scenario goes back to the model with the gate and the reason, a bounded number of times.

Three calls make a scenario that certifies at once (state, task, checks); each repair is one
more. A scenario that cannot be made is a skip with the stage's code, never an exception.
"""

from __future__ import annotations

import functools
import random
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from envmill.schemas.ids import canonical_json, sha256_hex
from envmill.schemas.run import SkippedScenario
from envmill.schemas.scenario import CertificationReport, CheckSpec, ScenarioSpec
from envmill.schemas.scengen import ChecksAnswer, ScenGenSettings, StateAnswer, TaskAnswer
from envmill.tasks.backends.base import BatchAborted, EnvironmentBrief, ScenarioDrafts
from envmill.tasks.backends.llm.scengen.answers import parse_expected, unsupported
from envmill.tasks.backends.llm.scengen.earlier import (
    EarlierScenario,
    earlier_scenario,
    latest,
)
from envmill.tasks.backends.llm.scengen.invariants import broken_invariant, invariant_rules
from envmill.tasks.backends.llm.scengen.kinds import NOTHING_CHANGES, choose_kind, kind_problem
from envmill.tasks.backends.llm.scengen.references import dangling_reference
from envmill.tasks.backends.llm.scengen.solution import (
    RanSolution,
    generated_value_named,
    run_steps,
)
from envmill.tasks.backends.llm.skelbuilder.asking import Answer, Asker, Check, SkeletonFailed
from envmill.tasks.backends.llm.skelbuilder.context import preview_state, to_json
from envmill.tasks.backends.llm.skelbuilder.initial_state import MAX_RECORDS, state_problem
from envmill.tasks.certify import certify_scenario
from envmill.tasks.certify.gates import REPLY_REFUSED
from envmill.tasks.certify.grounding import ungrounded_reference
from envmill.tasks.certify.guard import guard_check
from envmill.tasks.core.statekit import diff_states
from envmill.tasks.core.system_message import Briefing, system_prompt
from envmill.tasks.envs import AdmittedEnvironment
from envmill.tasks.envs.policy import check_check_source
from envmill.tasks.judge import judge_reply
from envmill.tasks.sandbox import Sandbox

NEAR_DUPLICATE = 0.8  # share of records two states have in common that makes them one
MAX_STATE_CHARS = 100_000  # a state goes back into every later prompt of its scenario
# refused for the environment or the task: new checks cannot help
NOT_THE_CHECKS = ("loads", "solution_runs", "grounded")


@dataclass
class _Shared:
    """What the scenarios of one environment share: the states made so far (no two alike).

    Scenario ``i``'s state is compared with the states of scenarios ``0 … i-1`` once those are
    decided, whichever finished first, so the same answers make the same scenarios every time.
    Scenarios start in index order, so a wait is never for a scenario that waits in turn."""

    env: AdmittedEnvironment
    brief: EnvironmentBrief
    asker: Asker
    sandbox: Sandbox
    settings: ScenGenSettings
    seed: int
    states: dict[int, frozenset[str] | None] = field(default_factory=dict)  # None: no state
    told: dict[int, EarlierScenario | None] = field(default_factory=dict)  # with their tasks
    refused: Counter[int] = field(default_factory=Counter)  # answers refused, per scenario
    decided: threading.Condition = field(default_factory=threading.Condition)

    @functools.cached_property
    def briefing(self) -> Briefing:
        return Briefing(self.brief.introduction, tuple(self.brief.business_rules))

    @functools.cached_property
    def example_records(self) -> frozenset[str]:
        return _records(self.brief.example_state)

    def earlier_states(self, index: int) -> list[frozenset[str]]:
        with self.decided:
            self.decided.wait_for(lambda: all(j in self.states for j in range(index)))
            return [r for j, r in sorted(self.states.items()) if j < index and r is not None]

    def decide(self, index: int, state: dict[str, Any] | None) -> None:
        with self.decided:
            self.states[index] = None if state is None else _records(state)
            self.decided.notify_all()

    def kind(self, index: int) -> str:
        return choose_kind(self.settings.kinds, self.seed, self.env.env_id, index)

    def earlier_scenarios(self, index: int) -> list[EarlierScenario]:
        """Scenarios ``0 … index-1`` with their tasks, once each has its task or has none."""
        with self.decided:
            self.decided.wait_for(lambda: all(j in self.told for j in range(index)))
            return [s for j, s in sorted(self.told.items()) if j < index and s is not None]

    def tell(self, index: int, state: dict[str, Any] | None, task: str | None) -> None:
        with self.decided:
            self.told[index] = None if state is None else earlier_scenario(index, state, task)
            self.decided.notify_all()


def make_llm_scenarios(
    env: AdmittedEnvironment,
    brief: EnvironmentBrief,
    count: int,
    *,
    asker: Asker,
    sandbox: Sandbox,
    settings: ScenGenSettings,
    seed: int,
) -> ScenarioDrafts:
    """Up to ``count`` scenarios, certified or rejected after their repairs, with a reason for
    each one that could not be made."""
    shared = _Shared(env, brief, asker, sandbox, settings, seed)
    drafts = ScenarioDrafts()
    threads = max(1, min(settings.scenario_threads, count))
    with ThreadPoolExecutor(threads, thread_name_prefix="envmill-scen") as pool:
        for made in pool.map(lambda index: _scenario(shared, index), range(count)):
            if isinstance(made, SkippedScenario):
                drafts.skipped.append(made)
                continue
            spec, report, repairs = made
            drafts.scenarios.append(spec)
            drafts.reports[spec.scenario_id] = report
            drafts.repairs[spec.scenario_id] = repairs
    return drafts


def _scenario(
    shared: _Shared, index: int
) -> tuple[ScenarioSpec, CertificationReport, int] | SkippedScenario:
    try:
        state, conversational, task, ran = _state_and_task(shared, index)
        receipt: list[
            int
        ] = []  # where the checks' answer is on record (certification may refuse it)
        checks = _write_checks(shared, index, task, ran, state, receipt)
        return _certify_with_repairs(
            shared, index, task, ran, state, checks, conversational, receipt
        )
    except SkeletonFailed as exc:
        return SkippedScenario(index=index, code=exc.code, message=str(exc)[:2000])
    except BatchAborted:
        raise
    except Exception as exc:  # the sandbox failing under one scenario: that scenario only
        message = f"{type(exc).__name__}: {exc}"[:2000]
        return SkippedScenario(index=index, code="scenario_error", message=message)


def _state_and_task(
    shared: _Shared, index: int
) -> tuple[dict[str, Any], bool, TaskAnswer, RanSolution]:
    """The scenario's state and task; told to the later scenarios whether they came or not (the
    next state's prompt waits for them)."""
    state: dict[str, Any] | None = None
    task: TaskAnswer | None = None
    try:
        state = _write_state(shared, index)
        conversational = _is_conversational(shared, index)
        task, ran = _write_task(shared, index, state, conversational)
        return state, conversational, task, ran
    finally:
        shared.tell(index, state, task.task if task else None)


def _records(state: dict[str, Any]) -> frozenset[str]:
    """Each record of each collection (and each other value) as one text, for comparing."""
    found = set()
    for attr, value in state.items():
        items = value.items() if isinstance(value, dict) else [("", value)]
        found.update(canonical_json([attr, key, item]) for key, item in items)
    return frozenset(found)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _ask(
    shared: _Shared, stage: str, schema: type[Answer], index: int, check: Check, **variables: Any
) -> Answer:
    """One stage's answer for scenario ``index``; an answer ``check`` refuses goes back to the
    model with the reason, ``answer_rounds`` times."""

    def refused(answer: Answer) -> str | None:
        try:
            return check(answer)
        except (ValueError, TypeError, RecursionError, OverflowError) as exc:  # odd values
            return f"the answer cannot be used: {type(exc).__name__}: {str(exc)[:200]}"

    def count(_reason: str) -> None:
        with shared.decided:
            shared.refused[index] += 1

    return shared.asker.ask(
        stage,
        schema,
        rounds=shared.settings.answer_rounds,
        check=refused,
        on_refused=count,
        topic=shared.brief.topic,
        index=index,
        **variables,
    )


def _is_conversational(shared: _Shared, index: int) -> bool:
    digest = sha256_hex(canonical_json(["mode", shared.seed, shared.env.env_id, index]))
    return random.Random(int(digest[:16], 16)).random() < shared.settings.conversational_share


def _write_state(shared: _Shared, index: int) -> dict[str, Any]:
    env, brief = shared.env, shared.brief

    def problem(answer: StateAnswer) -> str | None:
        size = len(canonical_json(answer.state))
        if size > MAX_STATE_CHARS:
            return f"the state is {size} characters of JSON; keep it under {MAX_STATE_CHARS}"
        found = (
            state_problem(answer.state, env, shared.sandbox)
            or dangling_reference(answer.state)
            or broken_invariant(answer.state, brief.example_state)
            or _declared_invariant(brief, answer.state)
        )
        if found:
            return found
        records = _records(answer.state)
        for earlier in [shared.example_records, *shared.earlier_states(index)]:
            if _overlap(records, earlier) >= NEAR_DUPLICATE:
                return (
                    "this state repeats most records of one already used; write different "
                    "people, items, amounts, dates and statuses"
                )
        return None

    example, cut = preview_state(brief.example_state, shared.settings.preview_records)
    state = None
    try:
        earlier = latest(shared.earlier_scenarios(index))
        state = _ask(
            shared,
            "scenario_state",
            StateAnswer,
            index,
            problem,
            introduction=brief.introduction,
            rules=brief.business_rules,
            checked=invariant_rules(brief.example_state),
            max_records=MAX_RECORDS,
            max_chars=f"{MAX_STATE_CHARS:,}",
            state_schema=to_json(env.state_schema),
            example_state=to_json(example),
            cut=cut,
            earlier=earlier,
            kind=shared.kind(index),
        ).state
    finally:
        shared.decide(index, state)
    return state


def _declared_invariant(brief: EnvironmentBrief, state: dict[str, Any]) -> str | None:
    broken = brief.invariants(state) if brief.invariants else []
    return f"a rule of the domain does not hold: {broken[0]}" if broken else None


def _write_task(
    shared: _Shared, index: int, state: dict[str, Any], conversational: bool
) -> tuple[TaskAnswer, RanSolution]:
    ran: dict[str, RanSolution] = {}
    kind = shared.kind(index)
    tool_names = frozenset(tool.function.name for tool in shared.env.tools)

    def problem(answer: TaskAnswer) -> str | None:
        changes = kind not in NOTHING_CHANGES
        ran["last"] = run_steps(shared.env, state, answer.steps, shared.sandbox, changes)
        said = canonical_json([answer.task, answer.user_facts])
        return (
            ran["last"].problem
            or generated_value_named(said, state, ran["last"].final_state)
            or _answer_problem(answer, ran["last"])
            or kind_problem(kind, answer, ran["last"], state, tool_names)
            or _judged_reply(shared, answer, kind, state, ran["last"])
            or _ungrounded(shared, answer, state, conversational, ran["last"])
        )

    tools = [tool.function.model_dump() for tool in shared.env.tools]
    task = _ask(
        shared,
        "scenario_task",
        TaskAnswer,
        index,
        problem,
        conversational=conversational,
        kind=kind,
        tools=to_json(tools),
        state=to_json(state),
    )
    return task, ran["last"]


def _ungrounded(
    shared: _Shared,
    answer: TaskAnswer,
    state: dict[str, Any],
    conversational: bool,
    ran: RanSolution,
) -> str | None:
    """A step whose argument the agent could not have seen by then (`grounded`): the model is
    told the step and the value, and what would ground it."""
    draft = ScenarioSpec(
        env_id=shared.env.env_id,
        mode="conversational" if conversational else "non_conversational",
        task=answer.task,
        user_facts=answer.user_facts if conversational else {},
        initial_state=state,
        reference_solution=ran.steps,
        checks=[],
    )
    briefing = shared.briefing
    system = system_prompt(briefing.introduction, list(briefing.rules), state)
    tools = [tool.model_dump() for tool in shared.env.tools]
    unseen = ungrounded_reference(draft, ran.results, tools, system)
    if not unseen:
        return None
    where = "the task or the user facts" if conversational else "the task"
    return (
        f"{unseen[0]}: say that value in {where}, or begin with the lookup whose result shows "
        "it, as an agent would"
    )


def _answer_problem(answer: TaskAnswer, ran: RanSolution) -> str | None:
    """A typed expected answer must parse and be what the steps' results show; it comes with
    the reply that states it."""
    if answer.expected_answer is None:
        return None
    expected, problem = parse_expected(answer.expected_answer)
    if expected is None:
        return problem
    if not (answer.reply or "").strip():
        return "reply: an expected answer comes with the reply that states it"
    return unsupported(expected, ran.results)


def _judged_reply(
    shared: _Shared, answer: TaskAnswer, kind: str, state: dict[str, Any], ran: RanSolution
) -> str | None:
    """The reply as envmill's judge reads it, here where the model can still reword it: once
    certification refuses the reference reply, only the checks go back to the model."""
    expected = parse_expected(answer.expected_answer)[0] if answer.expected_answer else None
    refusal = answer.refusal if kind == "refusal" else None
    if expected is None and refusal is None:
        return None
    draft = ScenarioSpec(
        env_id=shared.env.env_id,
        task=answer.task,
        user_facts=answer.user_facts,
        initial_state=state,
        reference_solution=ran.steps,
        checks=[],
        expected_answer=expected,
        refusal=refusal,
    )
    verdict = judge_reply(draft, ran.final_state or state, answer.reply or "")
    if verdict is None or verdict.passed:
        return None
    said = "the expected answer" if expected is not None else "a refusal by the rule"
    return f"reply: envmill's judge does not read it as {said}: {verdict.reason}; say it plainly"


def _checks_problem(answer: ChecksAnswer) -> str | None:
    for number, item in enumerate(answer.checks, 1):
        refused = check_check_source(item.code)
        if refused:
            return f"check {number} ({item.fact}): {refused[0]}"
    return None


def _write_checks(
    shared: _Shared,
    index: int,
    task: TaskAnswer,
    ran: RanSolution,
    state: dict[str, Any],
    receipt: list[int],
) -> ChecksAnswer:
    steps = [
        {"tool": step.tool, "arguments": step.arguments, "result": result}
        for step, result in zip(ran.steps, ran.results, strict=True)
    ]
    return _ask(
        shared,
        "scenario_checks",
        ChecksAnswer,
        index,
        _checks_problem,
        receipt=receipt,
        kind=shared.kind(index),
        task=task.task,
        steps=to_json(steps),
        changes=to_json(diff_states(state, ran.final_state or {})),
    )


def _certify_with_repairs(
    shared: _Shared,
    index: int,
    task: TaskAnswer,
    ran: RanSolution,
    state: dict[str, Any],
    checks: ChecksAnswer,
    conversational: bool,
    receipt: list[int],
) -> tuple[ScenarioSpec, CertificationReport, int]:
    """Certify, and send refused checks back with the gate and its reason: each round is a
    repair, and the checks' answer it replaces is refused on its record."""
    guard = guard_check(state, ran.final_state or {})
    kind = shared.kind(index)
    for repairs in range(shared.settings.repair_rounds + 1):
        spec = ScenarioSpec(
            env_id=shared.env.env_id,
            backend="llm",
            mode="conversational" if conversational else "non_conversational",
            task=task.task,
            user_facts=task.user_facts if conversational else {},
            initial_state=state,
            reference_solution=ran.steps,
            checks=[CheckSpec(description=c.fact, code=c.code) for c in checks.checks] + [guard],
            expected_answer=parse_expected(task.expected_answer)[0]
            if task.expected_answer
            else None,
            refusal=task.refusal if kind == "refusal" else None,
            reference_answer=task.reply if task.expected_answer or kind == "refusal" else None,
            kind=kind,
        )
        report = certify_scenario(spec, shared.env, shared.sandbox, briefing=shared.briefing)
        gate = report.rejected_gate
        reason = next((g.reason for g in report.gates if g.gate == gate), "")
        not_the_checks = gate in (None, *NOT_THE_CHECKS) or reason.startswith(REPLY_REFUSED)
        if not_the_checks or repairs == shared.settings.repair_rounds:
            with shared.decided:
                refused = shared.refused[index]
            return spec, report, repairs + refused
        if receipt:
            shared.asker.refuse_kept(receipt.pop(), f"{gate}: {reason}")
        checks = _ask(
            shared,
            "scenario_repair",
            ChecksAnswer,
            index,
            _checks_problem,
            kind=kind,
            task=task.task,
            checks=to_json([c.model_dump() for c in checks.checks]),
            gate=gate,
            reason=reason,
            receipt=receipt,
        )
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns
