"""The corpus report as data: what each section of the page shows, before any HTML.

Tests read the numbers here and compare them with SQL; the template only lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from envmill.warehouse.report.svg import BarChart

MAX_TABLE_ROWS = 30


class Reader(Protocol):
    """Runs one named query (``report.sql``/``stats.sql``) over the scope of the report."""

    def rows(self, name: str, **params: Any) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Table:
    """Rows under named columns, as the page prints them."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    caption: str = ""

    @classmethod
    def of(cls, rows: list[dict[str, Any]], columns: tuple[str, ...], caption: str = "") -> Table:
        """The first MAX_TABLE_ROWS rows; the caption says when there are more."""
        if len(rows) > MAX_TABLE_ROWS:
            caption += f" (first {MAX_TABLE_ROWS} of {len(rows)} rows; envmill stats has all)"
        kept = rows[:MAX_TABLE_ROWS]
        return cls(columns, tuple(tuple(r.get(c) for c in columns) for r in kept), caption)

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


@dataclass(frozen=True)
class Metric:
    """One number with the definition the page states next to it."""

    key: str
    name: str
    value: float | int | None
    shown: str
    definition: str


@dataclass(frozen=True)
class Turn:
    """One message of a worked example as the page prints it: who speaks and what they say."""

    role: str
    text: str


@dataclass
class Section:
    key: str
    title: str
    text: str = ""
    charts: list[BarChart] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    examples: list[tuple[str, str]] = field(default_factory=list)  # (label, text)
    definitions: list[tuple[str, str]] = field(default_factory=list)  # (term, meaning)
    note: str = ""  # why the section shows nothing, when it does not
    transcript: list[Turn] = field(default_factory=list)  # a worked example, message by message
    flat_charts: list[str] = field(default_factory=list)  # charts with nothing to show, as text

    def chart(self, title_start: str) -> BarChart:
        return next(c for c in self.charts if c.title.startswith(title_start))

    def metric(self, key: str) -> Metric:
        return next(m for m in self.metrics if m.key == key)


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    status: str
    backend: str
    seed: int
    started_at: datetime | None
    finished_at: datetime | None
    settings: str  # a one-line summary of settings_json
    isolation: str


@dataclass
class CorpusReport:
    generated_at: datetime
    data_dir: str
    run_id: str | None  # None: the whole folder
    runs: list[RunSummary]
    versions: list[tuple[str, str]]  # package, version(s) across the runs covered
    overview: dict[str, int]
    sections: list[Section]

    def section(self, key: str) -> Section:
        return next(s for s in self.sections if s.key == key)
