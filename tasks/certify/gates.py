"""The gates of DESIGN §3.3 as verdicts over collected evidence, each with a reason.

Reasons are written for two readers: an engineer asking "why did yield drop?" in SQL, and a
model in a repair turn that must learn which check to fix.
"""

from __future__ import annotations

from collections.abc import Callable

from envmill.schemas.scenario import GateName, GateResult, ScenarioSpec
from envmill.tasks.certify.evidence import FINAL, INITIAL, NO_ANSWER, Evidence, Trial
from envmill.tasks.certify.mutants import ReferenceRun
from envmill.tasks.certify.text_probes import judges_text
from envmill.tasks.core.statekit import state_hash
from envmill.tasks.judge import judges_reply

Verdict = tuple[bool, str]
Judge = Callable[[ScenarioSpec, Evidence, ReferenceRun], Verdict]


# how checks_pass says the reply, not a check, failed: a writer repairing checks can skip it
REPLY_REFUSED = "the judge refuses the reference reply"


def judge(gate: GateName, scenario: ScenarioSpec, ev: Evidence) -> GateResult:
    if gate == "loads":
        return GateResult(gate=gate, passed=ev.load_error is None, reason=ev.load_error or "")
    if ev.run is None:
        return GateResult(
            gate=gate, passed=False, reason="not evaluated: the initial state does not load"
        )
    passed, reason = JUDGES[gate](scenario, ev, ev.run)  # every judge is handed the run
    return GateResult(gate=gate, passed=passed, reason=reason)


def _solution_runs(scenario: ScenarioSpec, ev: Evidence, run: ReferenceRun) -> Verdict:
    for index, outcome in enumerate(run.outcomes):
        if not outcome.succeeded:
            tool = scenario.reference_solution[index].tool
            why = outcome.result.get("error", outcome.result)
            return False, f"step {index + 1} ({tool}) failed: {why}"
    return True, f"{len(run.outcomes)} steps succeeded"


def _checks_pass(scenario: ScenarioSpec, ev: Evidence, run: ReferenceRun) -> Verdict:
    if not scenario.checks:
        return False, "the scenario has no checks"
    for index, cell in enumerate(ev.column(FINAL)):
        if cell.value is not True:
            why = cell.error or "returned False"
            described = scenario.checks[index].description
            return False, f"check {index + 1} ({described}) on the final state: {why}"
    verdict = ev.verdict(scenario, FINAL, scenario.answer)
    if verdict is not None and not verdict.passed:
        return False, f"{REPLY_REFUSED} {scenario.answer!r}: {verdict.reason}"
    held = ev.results_verdict(scenario, ev.obtained)
    if held is not None and not held.passed:
        return False, f"the reference's own results fail the results verdict: {held.reason}"
    judged = " and the judge accepts the reference reply" if verdict is not None else ""
    judged += " and the reference obtains every expected result" if held is not None else ""
    return True, f"all {len(scenario.checks)} checks hold on the final state{judged}"


def _not_trivial(scenario: ScenarioSpec, ev: Evidence, run: ReferenceRun) -> Verdict:
    """The initial state, with nothing said, earns no full reward."""
    failing = sum(cell.value is not True for cell in ev.column(INITIAL))
    if ev.reward(scenario, INITIAL, NO_ANSWER).success:
        return False, "every check already holds on the initial state"
    return True, f"{failing} of {len(scenario.checks)} checks fail on the initial state"


def _partial_fails(scenario: ScenarioSpec, ev: Evidence, run: ReferenceRun) -> Verdict:
    if ev.partial is None and judges_reply(scenario):  # a question: the answer is the work
        if ev.reward(scenario, FINAL, NO_ANSWER, ev.obtained).success:
            return False, "full reward holds when the answer is withheld"
        return True, "the reference loses full reward when its answer is withheld"
    if ev.partial is None:
        return False, "the solution has no state-changing step"
    failing = sum(cell.value is not True for cell in ev.column(ev.partial.pair))
    if ev.reward(scenario, ev.partial.pair, scenario.answer, ev.partial.obtained).success:
        return False, f"every check still holds {ev.partial.plan.label}"
    held = ev.results_verdict(scenario, ev.partial.obtained)
    lost = " and an expected result is not obtained" if held and not held.passed else ""
    return True, f"{failing} checks fail{lost} {ev.partial.plan.label}"


