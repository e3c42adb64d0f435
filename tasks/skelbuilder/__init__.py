"""SkelBuilder (EnvScaler, DESIGN §1): an environment topic → a checked environment module.

Skeleton: state plan → state code → operation list → one method per operation → the module
assembled by code → admission in the sandbox, each failing part shown its line-numbered errors
for a bounded repair. Environment check: an initial state that loads, a testing agent's positive
and negative calls until every tool is covered, a judge's verdict per call, and the pass-rate
gate. :class:`LlmBackend` puts it behind the backend seam.
"""

from envmill.tasks.skelbuilder.asking import Asker, SkeletonFailed
from envmill.tasks.skelbuilder.backend import NO_SCENARIOS, LlmBackend, prompt_hashes
from envmill.tasks.skelbuilder.build import TopicOutcome, build_environment

__all__ = [
    "NO_SCENARIOS",
    "Asker",
    "LlmBackend",
    "SkeletonFailed",
    "TopicOutcome",
    "build_environment",
    "prompt_hashes",
]
