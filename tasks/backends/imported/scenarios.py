"""BFCL tasks → envmill scenarios: several user turns, the ground truth as the reference, and
BFCL's two criteria as the scenario's checks and expected results.

- The state criterion (every involved class's public attributes equal the ground truth's at the
  end) becomes one check per class, a pure function of the final state like any other check.
- The response criterion (each turn's ground-truth results appear among the agent's results so
  far) reads the conversation, which checks never do: it is stored as ``expected_results`` and
  judged by envmill (DESIGN §3.3).

Each task's ground truth is replayed twice, through the adapted module in the sandbox and
through BFCL's own executor in a child process; a task whose two final states differ is skipped
with the difference, so a scenario's checks are BFCL's own verdict on the ground truth.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from envmill.schemas.backends import BFCL
from envmill.schemas.benchmarks import BFCL_SOURCE, EVAL_SPLIT
from envmill.schemas.run import SkippedScenario
from envmill.schemas.scenario import ScenarioSpec, SolutionStep, Turn
from envmill.tasks.backends.base import ScenarioDrafts
from envmill.tasks.backends.imported.bfcl.adapt import AdaptedEnvironment, state_attribute
from envmill.tasks.backends.imported.bfcl.calls import CallError, parse_call
from envmill.tasks.backends.imported.bfcl.executor import BfclExecutor, BfclExecutorError
from envmill.tasks.backends.imported.bfcl.package import BfclTask, added_functions_prompt
from envmill.tasks.backends.imported.bfcl.replay import bfcl_result, tool_parameters
from envmill.tasks.backends.imported.bfcl.state import eq_fields, public_state
from envmill.tasks.backends.imported.state_check import state_check

if TYPE_CHECKING:
    from envmill.tasks.envs import AdmittedEnvironment
    from envmill.tasks.sandbox import Sandbox


class TaskSkipped(Exception):
    """A task that cannot become a scenario; ``code`` is what the import's summary counts."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def bfcl_scenarios(
    tasks: list[BfclTask], adapted: AdaptedEnvironment, env: AdmittedEnvironment, sandbox: Sandbox
) -> ScenarioDrafts:
    """One scenario per task, or a skip with its reason; nothing else is lost when one fails."""
    drafts = ScenarioDrafts()
    with BfclExecutor() as executor:
        for index, task in enumerate(tasks):
            try:
                drafts.scenarios.append(bfcl_scenario(task, adapted, env, sandbox, executor))
            except TaskSkipped as exc:
                drafts.skipped.append(
                    SkippedScenario(index=index, code=exc.code, message=f"{task.id}: {exc}")
                )
    return drafts


def bfcl_scenario(
    task: BfclTask,
    adapted: AdaptedEnvironment,
    env: AdmittedEnvironment,
    sandbox: Sandbox,
    executor: BfclExecutor,
) -> ScenarioSpec:
    opening, *later = _user_turns(task)
    parameters = tool_parameters(adapted)
    per_turn = [[_step(text, parameters, adapted) for text in turn] for turn in task.ground_truth]
    try:
        initial = executor.initial_state(task)
        theirs = executor.replay_ground_truth(task)
    except BfclExecutorError as exc:
        raise TaskSkipped("bfcl_executor", str(exc)) from None
    results, final = _replayed(env, sandbox, initial, per_turn)
    _same_as_bfcl(task, theirs, results, final)
    steps, turns = _flattened(per_turn, later, task)
    try:
        return _spec(task, env, opening, initial, final, steps, turns, results)
    except ValidationError as exc:  # the record refuses it (a withheld tool the truth calls)
        raise TaskSkipped("invalid_scenario", exc.errors()[0]["msg"]) from None


