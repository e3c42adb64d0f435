"""Bar charts as data, and their layout as SVG shapes the page's template draws.

A chart is rows of labelled values, one value per series; bars are horizontal (labels from the
warehouse can be long), stacked (parts of one whole) or grouped (series side by side). Layout
only computes coordinates: all text reaches the page through the template's escaping.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d")
WIDTH = 760
LABEL_WIDTH = 230
VALUE_WIDTH = 70
BAR_HEIGHT = 16
GROUPED_BAR_HEIGHT = 11
GAP = 8
TOP = 34  # room for the legend and the axis labels
MAX_LABEL = 34
MAX_BINS = 24


@dataclass(frozen=True)
class BarRow:
    label: str
    values: tuple[float, ...]


@dataclass(frozen=True)
class BarChart:
    """One figure's numbers: ``rows`` × ``series``; ``stacked`` or grouped bars."""

    title: str
    series: tuple[str, ...]
    rows: tuple[BarRow, ...]
    stacked: bool = True
    unit: str = ""
    colors: tuple[str, ...] = PALETTE
    axis: str = ""  # what a row is, e.g. "tools per environment"

    def values(self, series: str) -> dict[str, float]:
        """Row label → value of one series (for tests and tables)."""
        i = self.series.index(series)
        return {row.label: row.values[i] for row in self.rows}


@dataclass(frozen=True)
class Shape:
    x: float
    y: float
    width: float = 0.0
    height: float = 0.0
    color: str = ""
    text: str = ""
    anchor: str = "start"
    tip: str = ""


@dataclass
class SvgPlot:
    width: int
    height: int
    bars: list[Shape] = field(default_factory=list)
    labels: list[Shape] = field(default_factory=list)
    ticks: list[Shape] = field(default_factory=list)
    legend: list[Shape] = field(default_factory=list)


def histogram_rows(
    counts: Mapping[str, Mapping[int, int]], series: tuple[str, ...]
) -> tuple[BarRow, ...]:
    """Rows of a histogram over integer values: every value from the smallest to the largest,
    or ranges of equal width when there are more than MAX_BINS values."""
    seen = [v for s in series for v in counts.get(s, {})]
    if not seen:
        return ()
    low, high = min(seen), max(seen)
    width = max(1, math.ceil((high - low + 1) / MAX_BINS))
    rows = []
    for start in range(low, high + 1, width):
        end = min(start + width - 1, high)
        label = str(start) if start == end else f"{start}–{end}"
        values = tuple(
            float(sum(n for v, n in counts.get(s, {}).items() if start <= v <= end)) for s in series
        )
        rows.append(BarRow(label, values))
    return tuple(rows)


def flat_summary(chart: BarChart) -> str | None:
    """One line that says all a chart shows when its bars carry no information (every bar 0,
    or two or more rows with the same values), else None: such a chart is printed as this line."""
    if not chart.rows:
        return None
    if all(v == 0 for row in chart.rows for v in row.values):
        return f"{chart.title}: every bar is 0{chart.unit} ({_rows_named(chart)})."
    if len(chart.rows) > 1 and len({row.values for row in chart.rows}) == 1:
        values = ", ".join(
            f"{name} {format_number(v)}{chart.unit}"
            for name, v in zip(chart.series, chart.rows[0].values, strict=True)
        )
        return f"{chart.title}: the same in every row ({_rows_named(chart)}): {values}."
    return None


def _rows_named(chart: BarChart) -> str:
    labels = ", ".join(row.label for row in chart.rows[:12])
    more = f" and {len(chart.rows) - 12} more" if len(chart.rows) > 12 else ""
    return f"{len(chart.rows)} rows: {labels}{more}"


def layout(chart: BarChart) -> SvgPlot:
    """Coordinates of every bar, label, tick and legend entry of ``chart``."""
    n_series = len(chart.series)
    bar_h = BAR_HEIGHT if chart.stacked else GROUPED_BAR_HEIGHT
    per_row = bar_h if chart.stacked else bar_h * n_series
    height = TOP + len(chart.rows) * (per_row + GAP) + 10
    plot = SvgPlot(width=WIDTH, height=int(height))
    top, step = _axis(chart)
    span = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    for i, row in enumerate(chart.rows):
        y = TOP + i * (per_row + GAP)
        plot.labels.append(
            Shape(
                LABEL_WIDTH - 8,
                y + per_row / 2 + 4,
                text=_clip(row.label),
                anchor="end",
                tip=row.label,
            )
        )
        x = float(LABEL_WIDTH)
        for j, value in enumerate(row.values):
            w = span * value / top if top else 0.0
            color = chart.colors[j % len(chart.colors)]
            tip = f"{row.label} · {chart.series[j]}: {format_number(value)}{chart.unit}"
            if chart.stacked:
                plot.bars.append(Shape(x, y, w, bar_h, color, tip=tip))
                x += w
            else:
                plot.bars.append(Shape(LABEL_WIDTH, y + j * bar_h, w, bar_h - 1, color, tip=tip))
                if value:  # a zero bar has no length to label
                    plot.labels.append(_value_label(LABEL_WIDTH + w, y + (j + 0.5) * bar_h, value))
        if chart.stacked:
            plot.labels.append(_value_label(x, y + per_row / 2, sum(row.values), chart.unit))
    plot.ticks = [
        Shape(LABEL_WIDTH + span * t / top, TOP - 6, text=format_number(t), anchor="middle")
        for t in _ticks(top, step)
    ]
    plot.legend = _legend(chart) if n_series > 1 else []
    return plot


def _value_label(x: float, y: float, value: float, unit: str = "") -> Shape:
    return Shape(x + 4, y + 4, text=f"{format_number(value)}{unit}")


def _legend(chart: BarChart) -> list[Shape]:
    x = float(LABEL_WIDTH)
    entries = []
    for j, name in enumerate(chart.series):
        entries.append(Shape(x, 4, 10, 10, chart.colors[j % len(chart.colors)], text=name))
        x += 24 + 7 * len(name)
    return entries


def _axis(chart: BarChart) -> tuple[float, float]:
    """The end of the value axis and its tick step: about four steps of a round size."""
    if chart.stacked:
        biggest = max((sum(r.values) for r in chart.rows), default=0.0)
    else:
        biggest = max((v for r in chart.rows for v in r.values), default=0.0)
    if biggest <= 0:
        return 0.0, 0.0
    step = _nice(biggest / 4)
    if all(v == int(v) for r in chart.rows for v in r.values):
        step = max(step, 1.0)  # counts: no tick between two whole numbers
    return step * math.ceil(biggest / step - 1e-9), step


def _nice(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 × 10^k at or above ``value``."""
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def _ticks(top: float, step: float) -> list[float]:
    if not step:
        return []
    return [step * k for k in range(round(top / step) + 1)]


def format_number(value: object) -> str:
    """Numbers as the page prints them: thousands separated, at most 2 decimals (4 below 1),
    no trailing zeros; NULL is empty; anything else is its text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float) and float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if isinstance(value, float):
        digits = 4 if abs(value) < 1 else 2
        return f"{value:,.{digits}f}".rstrip("0").rstrip(".")
    return str(value)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"
