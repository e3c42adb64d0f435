"""Trajectories in Chat Completions form (DESIGN §3.4): the reference policy, and the filters
that judge every trajectory."""

from envmill.tasks.core.facts import match_strength
from envmill.tasks.core.opening import opening_message
from envmill.tasks.core.system_message import describe_now, system_prompt
from envmill.tasks.rollout.filters import judge_trajectory
from envmill.tasks.rollout.reference import REFERENCE_POLICY, reference_trajectory

__all__ = [
    "REFERENCE_POLICY",
    "describe_now",
    "judge_trajectory",
    "match_strength",
    "opening_message",
    "reference_trajectory",
    "system_prompt",
]
