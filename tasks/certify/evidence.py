"""Everything certification observes, collected before any gate is judged.

One episode (image 0) runs the reference solution, then every mutant and reordering from the
state the reference had reached where it departs; one more episode in a separately started
zygote (image 1) replays the solution; the checks run in one host of each image, every
evaluation in a fresh namespace (DESIGN §3.3). The gates in ``gates.py`` are verdicts over this.
"""

from __future__ import annotations

import functools
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

from envmill.schemas.ids import canonical_json
from envmill.schemas.scenario import ScenarioSpec, SolutionStep
from envmill.tasks.certify.generated import outcome_view
from envmill.tasks.certify.grounding import Unseen, ungrounded_reference
from envmill.tasks.certify.mutants import (
    Plan,
    ReferenceRun,
    plan_drop,
    plan_mutants,
    plan_reorders,
)
from envmill.tasks.certify.quick_schema import is_plain, surely_conforms
from envmill.tasks.certify.reward import Reward, score_checks
from envmill.tasks.core.statekit import state_hash
from envmill.tasks.envs import AdmittedEnvironment
from envmill.tasks.envs.policy import check_check_source
from envmill.tasks.judge import ReplyJudge, Verdict, judge_reply, judge_results
from envmill.tasks.sandbox import CheckCell, Sandbox, ToolEpisode, known_state
from envmill.tasks.sandbox.outcomes import ReplayOutcome, ToolOutcome

REFUSED_CHECK = "def check(initial_state, final_state):\n    return None\n"
OTHER_IMAGE = 1


@dataclass
class Trial:
    """A plan as it ran: where it ended, whether every step succeeded, whether it changed."""

    plan: Plan
    final_state: dict[str, Any]
    succeeded: bool
    changed: bool
    crashed: bool = False  # the host died or timed out on it: no outcome to judge
    same_outcome: bool = False  # as the reference's, up to generated values
    pair: int = -1  # its column in the check results; -1: no gate needs its checks
    results: list[dict[str, Any]] | None = None  # traced: what each of its steps returned
    obtained: list[list[dict[str, Any]]] = field(default_factory=list)  # per user message

    @property
    def needs_outcome(self) -> bool:
        """Whether a gate could care how its outcome compares (a failed extra or reordering,
        or one that changed nothing, cannot matter)."""
        if self.crashed:
            return False
        if self.plan.kind == "extra":
            return self.changed  # a call that says it failed but changed the state still counts
        if self.plan.kind == "reorder":
            return self.succeeded
        return True

    @property
    def is_wrong_solution(self) -> bool:
        """A mutant whose outcome differs: it must lose full reward (an extra only counts
        when its call did something)."""
        return self.needs_outcome and self.plan.kind != "reorder" and not self.same_outcome

    @property
    def is_independent_reorder(self) -> bool:
        """A reordering that succeeded and reached the same outcome: it must keep full reward."""
        return self.needs_outcome and self.plan.kind == "reorder" and self.same_outcome


