"""Backends behind one interface (``base``), and the choice of one by name."""

from __future__ import annotations

from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.base import (
    Backend,
    EnvironmentDraft,
    PlanError,
    ScenarioDrafts,
    item_seed,
)

__all__ = [
    "Backend",
    "EnvironmentDraft",
    "PlanError",
    "ScenarioDrafts",
    "item_seed",
    "make_backend",
]


def make_backend(settings: EnvmillSettings) -> Backend:
    """The backend ``settings.backend`` names; a backend that cannot run is a PlanError."""
    if settings.backend == "procedural":
        # imported here, so a run of one backend never loads another's dependencies
        from envmill.tasks.procedural.backend import ProceduralBackend

        return ProceduralBackend()
    raise PlanError(
        f"the {settings.backend} backend is not available in this version; use --backend procedural"
    )
