"""One builder per section of the corpus report: named queries in, charts, tables and notes out.

Each builder takes a reader with ``rows(name, **params)`` (see :class:`report.ReportReader`) so
it sees one run or the whole folder without knowing which.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from envmill.warehouse.report.corpus import corpus_section, example_section
from envmill.warehouse.report.metrics import diversity_section
from envmill.warehouse.report.model import Reader, Section, Table
from envmill.warehouse.report.published import comparison_section
from envmill.warehouse.report.svg import PALETTE, BarChart, BarRow, histogram_rows

TOP_ROWS = 15  # rows of a ranked chart; the rest is summed into one "other" row
EXAMPLE_CHARS = 400
PASS_FAIL = ("#54a24b", "#e45756")


def tools_section(reader: Reader) -> Section:
    counts: dict[str, dict[int, int]] = defaultdict(dict)
    for r in reader.rows("tools_histogram"):
        counts[r["kind"]][r["tools"]] = r["environments"]
    kinds = ("query", "state_change")
    by_domain = _domain_means(reader.rows("tools_by_domain"))
    return Section(
        key="tools",
        title="Tools per environment",
        text="An environment's public methods are its tools: a query only reads the state, a "
        "state change writes it (found by probing each tool). EnvScaler reports about 10.4 query "
        "and 8.1 state-change tools per environment.",
        charts=[
            BarChart(
                "Environments by number of tools of each kind",
                kinds,
                histogram_rows(counts, kinds),
                stacked=False,
                axis="tools of that kind an environment has",
            ),
            BarChart("Mean tools per environment, by domain", kinds, by_domain, axis="domain"),
        ],
        tables=[
            Table.of(
                reader.rows("tools_per_environment"),
                ("kind", "environments", "avg", "min", "max"),
                "Tools per environment",
            ),
        ],
    )


STATE_CATEGORIES = (
    (
        "entity collection",
        "a list, or an object keyed by id whose values are records or lists "
        "(or of unstated type): one kind of entity, e.g. patients, orders",
    ),
    ("mapping", "an object keyed freely whose values are plain values (e.g. stock by SKU)"),
    ("clock", "current_time, or a string of format date or date-time"),
    ("id counter", "an integer named next_…: the counter for new ids"),
    ("other value", "any other attribute: a plain value or an object of fixed fields"),
)


def state_section(reader: Reader) -> Section:
    rows = reader.rows("state_attributes")
    envs = {r["env_id"] for r in rows}
    attributes = Counter(r["env_id"] for r in rows if r["attribute"] is not None)
    entities = [r for r in rows if r["category"] == "entity collection"]
    collections = Counter(r["env_id"] for r in entities)
    series = ("state attributes", "entity collections")
    counts = {
        series[0]: Counter(attributes[e] for e in envs),
        series[1]: Counter(collections[e] for e in envs),
    }
    common = Counter(r["attribute"] for r in entities)
    return Section(
        key="state",
        title="State categories",
        text="The state of an environment is the JSON object of its attributes; its state "
        "schema lists them. Each top-level attribute falls in one category (below); entity "
        "collections are the kinds of entity an environment keeps. EnvScaler reports about 21 "
        "state categories per environment (counted its own way).",
        charts=[
            BarChart(
                "Environments by number of top-level state attributes",
                series,
                histogram_rows(counts, series),
                stacked=False,
                axis="top-level attributes (or entity collections) an environment has",
            ),
            BarChart(
                "Most common entity collections (environments that have one)",
                ("environments",),
                _ranked(common),
                colors=PALETTE[4:],
                axis="attribute name, most frequent first",
            ),
        ],
        tables=[_category_table(rows, len(envs))],
        definitions=list(STATE_CATEGORIES),
    )


def _category_table(rows: list[dict[str, Any]], n_envs: int) -> Table:
    per_category = Counter(r["category"] for r in rows if r["category"])
    envs_with = {c: len({r["env_id"] for r in rows if r["category"] == c}) for c in per_category}
    records = [
        {
            "category": name,
            "attributes": per_category.get(name, 0),
            "environments with one": envs_with.get(name, 0),
            "mean per environment": round(per_category.get(name, 0) / n_envs, 2) if n_envs else 0,
        }
        for name, _ in STATE_CATEGORIES
    ]
    columns = ("category", "attributes", "environments with one", "mean per environment")
    return Table.of(records, columns, "Top-level state attributes by category")


def scenarios_section(reader: Reader) -> Section:
    counts: dict[str, dict[int, int]] = defaultdict(dict)
    for r in reader.rows("scenarios_histogram"):
        counts[r["series"]][r["n"]] = r["environments"]
    series = ("all scenarios", "certified")
    columns = (
        "environments",
        "scenarios",
        "certified",
        "avg_scenarios",
        "min_scenarios",
        "max_scenarios",
        "avg_certified",
        "min_certified",
        "max_certified",
    )
    return Section(
        key="scenarios",
        title="Scenarios per environment",
        text="A scenario is an initial state, a task, a reference solution and checks; it counts "
        "as certified when it passed every gate. One example task per domain follows "
        "(the certified scenario with the smallest id).",
        charts=[
            BarChart(
                "Environments by number of scenarios",
                series,
                histogram_rows(counts, series),
                stacked=False,
                colors=(PALETTE[0], PASS_FAIL[0]),
                axis="scenarios an environment has",
            ),
        ],
        tables=[Table.of(reader.rows("scenarios_per_environment"), columns, "Summary")],
        examples=_examples((r["domain"], r["task"]) for r in reader.rows("example_tasks")),
    )


def funnel_section(reader: Reader) -> Section:
    funnel = sorted(reader.rows("certification_funnel"), key=lambda r: r["step"])
    failed = {r["gate"]: r["failed"] for r in reader.rows("gate_failures")}
    for r in funnel:
        r["failed at all"] = failed.get(r["gate"], 0) if r["gate"] != "certified" else None
    rows = tuple(BarRow(r["gate"], (r["passed"], r["rejected"])) for r in funnel)
    repairs = (
        "backend",
        "scenarios",
        "certified_at_once",
        "certified_after_repair",
        "rejected",
        "repairs",
    )
    return Section(
        key="funnel",
        title="Certification funnel",
        text="Gates run in this order. A scenario reaches a gate when it passed every earlier "
        "one, and is rejected at its first failing gate (rejected_gate). Every gate is evaluated "
        "for every scenario, so 'failed at all' (from the gates record) can exceed 'rejected'.",
        charts=[
            BarChart(
                "Scenarios reaching each gate",
                ("passed", "rejected here"),
                rows,
                colors=PASS_FAIL,
                axis="gates in the order they run, then certified",
            ),
        ],
        tables=[
            Table.of(
                funnel, ("step", "gate", "reached", "passed", "rejected", "failed at all"), "Funnel"
            ),
            Table.of(reader.rows("scenario_repairs"), repairs, "Certification after repair"),
        ],
    )


def failures_section(reader: Reader) -> Section:
    by_code = sorted(reader.rows("failures_by_code"), key=lambda r: (-r["failures"], r["stage"]))
    counts = Counter({f"{r['stage']} · {r['reason']}": r["failures"] for r in by_code})
    columns = ("stage", "error_class", "code", "failures", "attempts", "runs")
    return Section(
        key="failures",
        title="Failure reasons by stage",
        text="Items that failed at a stage (an environment refused by a check, a batch whose "
        "retries were spent, ...); the reason is the failure's code, else its error class.",
        charts=[
            BarChart(
                "Failures by stage and reason",
                ("failures",),
                _ranked(counts),
                colors=PASS_FAIL[1:],
                axis="stage · code (else error class), most frequent first",
            )
        ]
        if by_code
        else [],
        tables=[Table.of(reader.rows("failures_by_stage"), columns, "Failures")] if by_code else [],
        examples=_examples((f"{r['stage']} · {r['reason']}", r["example"]) for r in by_code),
        note="" if by_code else "No failures were recorded.",
    )


def llm_section(reader: Reader) -> Section:
    stages = reader.rows("llm_by_stage")
    section = Section(
        key="llm",
        title="LLM tokens and cost by stage",
        text="Every LLM call is a row of llm_calls, cache hits included (a hit costs nothing).",
    )
    if not stages:
        section.note = (
            "No LLM calls were recorded for the runs covered (the procedural backend makes "
            "none), so this section has no figures."
        )
        return section
    tokens = tuple(BarRow(s["stage"], (s["prompt_tokens"], s["completion_tokens"])) for s in stages)
    cost = tuple(BarRow(s["stage"], (s["cost_usd"],)) for s in stages)
    columns = (
        "stage",
        "model",
        "calls",
        "cache_hits",
        "failed",
        "refused",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "avg_latency_s",
    )
    section.charts = [
        BarChart("Tokens by stage", ("prompt", "completion"), tokens, axis="stage"),
        BarChart("Cost by stage", ("cost",), cost, unit=" USD", colors=PALETTE[5:], axis="stage"),
    ]
    section.tables = [Table.of(reader.rows("llm_usage"), columns, "Calls by stage and model")]
    refusals = reader.rows("llm_refusals")
    if refusals:
        section.tables.append(
            Table.of(refusals, ("stage", "reason", "refused", "items"), "Refused answers")
        )
        section.examples = _examples(
            (f"{r['stage']} · {r['reason']}", r["example"]) for r in refusals
        )
    return section


def _ranked(counts: Counter[str]) -> tuple[BarRow, ...]:
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [BarRow(label, (float(n),)) for label, n in ordered[:TOP_ROWS]]
    rest = ordered[TOP_ROWS:]
    if rest:
        rows.append(BarRow(f"other ({len(rest)} more)", (float(sum(n for _, n in rest)),)))
    return tuple(rows)


def _domain_means(domains: list[dict[str, Any]]) -> tuple[BarRow, ...]:
    """Mean tools per environment of the TOP_ROWS largest domains, the rest as one row."""
    top, rest = domains[:TOP_ROWS], domains[TOP_ROWS:]
    rows = [BarRow(d["domain"], (d["avg_query"], d["avg_state_change"])) for d in top]
    if rest:
        envs = sum(d["environments"] for d in rest)
        means = tuple(
            round(sum(d[k] * d["environments"] for d in rest) / envs, 2)
            for k in ("avg_query", "avg_state_change")
        )
        rows.append(BarRow(f"other ({len(rest)} domains)", means))
    return tuple(rows)


def _examples(pairs: Iterable[tuple[str, str | None]]) -> list[tuple[str, str]]:
    """At most TOP_ROWS (label, text) examples, texts on one line and clipped."""
    pairs = list(pairs)
    shown = [(label, _clip(text)) for label, text in pairs[:TOP_ROWS]]
    if len(pairs) > TOP_ROWS:
        shown.append(("…", f"{len(pairs) - TOP_ROWS} more not shown"))
    return shown


def _clip(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= EXAMPLE_CHARS else text[: EXAMPLE_CHARS - 1] + "…"


BUILDERS: tuple[Callable[[Reader], Section], ...] = (
    corpus_section,
    comparison_section,
    example_section,
    tools_section,
    state_section,
    scenarios_section,
    funnel_section,
    failures_section,
    llm_section,
    diversity_section,
)
