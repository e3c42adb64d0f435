"""``envmill llm check``: try an LLM configuration on every stage, one call each.

With ``--local`` the calls go to envmill's own test endpoint on 127.0.0.1 instead of the
configured one: a zero-cost dry run that still shows each stage's model, token counts and the
cost those tokens would have at the configured prices.
"""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from envmill.flows.cli.support import fail

app = typer.Typer(help="Check an LLM configuration before a run spends anything on it.")


@app.command("check")
def check(
    local: Annotated[
        bool, typer.Option("--local", help="call envmill's test endpoint on 127.0.0.1 (no cost)")
    ] = False,
    stage: Annotated[
        list[str] | None, typer.Option("--stage", help="only this stage (repeatable) [all]")
    ] = None,
    fmt: Annotated[
        Literal["table", "csv", "json"], typer.Option("--format", help="table, csv or json")
    ] = "table",
) -> None:
    """One call per stage through the whole layer (limits, retries, structured output)."""
    from envmill.schemas.settings import SettingsError, load_settings
    from envmill.tasks.backends.llm.stages import STAGES

    try:
        llm = load_settings().llm
    except SettingsError as exc:
        fail(str(exc))
    unknown = [name for name in stage or [] if name not in STAGES]
    if unknown:
        fail(f"unknown stage {unknown[0]!r}; stages: {', '.join(STAGES)}")
    names = stage or list(STAGES)
    if not local:
        _check_stages(llm, names, fmt)
        return
    from envmill.tasks.offline_llm import serve_endpoint

    with serve_endpoint() as endpoint:
        _check_stages(llm.model_copy(update={"base_url": endpoint.url}), names, fmt)


def _check_stages(llm, names: list[str], fmt: str) -> None:
    import pyarrow as pa

    from envmill.tasks.backends.llm.stages import STAGES
    from envmill.tasks.llm import LlmCallError, LlmClient, LlmConfigError, render
    from envmill.warehouse.views import format_table

    try:
        client = LlmClient(llm)  # no cache: a check must reach the endpoint
    except LlmConfigError as exc:
        fail(str(exc))
    rows, failed = [], []
    for name in names:
        probe = STAGES[name]
        prompt = render(probe.prompt, **probe.example)
        try:
            record = client.complete(
                name, prompt.messages, schema=probe.schema, prompt_hash=prompt.prompt_hash
            ).record
        except LlmCallError as exc:
            record = exc.record
            failed.append(str(exc))
        shown = {"stage", "model", "outcome", "attempts", "prompt_tokens", "completion_tokens"}
        rows.append(
            {"endpoint": client.base_url}
            | record.model_dump(include=shown)
            | {"latency_seconds": round(record.latency_seconds, 3), "cost_usd": record.cost_usd}
        )
    typer.echo(format_table(pa.Table.from_pylist(rows), fmt))
    if failed:
        fail(failed[0] + (f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""), code=1)
