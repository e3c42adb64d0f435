"""Ground truth (or any BFCL calls) replayed through an adapted module in envmill's sandbox, with
results in BFCL's result-string form, so a replay compares with ``BfclExecutor.replay``."""

from __future__ import annotations

import json
from typing import Any

from envmill.tasks.backends.imported.bfcl.adapt import AdaptedEnvironment
from envmill.tasks.backends.imported.bfcl.calls import parse_call
from envmill.tasks.backends.imported.bfcl.codec import decode_value
from envmill.tasks.backends.imported.bfcl.state import public_state
from envmill.tasks.sandbox import Sandbox


def tool_parameters(env: AdaptedEnvironment) -> dict[str, list[str]]:
    """Each tool's parameter names in order (positional BFCL arguments map onto them)."""
    return {
        schema["function"]["name"]: list(schema["function"]["parameters"]["properties"])
        for schema in env.tool_schemas
    }


def bfcl_result(result: dict[str, Any]) -> str:
    """An envmill tool result as the string BFCL's executor records for the same call."""
    if not result.get("success"):
        error = str(result.get("error", ""))
        return error if error.startswith("Error during execution") else json.dumps({"error": error})
    try:
        value = decode_value(result.get("data"), ())
    except (TypeError, KeyError):
        value = result.get("data")
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def replay_adapted(
    sandbox: Sandbox,
    env: AdaptedEnvironment,
    initial_state: dict[str, Any],
    calls_per_turn: list[list[str]],
) -> dict[str, Any]:
    """``{"results": per-turn BFCL result strings, "states": {class: public_state}}``."""
    parameters = tool_parameters(env)
    results: list[list[str]] = []
    with sandbox.episode(env.source, env.class_name, initial_state) as episode:
        if not episode.loaded:
            raise ValueError(f"the state does not load: {episode.load_outcome.error}")
        for turn in calls_per_turn:
            results.append([])
            for text in turn:
                step = parse_call(text, parameters)
                outcome = episode.call(step["tool"], step["arguments"])
                if not outcome.ok or outcome.result is None:
                    raise ValueError(f"{text}: the call was stopped: {outcome.error}")
                results[-1].append(bfcl_result(outcome.result))
        final = episode.state() or {}
    return {"results": results, "states": {n: public_state(final, n) for n in env.class_names}}
