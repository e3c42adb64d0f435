"""Plausible drawn arguments: a number or time that fits the records the call changes.

Raters dock a request that contradicts its own records: approving $4,506.10 on a $637.57
claim, a new income a third of the old one, 241 km logged for a trip that started an hour and
a quarter ago, a "delay" to an earlier departure. The manifest says which record values bear on
an argument (``at_most`` / ``at_least`` from the tool's compare rules, ``near`` from the field an
update's assign replaces, ``per_hour`` since a recorded time, a ``share`` of a recorded number);
this module narrows the drawer's range to them. The compare bounds hold only most of the time,
so a refusal sampler still finds a near miss of the rule.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeGuard

from envmill.tasks.backends.procedural.manifest import ArgManifest, RecordRead

NEAR = (0.8, 1.25)  # an updated amount within a quarter of the one it replaces
CAP_SHARE = 0.5  # a cap below the typical amounts: from half of it up
HOLD_CHANCE = 0.9  # how often a rule's record bound is kept (refusals need the rest)
MIN_SECONDS = 900  # a trip just started counts a quarter of an hour


@dataclass(frozen=True)
class Reading:
    """What the values are read from: the state, the arguments drawn so far, current time."""

    state: dict[str, Any]
    chosen: dict[str, Any]
    now: datetime

    def amounts(self, reads: list[RecordRead]) -> list[float]:
        return [v for v in (read.read(self.state, self.chosen) for read in reads) if is_amount(v)]


def plausible_window(
    arg: ArgManifest, reading: Reading, low: float, high: float, rng: random.Random
) -> tuple[float, float]:
    """[low, high] narrowed by the records: so many per hour since a recorded time, near the
    value an update replaces, and (``HOLD_CHANCE``) within the values a rule bounds it by."""
    since = time_or_none(arg.since.read(reading.state, reading.chosen)) if arg.since else None
    if arg.per_hour and since is not None:
        hours = max((reading.now - since).total_seconds(), MIN_SECONDS) / 3600
        low, high = within(low, high, arg.per_hour[0] * hours, arg.per_hour[1] * hours)
    share = _share(arg, reading)
    whole = arg.share_of.read(reading.state, reading.chosen) if arg.share_of else None
    if share and is_amount(whole) and whole > 0:  # a month's pay of the salary, not $1,500
        low, high = within(low, high, whole * share[0], whole * share[1])  # the spec check
        # keeps a share at [low, high] >= 0; the manifest's range is only the typical one
    current = arg.near.read(reading.state, reading.chosen) if arg.near else None
    if is_amount(current) and current > 0:
        step = 1 if arg.source == "int" else 0.01
        if current * (NEAR[1] - NEAR[0]) >= 3 * step:  # a seat count of 2 has no "near"
            low, high = within(low, high, current * NEAR[0], current * NEAR[1])
    if (arg.at_most or arg.at_least) and rng.random() < HOLD_CHANCE:
        low, high = under(low, high, reading.amounts(arg.at_most))
        floors = reading.amounts(arg.at_least)
        low = max([low, *floors])
        high = max(high, low)
    return low, high


def _share(arg: ArgManifest, reading: Reading) -> list[float] | None:
    """The argument's [low, high] share of a record's number; by the enum ``share_by`` reads
    (a weekly run pays a week's salary) where the share is given per value."""
    if not isinstance(arg.share, dict):
        return arg.share
    key = arg.share_by.read(reading.state, reading.chosen) if arg.share_by else None
    return arg.share.get(str(key))


def later_time(arg: ArgManifest, reading: Reading, rng: random.Random) -> str | None:
    """A time a few hours (a date: days) after the latest record time a rule wants it after
    (a delayed departure, an extended end date), or None when no rule reads one."""
    read = [time_or_none(r.read(reading.state, reading.chosen)) for r in arg.at_least]
    floors = [moment for moment in read if moment is not None]
    if not floors:
        return None
    base = max([*floors, reading.now])
    if arg.source == "date":  # an end date a few days or weeks on
        return (base.date() + timedelta(days=rng.randint(3, 30))).isoformat()
    later = base.replace(second=0, microsecond=0)
    return (later + timedelta(minutes=30 * rng.randint(2, 12))).isoformat()


def under(low: float, high: float, caps: list[float]) -> tuple[float, float]:
    """[low, high] under the lowest cap, from ``CAP_SHARE`` of it when the typical low is above
    it; as it was without a cap (or when a cap of zero leaves no room)."""
    cap = min(caps, default=0)
    if cap <= 0:
        return low, high
    high = min(high, cap)
    return (low if low <= high else high * CAP_SHARE), high


def within(low: float, high: float, near_low: float, near_high: float) -> tuple[float, float]:
    """The overlap of [low, high] and the plausible [near_low, near_high]; the plausible one
    alone when they miss each other (the manifest's bounds are typical, not hard)."""
    if near_low > high or near_high < low:
        return near_low, near_high
    return max(low, near_low), min(high, near_high)


def is_amount(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def time_or_none(value: Any) -> datetime | None:
    """A recorded date or datetime, parsed; None for anything else (a number, no record)."""
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
