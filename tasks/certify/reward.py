"""The one reward function (DESIGN §3.3): certification, reference trajectories and rollouts.

A check that raised, returned a non-bool or was refused by the policy arrives here as ``False``
(or ``None``), never as a pass: only ``True`` counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Reward:
    """``reward``: the share of checks that hold; ``success``: every check holds (there is one)."""

    reward: float
    success: bool


def score_checks(results: Sequence[bool | None]) -> Reward:
    """Score an episode from its per-check results (in the scenario's check order)."""
    held = sum(value is True for value in results)
    if not results:
        return Reward(reward=0.0, success=False)
    return Reward(reward=held / len(results), success=held == len(results))