@dataclass
class Evidence:
    load_error: str | None = None
    run: ReferenceRun | None = None
    trials: list[Trial] = field(default_factory=list)
    partial: Trial | None = None
    cells: list[list[CheckCell]] = field(default_factory=list)  # check -> pair (image 0)
    other_cells: list[list[CheckCell]] = field(default_factory=list)  # check -> base pair
    unstable: list[bool] = field(default_factory=list)
    replay_hash: str | None = None
    finals: list[dict[str, Any]] = field(default_factory=list)  # each column's final state
    verdicts: dict[tuple[int, str], Verdict | None] = field(default_factory=dict)
    judge: ReplyJudge = field(default=judge_reply)  # every gate's verdicts, probes included
    scenario: ScenarioSpec | None = None  # whose user messages split the results obtained
    unseen: list[Unseen] = field(default_factory=list)  # reference arguments nothing showed

    @property
    def final_state(self) -> dict[str, Any] | None:
        return self.run.states[-1] if self.run else None

    @property
    def obtained(self) -> list[list[dict[str, Any]]]:
        """The results the reference obtained, per user message."""
        return self.trial_obtained(len(self.run.outcomes), []) if self.run else []

    def trial_obtained(
        self, start: int, results: list[dict[str, Any]], offset: int = 0
    ) -> list[list[dict[str, Any]]]:
        """Per user message, the results of a run that took the reference's first ``start``
        steps, then ``results`` from position ``start + offset`` (a dropped step's successors
        stand where they stood: ``offset`` 1)."""
        scenario, run = self.scenario, self.run
        if scenario is None or run is None:
            return []
        timeline = [(i, o.result) for i, o in enumerate(run.outcomes[:start])]
        timeline += [(start + offset + j, r) for j, r in enumerate(results)]
        split: list[list[dict[str, Any]]] = [[] for _ in scenario.user_messages]
        for position, result in timeline:
            split[scenario.turn_of(position)].append(result)
        return split

    def column(self, pair: int) -> list[CheckCell]:
        return [row[pair] for row in self.cells]

    def verdict(self, scenario: ScenarioSpec, pair: int, reply: str) -> Verdict | None:
        """The judge on ``reply`` as the last words of an episode that ended in column
        ``pair``'s state (None: the scenario expects no reply)."""
        key = (pair, reply)
        if key not in self.verdicts:
            self.verdicts[key] = self.judge(scenario, self.finals[pair], reply)
        return self.verdicts[key]

    def reward(
        self,
        scenario: ScenarioSpec,
        pair: int,
        reply: str,
        obtained: list[list[dict[str, Any]]] | None = None,
    ) -> Reward:
        """The one reward of an episode ending in column ``pair``'s state with ``reply``,
        having obtained ``obtained`` (per user message; None: nothing) where the scenario
        expects results."""
        values: list[bool | None] = [cell.value for cell in self.column(pair)]
        verdict = self.verdict(scenario, pair, reply)
        if verdict is not None:
            values.append(verdict.passed)
        held = judge_results(scenario.expected_results, obtained or [])
        if held is not None:
            values.append(held.passed)
        return score_checks(values)

    def results_verdict(
        self, scenario: ScenarioSpec, obtained: list[list[dict[str, Any]]] | None = None
    ) -> Verdict | None:
        """The verdict on ``obtained`` (None: the scenario expects no results)."""
        return judge_results(scenario.expected_results, obtained or [])


FINAL, INITIAL = 0, 1  # the first two check columns (the partial replay's follows, when run)
NO_ANSWER = ""


def collect_evidence(
    scenario: ScenarioSpec,
    env: AdmittedEnvironment,
    sandbox: Sandbox,
    judge: ReplyJudge = judge_reply,
    system_message: str = "",
) -> Evidence:
    """Everything the gates judge; ``judge`` gives every verdict on a reply (the reference's,
    ``judges_text``'s probes), so an LLM judge is certified by the same probes as the rules;
    ``system_message`` is what the reference trajectory's agent reads first."""
    load_error = _schema_error(scenario.initial_state, env.state_schema) or _unknown_rule(
        scenario, env
    )
    evidence = Evidence(load_error=load_error, judge=judge, scenario=scenario)
    if evidence.load_error is None:
        _run_episode(scenario, env, sandbox, evidence)
    if evidence.run is not None:
        cut_short = evidence.run.cut_short  # a stalling step is not run twice
        evidence.replay_hash = (
            f"not replayed: {cut_short}" if cut_short else _replay_elsewhere(scenario, env, sandbox)
        )
        _run_checks(scenario, sandbox, evidence, evidence.run)
        results = [outcome.result for outcome in evidence.run.outcomes]
        tools = [tool.model_dump() for tool in env.tools]
        evidence.unseen = ungrounded_reference(scenario, results, tools, system_message)
    return evidence


