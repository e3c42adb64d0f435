"""Backends by name: the factory that makes each one, and the composition of one backend's
environments with another's scenarios.

The names, and what each backend needs (a model, topics), are ``schemas/backends.py``'s, since
the settings and the report read them and may not import ``tasks/``; this module maps every one
of those names to the code that makes it and refuses to load when the two lists differ. A
backend's module is imported only when it is made, so a run of one backend never loads another's
dependencies. No backend imports another: ``--scenarios-from llm`` is the registry handing a
backend's environments to the LLM scenario writer (:mod:`envmill.tasks.backends.llm.hybrid`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envmill.schemas.backends import (
    BACKEND_NAMES,
    BFCL,
    LLM,
    LLM_SCENARIOS,
    OWN_SCENARIOS,
    PROCEDURAL,
    SCENARIO_SOURCES,
    TRAITS,
    BackendTraits,
)
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.base import Backend, BriefingBackend, DraftT, PlanError

if TYPE_CHECKING:
    from envmill.schemas.skeleton import SkeletonDraft
    from envmill.tasks.backends.procedural.manifest import CompiledEnvironment
    from envmill.tasks.llm import LlmClient

__all__ = [  # the names flows may spell a backend by, besides what it is and how it is made
    "LLM",
    "LLM_SCENARIOS",
    "OWN_SCENARIOS",
    "PROCEDURAL",
    "REGISTRY",
    "SCENARIO_SOURCES",
    "Registered",
    "backend_names",
    "registered",
    "with_llm_scenarios",
]

ClientMaker = Callable[[], "LlmClient"]  # the run's LLM client, made when a backend asks for it
Factory = Callable[[EnvmillSettings, ClientMaker], Backend[Any]]


@dataclass(frozen=True)
class Registered:
    """A backend the settings may name: what it is, and how it is made."""

    name: str
    traits: BackendTraits
    make: Factory


def _procedural(settings: EnvmillSettings, client: ClientMaker) -> Backend[Any]:
    from envmill.tasks.backends.procedural.backend import ProceduralBackend

    # typed as the seam: the type checker holds each backend to the protocol here, as written
    backend: BriefingBackend[CompiledEnvironment] = ProceduralBackend()
    if settings.scenarios_from == LLM_SCENARIOS:
        return with_llm_scenarios(backend, settings, client())
    return backend


def _llm(settings: EnvmillSettings, client: ClientMaker) -> Backend[Any]:
    from envmill.tasks.backends.llm.backend import LlmBackend

    backend: Backend[SkeletonDraft] = LlmBackend(
        client(), settings.topics, settings.skeleton, settings.topic_sources, settings.scengen
    )
    return backend  # its scenarios are the model's whatever ``scenarios_from`` says


def _bfcl(settings: EnvmillSettings, client: ClientMaker) -> Backend[Any]:
    from envmill.tasks.backends.imported.backend import BfclBackend, BfclDraft

    backend: Backend[BfclDraft] = BfclBackend(settings.bfcl)
    return backend  # a benchmark's scenarios are its own whatever ``scenarios_from`` says


def with_llm_scenarios(
    environments: BriefingBackend[DraftT], settings: EnvmillSettings, client: LlmClient
) -> Backend[DraftT]:
    """``environments``' environments with ScenGenerator's scenarios (``--scenarios-from llm``);
    its items wait on the model, so a batch makes ``skeleton.item_threads`` of them at once."""
    from envmill.tasks.backends.llm.hybrid import LlmScenarios

    threads = settings.skeleton.item_threads
    return LlmScenarios(environments, client, settings.scengen, threads)


REGISTRY: dict[str, Registered] = {
    name: Registered(name, TRAITS[name], make)
    for name, make in ((PROCEDURAL, _procedural), (LLM, _llm), (BFCL, _bfcl))
}
if tuple(REGISTRY) != BACKEND_NAMES:  # a name without a factory, or a factory without a name
    raise ImportError(f"backend registry {list(REGISTRY)} != schemas {list(BACKEND_NAMES)}")


def backend_names() -> tuple[str, ...]:
    """Every backend a run may name, the default first."""
    return tuple(REGISTRY)


def registered(name: str) -> Registered:
    """The backend ``name``; an unknown one is a one-line PlanError naming those there are."""
    entry = REGISTRY.get(name)
    if entry is None:
        raise PlanError(f"unknown backend {name!r}; backends: {', '.join(REGISTRY)}")
    return entry