def _spec(
    task: BfclTask,
    env: AdmittedEnvironment,
    opening: str,
    initial: dict[str, Any],
    final: dict[str, Any],
    steps: list[SolutionStep],
    turns: list[Turn],
    results: list[list[dict[str, Any]]],
) -> ScenarioSpec:
    return ScenarioSpec(
        env_id=env.env_id,
        backend=BFCL,
        task=opening,
        initial_state=initial,
        reference_solution=steps,
        checks=[
            state_check(name, state_attribute(name), public_state(final, name), eq_fields())
            for name in task.involved_classes
        ],
        turns=turns,
        withheld_tools=sorted({*task.excluded_function, *_missed(task)}),
        expected_results=results,
        kind="bfcl",
        source=BFCL_SOURCE,
        split=EVAL_SPLIT,
        source_id=task.id,
    )


def _user_turns(task: BfclTask) -> list[str]:
    """Each turn's user message; a turn without one is where BFCL adds the missed functions
    (miss_func), and BFCL's own inference says its fixed line there."""
    texts = []
    for index, text in enumerate(task.turns):
        if text is None:
            if str(index) not in task.missed_function:
                raise TaskSkipped("empty_turn", f"turn {index} has no user message")
            text = added_functions_prompt()
        texts.append(text)
    return texts


def _offers(task: BfclTask, turn: int) -> list[str]:
    """The missed functions a turn adds (offered from then on)."""
    return sorted(task.missed_function.get(str(turn), []))


def _step(text: str, parameters: dict[str, list[str]], adapted: AdaptedEnvironment) -> SolutionStep:
    tool = text.split("(", 1)[0].strip()
    if tool in adapted.refused:
        raise TaskSkipped("refused_tool", f"{tool}: {adapted.refused[tool]}")
    try:
        call = parse_call(text, parameters)
    except CallError as exc:
        raise TaskSkipped("unparsable_call", str(exc)) from None
    return SolutionStep(tool=call["tool"], arguments=call["arguments"])


def _replayed(
    env: AdmittedEnvironment,
    sandbox: Sandbox,
    initial: dict[str, Any],
    per_turn: list[list[SolutionStep]],
) -> tuple[list[list[dict[str, Any]]], dict[str, Any]]:
    """What each turn's calls return through the adapted module, and the final state."""
    episode = sandbox.episode(env.source, env.class_name, initial)
    try:
        results = [[episode.call(s.tool, s.arguments).result for s in turn] for turn in per_turn]
        final = episode.state()
    finally:
        episode.close()
    if final is None:
        raise TaskSkipped("sandbox", "the adapted module's host failed on the ground truth")
    return results, final


def _same_as_bfcl(
    task: BfclTask,
    theirs: dict[str, Any],
    results: list[list[dict[str, Any]]],
    final: dict[str, Any],
) -> None:
    """The adapted module must answer each call as BFCL's own code does, and end where it ends,
    class by class; otherwise the scenario would not be BFCL's task."""
    ours = [[bfcl_result(result) for result in turn] for turn in results]
    for turn, (mine, bfcl) in enumerate(zip(ours, theirs["results"], strict=True)):
        for call, (a, b) in enumerate(zip(mine, bfcl, strict=True)):
            if a != b:
                raise TaskSkipped(
                    "differs_from_bfcl",
                    f"turn {turn} call {call} returns {a[:80]!r} here, {b[:80]!r} in BFCL",
                )
    for name in task.involved_classes:
        if public_state(final, name) != theirs["states"][name]:
            raise TaskSkipped(
                "differs_from_bfcl", f"{name} ends differently in the adapted module and in BFCL"
            )


def _missed(task: BfclTask) -> list[str]:
    return [name for names in task.missed_function.values() for name in names]


def _flattened(
    per_turn: list[list[SolutionStep]], later: list[str], task: BfclTask
) -> tuple[list[SolutionStep], list[Turn]]:
    steps: list[SolutionStep] = list(per_turn[0]) if per_turn else []
    turns = []
    for index, (text, turn) in enumerate(zip(later, per_turn[1:], strict=True), start=1):
        turns.append(Turn(content=text, first_step=len(steps), offers=_offers(task, index)))
        steps += turn
    return steps, turns