def _guards_collateral(scenario: ScenarioSpec, ev: Evidence, run: ReferenceRun) -> Verdict:
    """Every wrong solution whose outcome differs from the reference's loses full reward."""
    crashed = next((t for t in ev.trials if t.crashed), None)
    if crashed is not None:
        return False, f"the environment failed (timeout or crash) on {crashed.plan.label}"
    mutants = [t for t in ev.trials if t.plan.kind != "reorder" and t.needs_outcome]
    differing = [t for t in mutants if t.is_wrong_solution]
    uncaught = [t for t in differing if _full_reward(scenario, ev, t)]
    counts = ", ".join(
        f"{sum(t.plan.kind == kind for t in mutants)} {kind}"
        for kind in ("extra", "drop", "swap", "alter")
    )
    summary = f"{len(mutants)} mutants tried ({counts}); {len(differing)} change the outcome"
    if uncaught:
        more = f" (and {len(uncaught) - 1} more)" if len(uncaught) > 1 else ""
        return False, f"{summary}; {uncaught[0].plan.label} keeps full reward{more}"
    return True, f"{summary}; all {len(differing)} caught"


def _accepts_reorder(scenario: ScenarioSpec, ev: Evidence, run: ReferenceRun) -> Verdict:
    """Two independent state-changing steps done in the other order keep full reward."""
    reorders = [t for t in ev.trials if t.plan.kind == "reorder"]
    independent = [t for t in reorders if t.is_independent_reorder]
    refused = [t for t in independent if not _full_reward(scenario, ev, t)]
    summary = f"{len(reorders)} reorderings tried; {len(independent)} independent"
    if refused:
        failing = [
            i + 1
            for i, cell in enumerate(ev.column(refused[0].pair))
            if cell.value is not True and not (cell.error or "").startswith("not evaluated")
        ]
        return False, f"{summary}; with {refused[0].plan.label}, checks {failing} fail"
    return True, f"{summary}; all keep full reward"


def _grounded(scenario: ScenarioSpec, ev: Evidence, run: ReferenceRun) -> Verdict:
    """Every argument of the reference was visible to the agent before its step."""
    if ev.unseen:
        more = f" (and {len(ev.unseen) - 1} more)" if len(ev.unseen) > 1 else ""
        return False, f"{ev.unseen[0]}{more}"
    arguments = sum(len(step.arguments) for step in scenario.reference_solution)
    return True, f"all {arguments} arguments of {len(run.outcomes)} steps were visible before use"


def _deterministic(scenario: ScenarioSpec, ev: Evidence, run: ReferenceRun) -> Verdict:
    for index, (row, other) in enumerate(zip(ev.cells, ev.other_cells, strict=True)):
        if any(cell.late for cell in row + other):  # a mutant it "caught" may not be caught
            return False, (
                f"check {index + 1} gave no answer in time on some states it was given; a "
                "check must answer promptly on every state"
            )
        if any(cell.mutated for cell in row + other):
            return False, f"check {index + 1} changes the states it is given"
        if ev.unstable[index]:
            return False, (
                f"check {index + 1} gives different results on the same states when evaluated "
                "again (it keeps state between evaluations, or depends on object addresses)"
            )
        if [c.value for c in row[: len(other)]] != [c.value for c in other]:
            return False, f"check {index + 1} gives different results in separate processes"
    if ev.replay_hash != state_hash(run.states[-1]):
        return False, "the solution replayed in a separate process reaches another final state"
    return True, (
        "checks gave the same results in separate processes, kept no state and left the "
        "states unchanged; the replayed solution reached the same final state"
    )


def _full_reward(scenario: ScenarioSpec, ev: Evidence, trial: Trial) -> bool:
    """A wrong solution or reordering says what the reference says: only its state may cost it."""
    return ev.reward(scenario, trial.pair, scenario.answer, trial.obtained).success


JUDGES: dict[str, Judge] = {
    "solution_runs": _solution_runs,
    "checks_pass": _checks_pass,
    "not_trivial": _not_trivial,
    "partial_fails": _partial_fails,
    "guards_collateral": _guards_collateral,
    "accepts_reorder": _accepts_reorder,
    "judges_text": judges_text,
    "grounded": _grounded,
    "deterministic": _deterministic,
}
