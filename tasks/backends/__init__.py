"""Backends behind one interface (``base``), and the choice of one by name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.base import (
    Backend,
    BatchAborted,
    EnvironmentDraft,
    PlanError,
    ScenarioDrafts,
    item_seed,
)

if TYPE_CHECKING:
    from envmill.tasks.llm.limits import Gate

__all__ = [
    "Backend",
    "BatchAborted",
    "EnvironmentDraft",
    "PlanError",
    "ScenarioDrafts",
    "item_seed",
    "make_backend",
    "run_llm_client",
    "task_threads",
]


def uses_llm(settings: EnvmillSettings) -> bool:
    return settings.backend == "llm" or settings.scenarios_from == "llm"


def task_threads(settings: EnvmillSettings) -> int:
    """Batch tasks one worker process runs at once: one for CPU work; when a model is asked,
    enough that a process makes ``skeleton.item_threads`` items at once while they wait on it
    (the shared gate, not the thread count, caps the calls in flight)."""
    if not uses_llm(settings):
        return 1
    return max(1, settings.skeleton.item_threads // (settings.batch_size or 1))


def make_backend(
    settings: EnvmillSettings,
    *,
    run_id: str = "",
    data_dir: Path | None = None,
    gate: Gate | None = None,
) -> Backend:
    """The backend ``settings.backend`` names; one that cannot run is a one-line PlanError.

    The llm backend's responses are cached and its concurrency gated in ``data_dir``, so a rerun
    or a retry pays only for calls that did not finish; ``gate``: see :func:`run_llm_client`.
    """
    # imported here, so a run of one backend never loads another's dependencies
    if not uses_llm(settings):
        from envmill.tasks.backends.procedural.backend import ProceduralBackend

        return ProceduralBackend()
    client = run_llm_client(settings, run_id, data_dir, gate)
    if settings.backend == "procedural":
        from envmill.tasks.backends.llm.hybrid import ProceduralWithLlmScenarios

        threads = settings.skeleton.item_threads
        return ProceduralWithLlmScenarios(client, settings.scengen, threads)
    from envmill.tasks.backends.llm.backend import LlmBackend

    return LlmBackend(client, settings.topics, settings.skeleton, scengen=settings.scengen)


def run_llm_client(
    settings: EnvmillSettings, run_id: str, data_dir: Path | None, gate: Gate | None = None
):
    """The run's LLM client: responses cached and calls gated in ``data_dir`` (by ``gate``, a
    ``tasks.llm.limits.Gate``; default the local one); PlanError when no endpoint is
    configured."""
    from envmill.tasks.llm import LlmClient, LlmError, local_gate

    folder = None if data_dir is None else Path(data_dir)
    try:
        return LlmClient(
            settings.llm,
            cache_dir=None
            if folder is None
            else folder / "_llm_cache" / settings.llm.cache_namespace,
            gate_dir=None if folder is None else folder / "_llm_gate",
            run_id=run_id,
            gate=gate or local_gate,
        )
    except LlmError as exc:
        raise PlanError(str(exc)) from None
