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

from envmill.schemas.backends import BFCL
from envmill.schemas.benchmarks import BFCL_SOURCE, EVAL_SPLIT
from envmill.schemas.run import SkippedScenario
from envmill.schemas.scenario import CheckSpec, ScenarioSpec, SolutionStep, Turn
from envmill.tasks.backends.base import ScenarioDrafts
from envmill.tasks.backends.imported.bfcl.adapt import AdaptedEnvironment
from envmill.tasks.backends.imported.bfcl.calls import CallError, parse_call
from envmill.tasks.backends.imported.bfcl.codec import public_state
from envmill.tasks.backends.imported.bfcl.executor import BfclExecutor, ExecutorError
from envmill.tasks.backends.imported.bfcl.package import BfclTask

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
    per_turn = [[_step(text, adapted) for text in turn] for turn in task.ground_truth]
    try:
        initial = executor.initial_state(task)
    except ExecutorError as exc:
        raise TaskSkipped("bfcl_executor", f"BFCL's own loader failed: {exc}") from None
    results, final = _replayed(env, sandbox, initial, per_turn)
    _same_as_bfcl(task, executor, final, per_turn)
    steps, turns = _flattened(per_turn, later)
    return ScenarioSpec(
        env_id=env.env_id,
        backend=BFCL,
        task=opening,
        initial_state=initial,
        reference_solution=steps,
        checks=[state_check(name, public_state(final, name)) for name in task.involved_classes],
        turns=turns,
        withheld_tools=sorted(set(task.excluded_function)),
        expected_results=results,
        kind="bfcl",
        source=BFCL_SOURCE,
        split=EVAL_SPLIT,
        origin=task.id,
    )


def _user_turns(task: BfclTask) -> list[str]:
    if any(text is None for text in task.turns):
        raise TaskSkipped("empty_turn", "a turn without a user message is not imported")
    return [text for text in task.turns if text is not None]


def _step(text: str, adapted: AdaptedEnvironment) -> SolutionStep:
    try:
        call = parse_call(text, adapted.tools)
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
    executor: BfclExecutor,
    final: dict[str, Any],
    per_turn: list[list[SolutionStep]],
) -> None:
    """The adapted module must end where BFCL's own code ends, class by class."""
    try:
        theirs = executor.replay(task, [[s.model_dump() for s in turn] for turn in per_turn])
    except ExecutorError as exc:
        raise TaskSkipped("bfcl_executor", f"BFCL's own executor failed: {exc}") from None
    for name in task.involved_classes:
        if public_state(final, name) != theirs["states"][name]:
            raise TaskSkipped(
                "differs_from_bfcl", f"{name} ends differently in the adapted module and in BFCL"
            )


def _flattened(
    per_turn: list[list[SolutionStep]], later: list[str]
) -> tuple[list[SolutionStep], list[Turn]]:
    steps: list[SolutionStep] = list(per_turn[0]) if per_turn else []
    turns = []
    for text, turn in zip(later, per_turn[1:], strict=True):
        turns.append(Turn(content=text, first_step=len(steps)))
        steps += turn
    return steps, turns


def state_check(class_name: str, expected: dict[str, Any]) -> CheckSpec:
    """BFCL's state criterion for one class as a check: its public attributes (those not
    starting with an underscore, as BFCL compares them) equal the ground truth's at the end."""
    code = (
        "def check(initial_state, final_state):\n"
        f"    state = final_state.get({class_name!r})\n"
        "    if not isinstance(state, dict):\n"
        "        return False\n"
        '    public = {k: v for k, v in state.items() if not k.startswith("_")}\n'
        f"    return public == {expected!r}\n"
    )
    return CheckSpec(
        description=f"{class_name} ends as BFCL's ground truth leaves it (BFCL's state check)",
        code=code,
    )
