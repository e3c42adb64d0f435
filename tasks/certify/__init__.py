"""Certification (DESIGN §3.3): a scenario is kept only if executing it proves it sound."""

from envmill.tasks.certify.core import certify, certify_scenario
from envmill.tasks.certify.reward import Reward, score_checks

__all__ = ["Reward", "certify", "certify_scenario", "score_checks"]
