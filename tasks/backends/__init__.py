"""Backends behind one interface (``base``), and the choice of one by name (``registry``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from envmill.schemas.backends import uses_llm as _uses_llm
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.base import (
    Backend,
    BatchAborted,
    BriefingBackend,
    EnvironmentBrief,
    EnvironmentDraft,
    PlanError,
    RecordedFailure,
    ScenarioDrafts,
    item_seed,
)
from envmill.tasks.backends.registry import REGISTRY, backend_names, registered

if TYPE_CHECKING:
    from envmill.tasks.judge.llm import ItemJudges
    from envmill.tasks.llm.limits import Gate

__all__ = [
    "REGISTRY",
    "Backend",
    "BatchAborted",
    "BriefingBackend",
    "EnvironmentBrief",
    "EnvironmentDraft",
    "PlanError",
    "RecordedFailure",
    "ScenarioDrafts",
    "backend_names",
    "item_seed",
    "make_backend",
    "registered",
    "run_judges",
    "run_llm_client",
    "task_threads",
    "uses_llm",
]


def uses_llm(settings: EnvmillSettings) -> bool:
    """Whether the run asks a model (its backend's environments, or the scenarios)."""
    return _uses_llm(settings.backend, settings.scenarios_from)


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
) -> Backend[Any]:
    """The backend ``settings.backend`` names (see ``registry``); one that cannot run is a
    one-line PlanError.

    A backend that asks a model gets the run's client, its responses cached and its concurrency
    gated in ``data_dir`` (by ``gate``: see :func:`run_llm_client`), so a rerun or a retry pays
    only for calls that did not finish.
    """
    entry = registered(settings.backend)
    return entry.make(settings, lambda: run_llm_client(settings, run_id, data_dir, gate))


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


def run_judges(
    settings: EnvmillSettings, run_id: str, data_dir: Path | None, gate: Gate | None = None
) -> ItemJudges | None:
    """The LLM judge certification asks when ``[reward] judge = "llm"`` (None: envmill's rules),
    on a client of its own, cached and gated as the run's; PlanError when no endpoint is
    configured."""
    if settings.reward.judge != "llm":
        return None
    from envmill.tasks.judge.llm import ItemJudges

    return ItemJudges(run_llm_client(settings, run_id, data_dir, gate))
