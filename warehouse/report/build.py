"""``envmill report``: the corpus's figures as data, and one self-contained HTML page of them.

Every number comes from a named query (``report.sql``, and ``stats.sql`` where one fits) run over
the warehouse views of :mod:`envmill.warehouse.views`; nothing here reads Parquet files itself.
With a run id, each query sees views narrowed to that run's rows (tables carry ``run_id``;
``tools`` follows its environment), so the same SQL serves the folder and one run.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import jinja2
import pyarrow as pa

from envmill.schemas.scenario import GATES
from envmill.schemas.tables import TABLES
from envmill.warehouse.report import header, sections
from envmill.warehouse.report.model import CorpusReport, Section
from envmill.warehouse.report.svg import flat_summary, format_number, layout
from envmill.warehouse.views import connect, load_stats_queries, run_sql

TEMPLATE = "report.html.j2"


class UnknownRun(LookupError):
    """The asked run id has no rows in the folder."""


class ReportReader:
    """Runs the named queries of ``report.sql`` and ``stats.sql`` on one connection, every view
    narrowed to ``run_id`` when one is given."""

    def __init__(self, con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> None:
        self.con, self.run_id = con, run_id
        self.queries = {**load_stats_queries(), **load_report_queries()}
        gates = pa.table({"ord": list(range(1, len(GATES) + 1)), "gate": list(GATES)})
        con.register("gate_order", gates)  # what stats.sql's funnel expects (corpus_stats)

    def rows(self, name: str, **params: Any) -> list[dict[str, Any]]:
        sql = self.queries[name]
        if self.run_id is not None:
            sql, params = scope_to_run(sql), {**params, "run": self.run_id}
        return run_sql(self.con, sql, params or None).to_pylist()

    def run_exists(self) -> bool:
        """Whether any table has a row of the run (its ``runs`` row, or data of it)."""
        tables = [s.name for s in TABLES.values() if "run_id" in s.columns]
        probe = " OR ".join(f"EXISTS (SELECT 1 FROM {t} WHERE run_id = $run)" for t in tables)
        found = run_sql(self.con, f"SELECT {probe} AS found", {"run": self.run_id})
        return bool(found.to_pylist()[0]["found"])


def scope_to_run(sql: str) -> str:
    """``sql`` with every table name bound to a view of the rows of run ``$run`` only.

    Common table expressions named like the views shadow them inside the query (a query that
    has its own WITH gets them first in its list, so its ORDER BY still holds); a table with no
    run of its own follows its environment, and one with neither reads as empty, not whole.
    """
    ctes = []
    for spec in TABLES.values():
        if "run_id" in spec.columns:
            where = "run_id = $run"
        elif "env_id" in spec.columns:
            where = "env_id IN (SELECT env_id FROM main.environments WHERE run_id = $run)"
        else:
            where = "false"
        ctes.append(f'"{spec.name}" AS (SELECT * FROM main."{spec.name}" WHERE {where})')
    body = re.sub(r"^(\s*--[^\n]*\n)+", "", sql.strip() + "\n").strip().rstrip(";")
    own = re.match(r"WITH\s+(RECURSIVE\s+)?", body, flags=re.IGNORECASE)
    if own is None:
        return f"WITH {', '.join(ctes)}\n{body}"
    return f"WITH {own.group(1) or ''}{', '.join(ctes)},\n{body[own.end() :]}"


def load_report_queries() -> dict[str, str]:
    """Named queries of ``report.sql``: each block starts with a ``-- name: <name>`` line."""
    text = (
        resources.files("envmill.warehouse.report")
        .joinpath("report.sql")
        .read_text(encoding="utf-8")
    )
    blocks = re.split(r"^-- name: *(\w+) *$", text, flags=re.MULTILINE)
    return {name: body.strip() for name, body in zip(blocks[1::2], blocks[2::2], strict=True)}


def build_report(
    root: str | os.PathLike[str], run_id: str | None = None, now: datetime | None = None
) -> CorpusReport:
    """Compute every figure of the report over the data folder ``root``.

    Args:
        root: the data folder (only read).
        run_id: restrict every figure to this run's rows; None covers the whole folder.
        now: the date the page states (default: now, UTC).

    Raises:
        UnknownRun: ``run_id`` has no row in any table of the folder.
    """
    con = connect(root)
    try:
        reader = ReportReader(con, run_id)
        if run_id is not None and not reader.run_exists():
            raise UnknownRun(f"no run {run_id!r} in {Path(root)}")
        runs = reader.rows("runs")
        return CorpusReport(
            generated_at=now or datetime.now(UTC),
            data_dir=str(Path(root)),
            run_id=run_id,
            runs=[header.run_summary(r) for r in runs],
            versions=header.versions(runs),
            overview=reader.rows("overview")[0],
            sections=[flatten_charts(build(reader)) for build in sections.BUILDERS],
        )
    finally:
        con.close()


def flatten_charts(section: Section) -> Section:
    """``section`` with each chart that carries no information (every bar 0, or every row alike)
    moved to ``flat_charts`` as the one line that says all it showed."""
    kept = []
    for chart in section.charts:
        line = flat_summary(chart)
        if line is None:
            kept.append(chart)
        else:
            section.flat_charts.append(line)
    section.charts = kept
    return section


def render_report(report: CorpusReport) -> str:
    """The page: one HTML document with inline CSS and SVG, every warehouse text escaped."""
    env = jinja2.Environment(
        autoescape=True,  # text from the warehouse comes from LLMs and users
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["layout"] = layout
    env.filters["number"] = format_number
    source = (
        resources.files("envmill.warehouse.report").joinpath(TEMPLATE).read_text(encoding="utf-8")
    )
    return env.from_string(source).render(report=report)
