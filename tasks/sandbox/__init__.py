"""Run untrusted generated code outside the factory's process (DESIGN §5).

``Sandbox`` owns a fork server; ``Sandbox.episode`` keeps one environment alive in one host
across calls (a ``SandboxEpisode``; callers take any ``ToolEpisode``); ``Sandbox.run_checks``
runs check functions in a host of their own. Every request answers with a typed outcome
(``outcomes.py``), a failed host included.
"""

from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox.client import Sandbox, SandboxError
from envmill.tasks.sandbox.episode import SandboxEpisode, ToolEpisode, known_state
from envmill.tasks.sandbox.outcomes import (
    CheckCell,
    ChecksOutcome,
    LoadOutcome,
    ReplayOutcome,
    SandboxOutcome,
    ToolOutcome,
)

__all__ = [
    "CheckCell",
    "ChecksOutcome",
    "LoadOutcome",
    "ReplayOutcome",
    "Sandbox",
    "SandboxEpisode",
    "SandboxError",
    "SandboxLimits",
    "SandboxOutcome",
    "ToolEpisode",
    "ToolOutcome",
    "known_state",
]
