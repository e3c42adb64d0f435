"""Stage ``skeleton_initial_state``: a state from the model that matches the state schema and loads
in the sandbox unchanged; each problem goes back to the model for a bounded number of rounds."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from envmill.schemas.ids import canonical_json
from envmill.schemas.skeleton import InitialStateReply
from envmill.tasks.backends.llm.scengen.invariants import collections_of
from envmill.tasks.backends.llm.scengen.references import dangling_reference
from envmill.tasks.backends.llm.skelbuilder.assemble import STATE
from envmill.tasks.backends.llm.skelbuilder.context import TopicContext, to_json
from envmill.tasks.core.statekit import diff_states
from envmill.tasks.envs import AdmittedEnvironment
from envmill.tasks.sandbox import Sandbox

MAX_RECORDS = 12  # per collection: what the state prompts ask for, and what later prompts show


def write_initial_state(
    ctx: TopicContext, admitted: AdmittedEnvironment, parts: dict[str, str]
) -> dict[str, Any]:
    """A checked initial state for the admitted environment.

    Raises:
        SkeletonFailed: ``skeleton_initial_state`` when no answer passes the checks.
    """

    def problem(answer: InitialStateReply) -> str | None:  # it is every scenario's example
        return state_problem(answer.state, admitted, ctx.sandbox) or dangling_reference(
            answer.state
        )

    reply = ctx.asker.ask(
        "skeleton_initial_state",
        InitialStateReply,
        rounds=ctx.settings.repair_rounds,
        check=problem,
        topic=ctx.topic,
        state_code=parts[STATE],
        state_schema=to_json(admitted.state_schema),
        default_state=to_json(admitted.default_state),
        max_records=MAX_RECORDS,
    )
    return reply.state


def state_problem(state: dict[str, Any], env: AdmittedEnvironment, sandbox: Sandbox) -> str | None:
    """Why ``state`` cannot start an episode of ``env``, or None: attributes the class does not
    create or that are missing, a value the schema refuses, more records than the prompt allows
    (later prompts would show it cut), a load that fails or changes it."""
    crowded = next((a for a, records in collections_of(state) if len(records) > MAX_RECORDS), None)
    if crowded is not None:
        return (
            f"{crowded} holds {len(state[crowded])} records; give at most {MAX_RECORDS} per "
            "collection"
        )
    unknown = sorted(set(state) - set(env.default_state))
    missing = sorted(set(env.default_state) - set(state))
    if unknown:
        return (
            f"the class creates no attribute {unknown[0]!r}; use only {sorted(env.default_state)}"
        )
    if missing:
        return (
            f"the state lacks the attribute {missing[0]!r}; give every attribute __init__ creates"
        )
    validator = jsonschema.Draft202012Validator(env.state_schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(state))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        return f"the state does not match the state schema at {where}: {error.message}"
    with sandbox.episode(env.source, env.class_name, state) as episode:
        loaded = episode.load_outcome
    if not loaded.ok or loaded.state is None:
        return f"the state does not load: {loaded.error_class}: {loaded.error}"
    if canonical_json(loaded.state) != canonical_json(state):
        change = diff_states(state, loaded.state)[0]
        path = "/".join(map(str, change["path"]))
        return f"loading the state changed it at {path}: {json.dumps(change, default=str)[:200]}"
    return None
