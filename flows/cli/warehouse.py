"""``envmill sql``, ``stats`` and ``show``: read the warehouse (never write it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from envmill.flows.cli.support import fail, print_json

OutOption = Annotated[
    Path | None, typer.Option("--out", help="data folder [ENVMILL_HOME, ./envmill-data]")
]
FormatOption = Annotated[
    Literal["table", "csv", "json"], typer.Option("--format", help="table, csv or json")
]


def _data_dir(out: Path | None, made_by: str = "envmill run") -> Path:
    """An existing envmill data folder; reading never creates or converts one. ``made_by``:
    the command that would have made it."""
    from envmill.warehouse.store import MARKER, WarehouseError, check_format, resolve_data_dir

    root = resolve_data_dir(str(out) if out else None)
    if not (root / MARKER).is_file():
        fail(
            f"{root} is not an envmill data folder (no {MARKER}); "
            f"run `{made_by} --out {root}` first"
        )
    try:
        check_format(root / MARKER)
    except WarehouseError as exc:
        fail(str(exc))
    _settle_quietly(root)
    return root


def _settle_quietly(root: Path) -> None:
    """A run its process left ``running`` (kill -9) is recorded interrupted by whichever command
    looks next; a folder this user cannot write is only read."""
    from envmill.flows.run_record import settle_abandoned_runs
    from envmill.warehouse.store import WarehouseError

    try:
        settle_abandoned_runs(root)
    except (OSError, WarehouseError):
        pass


def sql(
    query: Annotated[
        str, typer.Argument(help="SQL over the views: runs, environments, tools, scenarios, ...")
    ],
    out: OutOption = None,
    fmt: FormatOption = "table",
) -> None:
    """Run a SQL query over the warehouse and print the rows."""
    import duckdb

    from envmill.warehouse.views import NotAQuery, format_table
    from envmill.warehouse.views import query as run_query

    try:
        table = run_query(_data_dir(out), query)
    except NotAQuery as exc:
        fail(f"SQL refused: {exc}")
    except duckdb.Error as exc:
        fail(f"SQL error: {str(exc).splitlines()[0]}")
    text = format_table(table, fmt)
    typer.echo(text, nl=not text.endswith("\n"))


def stats(out: OutOption = None, fmt: FormatOption = "table") -> None:
    """Corpus statistics: environments, tools by kind, scenarios, the funnel, failures."""
    from envmill.warehouse.views import corpus_stats, format_table

    results = corpus_stats(_data_dir(out))
    if fmt == "json":
        print_json({name: table.to_pylist() for name, table in results.items()})
        return
    for name, table in results.items():
        typer.echo(f"\n## {name.replace('_', ' ')}")
        typer.echo(format_table(table, fmt))


RUNS_SQL = """
SELECT run_id, status, backend, seed, started_at,
       round(epoch(finished_at) - epoch(started_at), 1) AS seconds,
       CASE WHEN backend NOT IN ('rollout', 'dedupe')
            THEN CAST(json_extract(settings_json, '$.envs') AS BIGINT) END AS envs,
       CASE WHEN backend NOT IN ('rollout', 'dedupe')
            THEN CAST(json_extract(settings_json, '$.scenarios_per_env') AS BIGINT) END AS per_env,
       CAST(json_extract(counts_json, '$.environments') AS BIGINT) AS environments,
       CAST(json_extract(counts_json, '$.certified') AS BIGINT) AS certified,
       CAST(json_extract(counts_json, '$.episodes') AS BIGINT) AS episodes,
       CAST(json_extract(counts_json, '$.successes') AS BIGINT) AS successes,
       CAST(json_extract(counts_json, '$.failures') AS BIGINT) AS failures,
       isolation, json_extract_string(versions_json, '$.envmill') AS envmill
FROM runs WHERE $run IS NULL OR run_id = $run ORDER BY started_at, run_id
"""


def runs(
    out: OutOption = None,
    fmt: FormatOption = "table",
    run_id: Annotated[
        str | None, typer.Option("--run", help="one run in full: settings, counts, versions")
    ] = None,
) -> None:
    """List the runs: status, size, counts, duration, isolation and envmill version."""
    from envmill.warehouse.views import format_table
    from envmill.warehouse.views import query as run_query

    root = _data_dir(out)
    if run_id is None:
        typer.echo(format_table(run_query(root, RUNS_SQL, {"run": None}), fmt))
        return
    rows = run_query(root, "SELECT * FROM runs WHERE run_id = $run", {"run": run_id}).to_pylist()
    if not rows:
        fail(f"no run {run_id!r} in {root}; `envmill runs` lists them")
    print_json({k.removesuffix("_json"): _decoded(k, v) for k, v in rows[0].items()})


def _decoded(column: str, value):
    if column.endswith("_json") and value is not None:
        return json.loads(value)
    isoformat = getattr(value, "isoformat", None)
    return isoformat() if callable(isoformat) else value


def _warning_lines(warned: list[dict] | None) -> str:
    """One line per warning, after the JSON (which the tools' schemas make long), where a
    reader looks for them; NULL is an environment stored before warnings were (format < 2.2)."""
    if warned is None:
        return "(not recorded: stored before envmill kept warnings)"
    if not warned:
        return "(none)"
    return "\n".join(
        f"- {w.get('kind')}: {w.get('tool')}: {w.get('message')}"
        + (f" (probes {', '.join(map(str, w['probes']))})" if w.get("probes") else "")
        for w in warned
    )


def show(
    kind: Annotated[Literal["env", "scenario"], typer.Argument(help="env or scenario")],
    item_id: Annotated[str, typer.Argument(help="env_id or scenario_id (a unique prefix works)")],
    out: OutOption = None,
) -> None:
    """Print one environment (source, tools) or scenario (task, solution, checks, gates)."""
    from envmill.warehouse.views import query as run_query

    table, key = ("environments", "env_id") if kind == "env" else ("scenarios", "scenario_id")
    rows = run_query(
        _data_dir(out),
        f"SELECT * FROM {table} WHERE {key} LIKE ? ORDER BY {key} LIMIT 2",
        [item_id + "%"],
    ).to_pylist()
    if not rows:
        fail(f"no {kind} with id {item_id!r}")
    if len(rows) > 1:
        fail(f"{item_id!r} is the prefix of several {kind} ids; give more of it")
    row = {
        k: (json.loads(v) if k.endswith("_json") and v is not None else v)
        for k, v in rows[0].items()
    }
    if kind == "env":
        source, warned = row.pop("source"), row.pop("warnings_json", None)
        print_json({k: v for k, v in row.items() if k != "created_at"})
        typer.echo("\n# warnings\n" + _warning_lines(warned))
        typer.echo("\n# source\n" + str(source))  # a column that is never null
    else:
        print_json({k: v for k, v in row.items() if k != "created_at"})
