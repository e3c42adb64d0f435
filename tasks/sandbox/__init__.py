"""Run untrusted generated code outside the factory's process (DESIGN §5).

``Sandbox`` owns a fork server; ``Sandbox.episode`` keeps one environment alive in one host
across calls; ``Sandbox.run_checks`` runs check functions in a host of their own.
"""

from envmill.schemas.settings import SandboxLimits
from envmill.tasks.sandbox.client import CallOutcome, Sandbox, SandboxError
from envmill.tasks.sandbox.episode import Episode

__all__ = ["CallOutcome", "Episode", "Sandbox", "SandboxError", "SandboxLimits"]
