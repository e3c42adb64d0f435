"""SkelBuilder (EnvScaler, DESIGN §1): an environment topic → a checked environment module.

Skeleton: state plan → state code → operation list → one method per operation → the module
assembled by code → admission in the sandbox, each failing part shown its line-numbered errors
for a bounded repair. Environment check: an initial state that loads, a testing agent's positive
and negative calls until every tool is covered, a judge's verdict per call, and the pass-rate
gate. ``tasks.backends.llm.LlmBackend`` puts it behind the backend seam, with ScenGenerator.
"""

from envmill.tasks.backends.llm.skelbuilder.asking import Asker, SkeletonFailed
from envmill.tasks.backends.llm.skelbuilder.build import TopicOutcome, build_environment

__all__ = [
    "Asker",
    "SkeletonFailed",
    "TopicOutcome",
    "build_environment",
]
