"""Audit the rewards of a default run: do certified scenarios catch harmful extras and drops?

Usage: .venv/bin/python -m bench.mutation_audit [--envs 24] [--scenarios 12] [--extras 3]
Independent of the gate's own mutant planner: for each certified scenario, harmful extras are
drawn at random (seeded) — a random state-changing tool on randomly chosen records the task never
names, inserted at a random position of the solution — and every state-changing step is dropped
in turn. A variant counts when it ran and its outcome differs from the reference's (modulo
generated ids); it is caught when the scenario's checks deny it full reward.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter

from bench.corpus import CorpusItem, default_corpus
from envmill.schemas.scenario import SolutionStep
from envmill.tasks.certify import certify_scenario, score_checks
from envmill.tasks.certify.generated import outcome_view
from envmill.tasks.sandbox import Sandbox, ToolOutcome


def run(
    sandbox: Sandbox, item: CorpusItem, steps: list[SolutionStep]
) -> tuple[list[ToolOutcome], dict | None]:
    env, initial = item.env, item.scenario.initial_state
    with sandbox.episode(env.source, env.class_name, initial) as episode:
        outcomes = [episode.call(s.tool, s.arguments) for s in steps]
        return outcomes, episode.state()


def records(state: dict) -> dict[str, list[str]]:
    return {
        name: sorted(value)
        for name, value in state.items()
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values())
    }


def random_extra(item: CorpusItem, rng: random.Random) -> tuple[int, SolutionStep]:
    scenario, env = item.scenario, item.env
    named = {v for s in scenario.reference_solution for v in s.arguments.values()}
    pools = {
        k: [key for key in keys if key not in named]
        for k, keys in records(scenario.initial_state).items()
    }
    tools = [t for t in env.tools if env.tool_kinds.get(t.function.name) == "state_change"]
    tool = rng.choice(tools)
    arguments = {}
    for name in tool.function.parameters.get("properties", {}):
        kind = next((k for k in pools if name.removesuffix("_id") in k), None)
        if kind and pools[kind]:
            arguments[name] = rng.choice(pools[kind])
        else:
            known = [s.arguments[name] for s in scenario.reference_solution if name in s.arguments]
            if known:
                arguments[name] = rng.choice(known)
    position = rng.randint(0, len(scenario.reference_solution))
    return position, SolutionStep(tool=tool.function.name, arguments=arguments)


def audit(sandbox: Sandbox, item: CorpusItem, rng: random.Random, extras: int, tally: Counter):
    scenario = item.scenario
    solution = scenario.reference_solution
    outcomes, final = run(sandbox, item, solution)
    reference = outcome_view(scenario.initial_state, final)
    checks = [c.code for c in scenario.checks]
    variants = []
    for _ in range(extras * 4):
        position, extra = random_extra(item, rng)
        steps = [*solution[:position], extra, *solution[position:]]
        got, state = run(sandbox, item, steps)
        if got[position].succeeded:
            variants.append(("extra", state))
        if sum(kind == "extra" for kind, _ in variants) >= extras:
            break
    for index in range(len(outcomes)):
        steps = solution[:index] + solution[index + 1 :]
        _, state = run(sandbox, item, steps)
        variants.append(("drop", state))
    for kind, state in variants:
        if outcome_view(scenario.initial_state, state) == reference:
            continue
        checked = sandbox.run_checks(checks, [(scenario.initial_state, state)])
        values = [row[0].value for row in checked.cells] if checked.ok else [None]
        caught = not score_checks(values).success
        tally[(kind, "caught" if caught else "missed")] += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--envs", type=int, default=24)
    parser.add_argument("--scenarios", type=int, default=12)
    parser.add_argument("--extras", type=int, default=3)
    args = parser.parse_args()
    rng, tally = random.Random(0), Counter()
    with Sandbox() as sandbox:
        items = default_corpus(sandbox, args.envs, args.scenarios)
        certified = [
            i for i in items if certify_scenario(i.scenario, i.env, sandbox).status == "certified"
        ]
        print(f"{len(certified)} of {len(items)} scenarios certified; auditing them")
        for item in certified:
            audit(sandbox, item, rng, args.extras, tally)
    for kind in ("extra", "drop"):
        caught, missed = tally[(kind, "caught")], tally[(kind, "missed")]
        share = caught / (caught + missed) if caught + missed else 1.0
        print(f"{kind:6} variants that change the outcome: {caught + missed:5}  caught {share:.1%}")


if __name__ == "__main__":
    main()
