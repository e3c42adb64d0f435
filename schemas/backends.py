"""The backends a run may name, and what the layers below ``tasks/`` need to know of each.

This is the one list of backend names. ``tasks/backends/registry.py`` maps each name to the code
that makes the backend (and refuses to load when its names and these differ); the settings take
their choices and per-backend defaults from here, the CLI its ``--backend`` choices, and the
report (``warehouse/`` reads only ``schemas/``) whether a run asked a model. The names live here
rather than in the registry because ``schemas/`` and ``warehouse/`` may not import ``tasks/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

BackendName = Literal["procedural", "llm", "bfcl"]
BACKEND_NAMES: tuple[BackendName, ...] = get_args(BackendName)
PROCEDURAL: BackendName = "procedural"  # the default: catalog domains, no model
LLM: BackendName = "llm"  # environments a model writes from topics; what retry-failed reruns
BFCL: BackendName = "bfcl"  # BFCL multi-turn's classes and tasks, imported (``envmill import``)

ScenarioSource = Literal["backend", "llm"]
SCENARIO_SOURCES: tuple[ScenarioSource, ...] = get_args(ScenarioSource)
OWN_SCENARIOS: ScenarioSource = "backend"  # the backend's own scenarios
LLM_SCENARIOS: ScenarioSource = "llm"  # ScenGenerator's, whatever made the environments


@dataclass(frozen=True)
class BackendTraits:
    """What a backend is, as far as settings, flows and the report care."""

    about: str  # one phrase for --help
    needs_llm: bool  # its environments are a model's: a run needs an endpoint
    takes_topics: bool  # its items are topics (a list, a corpus, the folder's selected ones)
    batch_size: int  # environments per worker task unless the settings say otherwise


TRAITS: dict[str, BackendTraits] = {
    "procedural": BackendTraits(
        "catalog domains compiled with a seed", needs_llm=False, takes_topics=False, batch_size=4
    ),
    "llm": BackendTraits(
        "environments a model writes from topics", needs_llm=True, takes_topics=True, batch_size=1
    ),
    "bfcl": BackendTraits(
        "BFCL multi-turn's classes and tasks, imported from bfcl-eval",
        needs_llm=False,
        takes_topics=False,
        batch_size=1,
    ),
}
assert tuple(TRAITS) == BACKEND_NAMES, "every backend name has its traits, in order"


def backend_help() -> str:
    """The ``--backend`` choices for a command's help, the default first."""
    return " or ".join(f"{name}{' (default)' * (name == PROCEDURAL)}" for name in BACKEND_NAMES)


def default_batch_sizes() -> str:
    """Each backend's batch size, for a help text: ``procedural 4, llm 1``."""
    return ", ".join(f"{name} {traits.batch_size}" for name, traits in TRAITS.items())


def uses_llm(backend: str, scenarios_from: str) -> bool:
    """Whether a run of ``backend`` with scenarios from ``scenarios_from`` asks a model (an
    unknown name asks none: settings refuse it before a run starts)."""
    traits = TRAITS.get(backend)
    return (traits is not None and traits.needs_llm) or scenarios_from == LLM_SCENARIOS
