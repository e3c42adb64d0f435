"""The judge's verdict on a reply: one more check in the reward (DESIGN §3.3)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    """``passed``: the reply says what the scenario expects; ``reason``: why, in one line."""

    passed: bool
    reason: str
