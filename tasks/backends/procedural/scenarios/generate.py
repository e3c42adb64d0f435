"""Procedural scenarios: seeded initial state → live operation chain → task text and derived checks.

No model is involved. Each scenario gets its own rng derived (without ``hash()``) from the seed, the
environment id and its index, so the same inputs give the same scenarios in any process, and one
scenario's failure never shifts the others. The chain runs in a sandbox episode of the compiled
environment; certification later replays the reference solution independently.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

from faker import Faker

from envmill.schemas.ids import canonical_json, sha256_hex
from envmill.schemas.run import SkippedScenario
from envmill.schemas.scenario import ScenarioSpec, SolutionStep
from envmill.tasks.backends.base import ScenarioDrafts
from envmill.tasks.backends.procedural.checks.derive import (
    derive_absence_check,
    derive_checks,
    words_of,
)
from envmill.tasks.backends.procedural.manifest import CompiledEnvironment
from envmill.tasks.backends.procedural.phrasing.persona import bare_request, persona_task
from envmill.tasks.backends.procedural.phrasing.pronouns import with_pronouns
from envmill.tasks.backends.procedural.phrasing.task import phrase_task, voice_of
from envmill.tasks.backends.procedural.phrasing.word_lists import PEOPLE
from envmill.tasks.backends.procedural.scenarios.chain_kinds import choose_kind, sample_kind_chain
from envmill.tasks.backends.procedural.scenarios.chains import Chain
from envmill.tasks.backends.procedural.scenarios.conditions import branch_answer
from envmill.tasks.backends.procedural.scenarios.kinds import (
    KIND_SHARES,
    build_kind,
    choose_scenario_kind,
)
from envmill.tasks.backends.procedural.scenarios.recall import RecallingEpisode
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.certify.guard import guard_check

log = logging.getLogger(__name__)

StateBuilder = Callable[[CompiledEnvironment, int], dict[str, Any]]
# solution steps (lookups included) a chain aims at: mostly one request, a few steps rarely
# mostly one request: several steps only where one goal needs them (DESIGN §3.3)
CHAIN_TARGETS, CHAIN_WEIGHTS = (1, 2, 3), (0.7, 0.2, 0.1)
FAKER_LOCALE = "en_US"


class ScenarioSkipped(Exception):
    """A scenario that could not be built; code and reason become a shortfall row."""

    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code


def generate_scenario_batch(
    compiled: CompiledEnvironment,
    env_id: str,
    n: int,
    seed: int,
    sandbox: Any,
    *,
    conversational_share: float = 0.3,
    state_builder: StateBuilder | None = None,
    kind_shares: dict[str, float] | None = None,
) -> ScenarioDrafts:
    """Up to ``n`` scenarios for one environment, with a code and reason for each one skipped.

    Args:
        compiled: the environment and its tool manifest.
        env_id: the environment's content id (DESIGN §3.1).
        n: scenarios to attempt (indices 0..n-1); the caller records any shortfall.
        seed: run seed; with ``env_id`` and the index it fixes everything about a scenario.
        sandbox: anything with ``episode(source, class_name, state)`` giving an episode.
        conversational_share: the expected fraction of conversational scenarios.
        state_builder: ``(compiled, seed) -> state``; defaults to the procedural state filler.
        kind_shares: weights of ``change``, ``answer`` and ``refusal`` scenarios.
    """
    builder = state_builder or build_initial_state
    faker = Faker(FAKER_LOCALE)
    batch, seen = ScenarioDrafts(), set()
    for index in range(n):
        try:
            spec = build_scenario(
                compiled,
                env_id,
                index,
                seed,
                sandbox,
                faker=faker,
                conversational_share=conversational_share,
                state_builder=builder,
                kind_shares=KIND_SHARES if kind_shares is None else kind_shares,
            )
        except ScenarioSkipped as skip:
            batch.skipped.append(SkippedScenario(index=index, code=skip.code, message=str(skip)))
            continue
        # the same words twice read as one scenario to a trainer (round 49: two "We're moving
        # into our own office; cancel my membership." in one run), whatever the states behind
        # and whatever greeting or thanks frame them; a conversation is its whole instruction
        words = spec.task if spec.mode == "conversational" else bare_request(spec.task).casefold()
        # nor the same calls for the same kind in other words (round 60: three conditionals
        # on work order WO-00001, each approving its $95 estimate), unless the reply differs
        # (two questions about one record read it with the same call)
        solution = [step.model_dump() for step in spec.reference_solution]
        kind = (spec.kind or "").split("+")[0]
        calls = f"{kind} {canonical_json(solution)} {spec.reference_answer}"
        if {spec.scenario_id, words, calls} & seen:
            duplicate = "duplicate of an earlier scenario"
            batch.skipped.append(SkippedScenario(index=index, code="duplicate", message=duplicate))
            continue
        seen |= {spec.scenario_id, words, calls}
        batch.scenarios.append(spec)
    for skipped in batch.skipped:  # not ``skip``: the except clause above deletes that name
        log.info("env %s: scenario %d skipped: %s", env_id, skipped.index, skipped.message)
    return batch


def build_scenario(
    compiled: CompiledEnvironment,
    env_id: str,
    index: int,
    seed: int,
    sandbox: Any,
    *,
    faker: Any,
    conversational_share: float,
    state_builder: StateBuilder,
    kind_shares: dict[str, float] = KIND_SHARES,
    chain_kind: str | None = None,
) -> ScenarioSpec:
    """Build scenario ``index``; raises :class:`ScenarioSkipped` with the reason when it cannot.

    An answer or refusal (drawn from its own seed) the environment cannot give falls back to a
    change scenario, built exactly as it would have been without those kinds. A conversational
    scenario's task becomes an instruction to the simulated user (``persona_task``).
    ``chain_kind`` asks for a chain kind (``chain_kinds.KINDS``) instead of drawing one; the
    draw is made all the same, so every later draw of the scenario stays as it was."""
    state = state_builder(compiled, derive_seed(seed, env_id, index, "state"))
    conversational_share = talk_share(conversational_share, voice_of(compiled, state))
    kind = choose_scenario_kind(
        random.Random(derive_seed(seed, env_id, index, "kind")), kind_shares
    )
    if kind != "change":
        kind_rng = random.Random(derive_seed(seed, env_id, index, kind))
        faker.seed_instance(kind_rng.getrandbits(32))
        talk = kind_rng.random() < conversational_share
        built = _in_episode(
            compiled,
            sandbox,
            state,
            lambda ep: build_kind(kind, compiled, env_id, ep, kind_rng, faker, conversational=talk),
        )
        if built is not None:
            return _spoken(built, compiled, faker, derive_seed(seed, env_id, index, "persona"))
    rng = random.Random(derive_seed(seed, env_id, index, "scenario"))
    faker.seed_instance(rng.getrandbits(32))
    chain = _run_chain(compiled, sandbox, rng, faker, state, chain_kind)
    names = {attr: entity for entity, attr in sorted(compiled.entity_attrs.items())}
    checks = derive_checks(
        chain.initial_state,
        chain.final_state,
        step_changes=[step.changes for step in chain.steps],
        entity_names=names,
        label_fields=compiled.label_fields,
    )
    if not checks:
        raise ScenarioSkipped("no_checkable_change", "the chain left no checkable change")
    for condition in (step.condition for step in chain.steps if step.condition):
        absent = derive_absence_check(
            chain.initial_state,
            condition.untaken,
            entity_names=names,
            label_fields=compiled.label_fields,
            taken=chain.final_state,
        )
        checks.extend([absent] if absent else [])
    checks.append(guard_check(chain.initial_state, chain.final_state))
    mode = "conversational" if rng.random() < conversational_share else "non_conversational"
    tool_names = [t.tool for t in compiled.tools]
    voice = voice_of(compiled, chain.initial_state)
    task, facts = phrase_task(chain.steps, rng, mode, tool_names, voice)
    if not facts:  # a user with nothing to give says it all at once
        mode = "non_conversational"
        task, facts = phrase_task(chain.steps, rng, mode, tool_names, voice)
    branch = branch_answer(compiled, chain)
    spec = ScenarioSpec(
        env_id=env_id,
        backend="procedural",
        mode=mode,
        task=task,
        user_facts=facts,
        initial_state=chain.initial_state,
        reference_solution=chain.solution,
        checks=checks,
        kind=chain.kind,
        expected_answer=branch[0] if branch else None,
        reference_answer=branch[1] if branch else None,
    )
    return _spoken(spec, compiled, faker, derive_seed(seed, env_id, index, "persona"))


def talk_share(share: float, voice: str | None) -> float:
    """How often a scenario is a conversation: twice as often where a client speaks for
    themself, since staff relaying a task made 84 % of the conversations (round 28: "nearly
    every conversational user is an employee asking the agent to do their own job")."""
    return min(1.0, share * SELF_TALK) if voice == "self" else share


SELF_TALK = 2.0


def _spoken(
    spec: ScenarioSpec, compiled: CompiledEnvironment, faker: Any, seed: int
) -> ScenarioSpec:
    """A conversational scenario's task as an instruction to its simulated user (a persona);
    where someone signs in as themself, the solution first reads who (``_session_first``)."""
    spec = _session_first(spec, compiled)
    if spec.mode == "conversational":
        rng = random.Random(seed)
        faker.seed_instance(rng.getrandbits(32))
        voice = voice_of(compiled, spec.initial_state)
        spec = spec.model_copy(update={"task": persona_task(spec, compiled, voice, rng, faker)})
    people = people_of(compiled, spec.initial_state)
    return spec.model_copy(update={"task": with_pronouns(spec.task, people)})  # "she"


def people_of(compiled: CompiledEnvironment, state: dict[str, Any]) -> set[str]:
    """The names of the state's people (customers, employees: records a person is)."""
    names = set()
    for entity, attr in compiled.entity_attrs.items():
        field = compiled.label_fields.get(entity)
        records = state.get(attr)
        if words_of(entity) not in PEOPLE or not field or not isinstance(records, dict):
            continue
        names |= {r[field] for r in records.values() if isinstance(r.get(field), str)}
    return names


def _session_first(spec: ScenarioSpec, compiled: CompiledEnvironment) -> ScenarioSpec:
    """The solution starts by reading the session where someone is signed in: the policy says
    to check who is signed in before acting for them, and a reference that skips it teaches
    an agent to trust the user's word ("it's Noah from the branch counter")."""
    session = compiled.session_tool
    if not session or voice_of(compiled, spec.initial_state) is None:
        return spec
    first = SolutionStep(tool=session, arguments={})  # a read: moving it changes no state
    rest = [step for step in spec.reference_solution if step.tool != session]
    return spec.model_copy(update={"reference_solution": [first, *rest]})


def _run_chain(
    compiled: CompiledEnvironment,
    sandbox: Any,
    rng: random.Random,
    faker: Any,
    state: dict,
    chain_kind: str | None = None,
) -> Chain:
    """Sample a chain in one episode; a broken environment or host becomes a skip, not a crash."""
    target = rng.choices(CHAIN_TARGETS, weights=CHAIN_WEIGHTS)[0]

    def sample(episode: Any) -> Chain | None:
        drawn = choose_kind(rng)
        return sample_kind_chain(compiled, episode, rng, faker, target, chain_kind or drawn)

    chain = _in_episode(compiled, sandbox, state, sample)
    if chain is None:
        raise ScenarioSkipped("no_successful_change", "no state-changing call succeeded")
    return chain


def _in_episode(
    compiled: CompiledEnvironment, sandbox: Any, state: dict, work: Callable[[Any], Any]
) -> Any:
    """``work(episode)`` in one episode from ``state``; a broken environment or host becomes a
    skip, not a crash. The episodes of one environment share a host (a fresh instance each):
    envmill compiled it, and sampling is not where a fresh process is checked."""
    try:
        with sandbox.episode(compiled.source, compiled.class_name, state, reuse=True) as episode:
            if not episode.loaded:
                raise ScenarioSkipped(
                    "state_does_not_load",
                    f"initial state does not load: {episode.load_outcome.error}",
                )
            return work(RecallingEpisode(episode))  # repeated calls cost no round trip
    except ScenarioSkipped:
        raise
    except Exception as error:  # the environment is generated code: any failure skips the item
        reason = f"episode failed: {type(error).__name__}: {error}"
        raise ScenarioSkipped("episode_failed", reason) from error


def derive_seed(seed: int, env_id: str, index: int, purpose: str) -> int:
    """A 64-bit seed from the run seed, environment, scenario index and purpose (no ``hash()``)."""
    digest = sha256_hex(canonical_json([seed, env_id, index, purpose]))
    return int(digest[:16], 16)
