"""Numbers a person picks: "$200", "$1,500", "300 units", not "$219.06" or "$1,700".

A request whose amount is the user's own choice ("top it up with $200"), or whose limit is a
line the user draws ("if it is below $2,000"), names a round number; an odd figure reads as
copied from a machine. The grid is one significant digit, with the halves people also say
below three ($15, $150, $2,500).
"""

from __future__ import annotations

import math
from typing import Any

from envmill.tasks.backends.procedural.manifest import ArgManifest

MANTISSAS = (1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9)
SMALLEST_MONEY = 10  # "$10", not "$2": a sum a person moves on purpose


def grid_near(value: float) -> list[float]:
    """The round numbers of ``value``'s order of magnitude and the ones either side of it."""
    power = math.floor(math.log10(value)) if value > 0 else 0
    return sorted(round(m * 10.0**p, 6) for p in (power - 1, power, power + 1) for m in MANTISSAS)


def round_up(value: float) -> float:
    """The smallest round number at or above ``value`` (positive)."""
    return next(g for g in grid_near(max(value, 1e-9)) if g >= value - 1e-9)


def round_down(value: float) -> float | None:
    """The largest round number at or below ``value``; None when ``value`` is below 1."""
    below = [g for g in grid_near(value) if g <= value + 1e-9 and g >= 1]
    return below[-1] if below else None


def round_within(value: float, low: float, high: float) -> float:
    """The round number nearest ``value`` inside [low, high]; else the nearest whole one;
    ``value`` when neither fits (a window narrower than a dollar)."""
    fits = [g for g in grid_near(max(value, 1e-9)) if low - 1e-9 <= g <= high + 1e-9]
    fits = fits or [float(n) for n in (math.floor(value), math.ceil(value)) if low <= n <= high]
    return min(fits, key=lambda g: (abs(g - value), g)) if fits else value


def rounded_amount(arg: ArgManifest, value: Any, money: bool) -> Any:
    """``value`` as the round number a person would pick, within the argument's bounds (an
    int stays an int); the value itself when no round number fits."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return value
    low = arg.minimum if arg.minimum is not None else -math.inf
    high = arg.maximum if arg.maximum is not None else math.inf
    if money:
        low = max(low, min(SMALLEST_MONEY, high))
    fits = [
        g
        for g in grid_near(max(value, low if low > 0 else value))
        if low <= g <= high and (arg.source != "int" or g == int(g))
    ]
    if not fits:
        return value
    best = min(fits, key=lambda g: (abs(g - value), g))
    return int(best) if arg.source == "int" else float(best)