def _schema_error(state: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """How ``state`` breaks ``schema``, in jsonschema's words; None when it conforms (which a
    plain schema's quick walk tells first)."""
    schema_json = canonical_json(schema)
    if _is_plain(schema_json) and surely_conforms(state, schema):
        return None
    validator = _validator(schema_json)
    error = best_match(validator.iter_errors(state))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"initial state does not match the state schema at {where}: {error.message}"


def _unknown_rule(scenario: ScenarioSpec, env: AdmittedEnvironment) -> str | None:
    """A generated refusal rests on a rule the environment has: its id names the tool that
    enforces it (whose docstring states the rule and whose error the agent meets). A hand-written
    scenario (backend ``manual``) names its rules as its author likes: an environment declares
    none by id, so there is nothing to hold them to."""
    if scenario.refusal is None or scenario.backend == "manual":
        return None
    tools = {tool.function.name for tool in env.tools}
    for number, rule in enumerate(scenario.refusal.rules):
        if rule.rule_id not in tools:
            return (
                f"refusal.rules.{number}.rule_id: {rule.rule_id!r} is not a rule of environment "
                f"{env.env_id}: a generated rule is named by the tool that enforces it"
            )
    return None


@functools.lru_cache(maxsize=64)
def _is_plain(schema_json: str) -> bool:
    """Whether the quick walk knows every keyword of the schema (read once per schema)."""
    return is_plain(json.loads(schema_json))


@functools.lru_cache(maxsize=64)
def _validator(schema_json: str) -> jsonschema.Draft202012Validator:
    """One validator per state schema: scenarios of one environment share it."""
    return jsonschema.Draft202012Validator(json.loads(schema_json))


def _run_episode(
    scenario: ScenarioSpec, env: AdmittedEnvironment, sandbox: Sandbox, evidence: Evidence
) -> None:
    # a host of its own, as a rollout's: a kept one would show what a program carried over
    # from the scenario before (a mutable default's memo) in the reference's tool results
    with sandbox.episode(env.source, env.class_name, scenario.initial_state) as episode:
        if not episode.loaded:
            evidence.load_error = f"initial state does not load: {episode.load_outcome.error}"
            return
        budget = sandbox.limits.scenario_wall_seconds
        solution = scenario.reference_solution
        at_once = min(budget, sandbox.limits.wall_seconds)  # no longer than one call may take
        run = evidence.run = _traced_reference(solution, episode, at_once) or _run_reference(
            solution, episode, budget
        )
        plans = [] if run.cut_short else plan_mutants(run, env.tools, env.tool_kinds)
        plans += [] if run.cut_short else plan_reorders(run, scenario.turn_of)
        last = run.changed_at[-1] if run.changed_at else _last_expected_read(scenario, run)
        if last is not None and last not in run.changed_at and not run.cut_short:
            plans.append(plan_drop(run, last))  # a read the results verdict wants, left out
        evidence.trials = _run_plans(plans, run, episode, evidence)
    _compare_outcomes(run, evidence.trials)
    evidence.partial = next(
        (t for t in evidence.trials if t.plan.kind == "drop" and t.plan.start == last), None
    )


def _last_expected_read(scenario: ScenarioSpec, run: ReferenceRun) -> int | None:
    """The last reference step whose result the scenario expects the agent to obtain: where a
    solution changes nothing, the partial replay leaves it out."""
    wanted = {canonical_json(r) for results in scenario.expected_results or [] for r in results}
    found = [i for i, o in enumerate(run.outcomes) if canonical_json(o.result) in wanted]
    return found[-1] if found else None


def _compare_outcomes(run: ReferenceRun, trials: list[Trial]) -> None:
    """Whether each trial that needs it reached the reference's outcome. A view is a function
    of the final state's canonical JSON, so trials that ended alike (a quarter of them: most
    that changed nothing) share one."""
    views = {canonical_json(run.states[-1]): outcome_view(run.states[0], run.states[-1])}
    reference_view = next(iter(views.values()))
    for trial in trials:
        if trial.needs_outcome:
            key = canonical_json(trial.final_state)
            if key not in views:
                views[key] = outcome_view(run.states[0], trial.final_state)
            trial.same_outcome = views[key] == reference_view


def _run_reference(
    solution: list[SolutionStep], episode: ToolEpisode, budget: float = math.inf
) -> ReferenceRun:
    """The solution step by step; after a step that timed out, or once ``budget`` seconds have
    gone, the rest is not run (each stalling step cost its whole wall limit, twice: a 7-step
    hand-written scenario took 73 s to reject, issue 24) and says why."""
    states, outcomes, changed_at = [known_state(episode)], [], []
    started, cut_short = time.monotonic(), None
    for index, step in enumerate(solution):
        if cut_short is not None:
            outcomes.append(ToolOutcome.host_failed(cut_short, "not run"))
            states.append(states[-1])
            continue
        outcomes.append(episode.call(step.tool, step.arguments))
        states.append(known_state(episode))
        if states[-1] != states[-2]:
            changed_at.append(index)
        if outcomes[-1].state is None:  # its host timed out or died
            cut_short = f"step {index + 1} timed out, so the reference run stopped there"
            if outcomes[-1].error_class != "timeout":
                cut_short = f"step {index + 1} stopped its host, so the reference run stopped there"
        elif time.monotonic() - started > budget:
            cut_short = (
                f"the scenario's {budget:g} s certification budget ran out at step {index + 1}"
            )
    return ReferenceRun(
        solution=solution,
        states=states,
        outcomes=outcomes,
        changed_at=changed_at,
        cut_short=cut_short,
    )


def _traced_reference(
    solution: list[SolutionStep], episode: ToolEpisode, budget: float
) -> ReferenceRun | None:
    """The solution in one round trip, every step's result and state returned, within
    ``budget`` seconds; None when the host failed on it (a step that hangs or kills its host,
    or takes longer: found out step by step instead)."""
    initial = known_state(episode)
    steps = _calls(solution)
    traced = episode.replays([initial], [(0, steps)], trace=True, wall_seconds=budget)
    if not traced or traced[0].results is None or traced[0].states is None:
        episode.load_state(initial)
        return None
    results, states = traced[0].results, [initial, *traced[0].states]
    return ReferenceRun(
        solution=solution,
        states=states,
        outcomes=[ToolOutcome(result=r, state=s) for r, s in zip(results, states[1:], strict=True)],
        changed_at=[i for i in range(len(solution)) if states[i + 1] != states[i]],
    )


def _run_plans(
    plans: list[Plan], run: ReferenceRun, episode: ToolEpisode, evidence: Evidence
) -> list[Trial]:
    """Every plan from the state the reference had reached where it departs, in one round
    trip; when the host fails on them, one by one until the first that crashes (a hanging
    tool must not multiply). Where the scenario expects results, each step's result is traced
    too, and each trial knows what it obtained per user message."""
    starts = sorted({plan.start for plan in plans})
    at = {start: index for index, start in enumerate(starts)}
    batch = [(at[p.start], _calls(p.steps)) for p in plans]
    trace = evidence.scenario is not None and evidence.scenario.expected_results is not None
    states = [run.states[s] for s in starts]
    replayed = episode.replays(states, batch, trace=trace) if plans else []
    if replayed is not None:
        trials = [_trial(p, run, outcome) for p, outcome in zip(plans, replayed, strict=True)]
    else:
        trials = []
        for plan in plans:
            trials.append(_run_plan(plan, run, episode, trace))
            if trials[-1].crashed:
                break
    for trial in trials if trace else []:
        offset = 1 if trial.plan.kind == "drop" else 0  # its steps stand where they stood
        trial.obtained = evidence.trial_obtained(trial.plan.start, trial.results or [], offset)
    return trials


def _run_plan(plan: Plan, run: ReferenceRun, episode: ToolEpisode, trace: bool) -> Trial:
    """A plan in one round trip; a host that died on it counts as a failed run that changed
    nothing (the mutant is then judged on the state it started from)."""
    if trace:  # the results too: a crash obtains nothing after the reference's prefix
        traced = episode.replays([run.states[plan.start]], [(0, _calls(plan.steps))], trace=True)
        if traced is None:
            return Trial(plan, run.states[plan.start], succeeded=False, changed=False, crashed=True)
        return _trial(plan, run, traced[0])
    replayed = episode.replay(run.states[plan.start], _calls(plan.steps))
    return _trial(plan, run, replayed)


def _calls(steps: list[SolutionStep]) -> list[tuple[str, dict[str, Any]]]:
    """Solution steps as an episode runs them: (tool, arguments)."""
    return [(step.tool, step.arguments) for step in steps]


def _trial(plan: Plan, run: ReferenceRun, replayed: ReplayOutcome) -> Trial:
    start, final = run.states[plan.start], replayed.state
    if final is None:  # the host failed (``replayed.error`` says how)
        return Trial(plan, start, succeeded=False, changed=False, crashed=True)
    return Trial(
        plan,
        final,
        succeeded=all(replayed.succeeded),
        changed=final != start,
        results=replayed.results,
    )


def _replay_elsewhere(scenario: ScenarioSpec, env: AdmittedEnvironment, sandbox: Sandbox) -> str:
    """The final-state hash of the solution replayed in a host of the other zygote image."""
    with sandbox.episode(
        env.source, env.class_name, scenario.initial_state, image=OTHER_IMAGE
    ) as episode:
        if not episode.loaded:
            return f"the replay did not load: {episode.load_outcome.error}"
        steps = _calls(scenario.reference_solution)
        replayed = episode.replays([known_state(episode)], [(0, steps)])
        if replayed is None:  # the host failed: step by step, as far as it goes
            episode.load_state(scenario.initial_state)
            for tool, arguments in steps:
                episode.call(tool, arguments)
        return state_hash(episode.state() or {})


def _run_checks(
    scenario: ScenarioSpec, sandbox: Sandbox, evidence: Evidence, run: ReferenceRun
) -> None:
    """Each check on every distinct final state, in both images; refused checks count False.
    Checks never see a reply: the judge reads replies apart (``Evidence.reward``)."""
    initial = scenario.initial_state
    finals = [run.states[-1], initial]
    if evidence.partial is not None:
        finals.append(evidence.partial.final_state)
    base = len(finals)
    index = {canonical_json(state): i for i, state in enumerate(finals)}
    for trial in evidence.trials:
        if trial.is_wrong_solution or trial.is_independent_reorder:
            trial.pair = index.setdefault(canonical_json(trial.final_state), len(finals))
            if trial.pair == len(finals):
                finals.append(trial.final_state)
    evidence.finals = finals
    sources, refused = policy_checked(scenario)
    pairs = [(initial, final) for final in finals]
    evidence.cells, evidence.unstable = check_rows(
        sandbox, sources, refused, pairs, 0, base, probe=True
    )
    evidence.other_cells, _ = check_rows(  # compared with the base columns only
        sandbox, sources, refused, pairs[:base], OTHER_IMAGE, base, probe=False, reverse=True
    )


def policy_checked(scenario: ScenarioSpec) -> tuple[list[str], dict[int, str]]:
    sources, refused = [], {}
    for index, check in enumerate(scenario.checks):
        violations = check_check_source(check.code)
        if violations:
            refused[index] = f"check {index + 1} is refused by the policy: {violations[0]}"
        sources.append(REFUSED_CHECK if violations else check.code)
    return sources, refused


def check_rows(
    sandbox: Sandbox,
    sources: list[str],
    refused: dict[int, str],
    pairs: list[tuple[dict[str, Any], dict[str, Any]]],
    image: int,
    full_pairs: int,
    *,
    probe: bool,
    reverse: bool = False,
) -> tuple[list[list[CheckCell]], list[bool]]:
    """The check cells (check -> pair) and, per check, whether the probes found it unstable.
    Every source here passed the policy (a refused one is sent as ``REFUSED_CHECK``), so all
    share one process; ``reverse``: evaluated in the other order."""
    outcome = sandbox.run_checks(
        sources,
        pairs,
        image=image,
        full_pairs=full_pairs,
        probe=probe,
        pure=[True] * len(sources),
        reverse=reverse,
    )
    if outcome.ok:
        rows, unstable = list(outcome.cells), list(outcome.unstable)
    else:
        failed = CheckCell(value=None, error=f"{outcome.error_class}: {outcome.error}")
        rows = [[failed] * len(pairs) for _ in sources]
        unstable = [False] * len(sources)
    for index, reason in refused.items():
        rows[index] = [CheckCell(value=None, error=reason)] * len(pairs)
        unstable[index] = False
    return rows, unstable
