"""Backends behind one interface (``base``), and the choice of one by name."""

from __future__ import annotations

from pathlib import Path

from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.base import (
    Backend,
    BatchAborted,
    EnvironmentDraft,
    PlanError,
    ScenarioDrafts,
    item_seed,
)

__all__ = [
    "Backend",
    "BatchAborted",
    "EnvironmentDraft",
    "PlanError",
    "ScenarioDrafts",
    "item_seed",
    "make_backend",
    "task_threads",
]


def task_threads(settings: EnvmillSettings) -> int:
    """Batch tasks one worker process runs at once: one for CPU work; for the llm backend,
    enough that a process builds ``skeleton.item_threads`` topics at once while they wait on
    the model (the shared gate, not the thread count, caps the calls in flight)."""
    if settings.backend == "procedural":
        return 1
    return max(1, settings.skeleton.item_threads // (settings.batch_size or 1))


def make_backend(
    settings: EnvmillSettings, *, run_id: str = "", data_dir: Path | None = None
) -> Backend:
    """The backend ``settings.backend`` names; one that cannot run is a one-line PlanError.

    The llm backend's responses are cached and its concurrency gated in ``data_dir``, so a rerun
    or a retry pays only for calls that did not finish.
    """
    # imported here, so a run of one backend never loads another's dependencies
    if settings.backend == "procedural":
        from envmill.tasks.procedural.backend import ProceduralBackend

        return ProceduralBackend()
    from envmill.tasks.backends.llm import LlmBackend
    from envmill.tasks.llm import LlmClient, LlmError

    folder = None if data_dir is None else Path(data_dir)
    try:
        client = LlmClient(
            settings.llm,
            cache_dir=None
            if folder is None
            else folder / "_llm_cache" / settings.llm.cache_namespace,
            gate_dir=None if folder is None else folder / "_llm_gate",
            run_id=run_id,
        )
    except LlmError as exc:
        raise PlanError(str(exc)) from None
    return LlmBackend(client, settings.topics, settings.skeleton, scengen=settings.scengen)
