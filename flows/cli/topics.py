"""``envmill topics mine`` and ``topics list``: environment topics from task corpora.

``mine`` reads API-Bank, ToolACE and topic-list files, judges every candidate that passes the
screen with the LLM (``--local``: envmill's own test endpoint on 127.0.0.1, no cost), writes
every candidate to the ``topics`` table and every call to ``llm_calls``, and prints a summary.
The response cache lives in ``<data folder>/_llm_cache``, so a rerun pays only for what did not
finish; answers of the local endpoint are cached apart (``_llm_cache/local-endpoint``) and never
answer a request meant for a real model of the same name.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from envmill.flows.cli.support import fail
from envmill.flows.cli.warehouse import FormatOption, OutOption, _data_dir

app = typer.Typer(help="Mine environment topics from task corpora (API-Bank, ToolACE, lists).")

LOCAL_CACHE = "local-endpoint"
LIST_COLUMNS = (
    "candidate_id, status, reason_code AS reason, topic, usefulness, modelability, "
    "duplicate_of, selection_rank, text"
)
STATUS_ORDER = (
    "CASE status WHEN 'selected' THEN 1 WHEN 'accepted' THEN 2 WHEN 'duplicate' THEN 3 "
    "WHEN 'rejected' THEN 4 WHEN 'failed' THEN 5 ELSE 6 END"
)


@app.command("mine")
def mine(
    files: Annotated[
        list[Path], typer.Argument(help="corpus files: API-Bank JSON, ToolACE JSON(L), topic lists")
    ],
    select: Annotated[
        int | None, typer.Option("--select", help="topics in the diverse subset [all distinct]")
    ] = None,
    min_usefulness: Annotated[
        int, typer.Option("--min-usefulness", help="lowest usefulness kept (1-5)")
    ] = 3,
    min_modelability: Annotated[
        int, typer.Option("--min-modelability", help="lowest modelability kept (1-5)")
    ] = 3,
    out: OutOption = None,
    local: Annotated[
        bool, typer.Option("--local", help="call envmill's test endpoint on 127.0.0.1 (no cost)")
    ] = False,
) -> None:
    """Screen, judge, threshold, dedupe and select topics; write them to the warehouse."""
    from pydantic import ValidationError

    from envmill.schemas.settings import SettingsError, load_settings
    from envmill.schemas.topics import TopicMiningConfig
    from envmill.tasks.backends.llm.topics.mine import mining_key, read_corpora
    from envmill.tasks.backends.llm.topics.sources import CorpusError

    try:
        options = TopicMiningConfig(
            select=select, min_usefulness=min_usefulness, min_modelability=min_modelability
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        fail(f"--{str(error['loc'][0]).replace('_', '-')}: {error['msg']}")
    try:
        settings = load_settings(home=out)
        key = mining_key(files, options)
        corpus = read_corpora(files)
    except (SettingsError, CorpusError) as exc:
        fail(str(exc))
    if corpus.skipped:
        typer.echo(f"skipped {skipped_text(corpus.skipped)}", err=True)
    if not corpus.candidates:
        fail(f"no topic candidates in {', '.join(f.name for f in files)}", code=1)
    candidates = corpus.candidates
    started = time.monotonic()
    if not local:
        _mine(settings, candidates, options, key, len(files), started)
        return
    from envmill.tasks.offline_llm import serve_endpoint

    with serve_endpoint() as endpoint:
        llm = settings.llm.model_copy(update={"base_url": endpoint.url})
        local_settings = settings.model_copy(update={"llm": llm})
        _mine(local_settings, candidates, options, key, len(files), started, local=True)


def _mine(settings, candidates, options, key: str, n_files: int, started: float, local=False):
    from envmill.tasks.backends.llm.topics.mine import mine_candidates
    from envmill.tasks.llm import LlmClient, LlmConfigError
    from envmill.warehouse.lock import FolderBusy, folder_lock
    from envmill.warehouse.rows import write_topics
    from envmill.warehouse.store import Warehouse, WarehouseError, resolve_data_dir

    run_id = f"topics-{datetime.now(UTC):%Y%m%dT%H%M%S.%f}-{key[:8]}"  # two runs in a second differ
    root = resolve_data_dir(str(settings.home) if settings.home else None)
    try:
        client = LlmClient(  # first: no endpoint configured leaves no data folder behind
            settings.llm,
            cache_dir=root / "_llm_cache" / LOCAL_CACHE if local else root / "_llm_cache",
            gate_dir=root / "_llm_gate",
            run_id=run_id,
        )
        warehouse = Warehouse(root)
    except (WarehouseError, LlmConfigError) as exc:
        fail(str(exc))
    records = mine_candidates(candidates, client, options)
    calls = client.collector.drain()
    try:
        with folder_lock(warehouse.root, "envmill topics mine"):  # a run's sweep spares it
            write_topics(warehouse, records, calls, key=key, run_id=run_id)
    except FolderBusy as exc:
        fail(f"{exc} (the answers are cached: mining again costs nothing)")
    seconds = time.monotonic() - started
    typer.echo(summary_text(records, calls, n_files, seconds, run_id, warehouse.root))
    unreachable = [r for r in records if r.reason_code == "unreachable"]
    if unreachable:
        fail(unreachable[0].message, code=1)


def skipped_text(skipped: Counter[str]) -> str:
    """``3 records (no 'User: ' request 2, no 'topic' text 1)``."""
    total = sum(skipped.values())
    reasons = ", ".join(f"{reason} {n}" for reason, n in skipped.most_common())
    return f"{total} record{'s' * (total != 1)} ({reasons})"


def summary_text(records, calls, n_files: int, seconds: float, run_id: str, root: Path) -> str:
    """What a mining run did, one line per outcome, reasons counted beside each."""
    from envmill.tasks.backends.llm.topics.select import EMBEDDING_STAGE
    from envmill.tasks.llm import summarize

    by_status: dict[str, Counter[str]] = {}
    for record in records:
        by_status.setdefault(record.status, Counter())[record.reason_code or ""] += 1
    plural = "s" * (n_files != 1)
    lines = [f"{len(records)} candidates from {n_files} file{plural} in {seconds:.1f} s ({run_id})"]
    for status, label in (
        ("screened_out", "screened out"),
        ("failed", "failed"),
        ("rejected", "rejected"),
        ("duplicate", "duplicates"),
        ("accepted", "accepted"),
        ("selected", "selected"),
    ):
        reasons = by_status.get(status, Counter())
        detail = ", ".join(f"{code} {n}" for code, n in reasons.most_common() if code)
        lines.append(
            f"  {label:<13}{sum(reasons.values()):>6}" + (f"  ({detail})" if detail else "")
        )
    totals = summarize(calls)
    lines.append(
        f"  {'LLM calls':<13}{totals['calls']:>6}  ({totals['cache_hits']} cache hits, "
        f"{totals['failed']} failed; {totals['prompt_tokens']} prompt + "
        f"{totals['completion_tokens']} completion tokens; ${totals['cost_usd']:.4f})"
    )
    embeds = [c for c in calls if c.stage == EMBEDDING_STAGE]
    if embeds:
        fell_back = [c for c in embeds if c.error]  # a 404 (ok, noted) or a failed call
        how = f"lexical fallback ({fell_back[0].error})" if fell_back else "from the endpoint"
        lines.append(f"  {'embeddings':<13}{'':>6}  {how}")
    lines.append(f"  {'data folder':<13}{'':>6}  {root}")
    return "\n".join(lines)


@app.command("list")
def list_topics(
    status: Annotated[
        str | None, typer.Option("--status", help="only this status, e.g. selected, rejected")
    ] = None,
    fmt: FormatOption = "table",
    out: OutOption = None,
) -> None:
    """Topic candidates, best first: selected, accepted, duplicates, rejected, failed, screened.

    ``--format table`` shows the main columns; csv and json carry every column.
    """
    from envmill.schemas.topics import TOPIC_STATUSES
    from envmill.warehouse.views import format_table, query

    if status is not None and status not in TOPIC_STATUSES:
        fail(f"unknown status {status!r}; statuses: {', '.join(TOPIC_STATUSES)}")
    columns = LIST_COLUMNS if fmt == "table" else "*"
    where = "WHERE status = ?" if status else ""
    order = f"{STATUS_ORDER}, selection_rank, usefulness + modelability DESC, text, candidate_id"
    sql = f"SELECT {columns} FROM topics {where} ORDER BY {order}"
    table = query(_data_dir(out, "envmill topics mine FILE"), sql, [status] if status else None)
    typer.echo(format_table(table, fmt))
