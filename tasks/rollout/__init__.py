"""Trajectories in Chat Completions form (DESIGN §3.4); for now the reference policy."""

from envmill.tasks.rollout.facts import match_strength, opening_message
from envmill.tasks.rollout.reference import REFERENCE_POLICY, reference_trajectory
from envmill.tasks.rollout.system import describe_now, system_prompt

__all__ = [
    "REFERENCE_POLICY",
    "describe_now",
    "match_strength",
    "opening_message",
    "reference_trajectory",
    "system_prompt",
]
