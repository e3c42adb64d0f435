"""The diversity section: corpus-level counts from SQL and text diversity of certified tasks."""

from __future__ import annotations

from envmill.warehouse.report.diversity import (
    NEAR_DUPLICATE,
    SIMILARITY_SAMPLE,
    TOKEN_BUDGET,
    distinct_n,
    pairwise_similarity,
)
from envmill.warehouse.report.frames import (
    MIN_LINE_TOKENS,
    cross_domain_line_share,
    frame_share,
)
from envmill.warehouse.report.model import Metric, Reader, Section


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _shown(value: float | int | None, percent: bool = False) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.1%}" if percent else f"{value:.3f}"


def _metric(key: str, name: str, value: float | int | None, definition: str, **kw) -> Metric:
    return Metric(key, name, value, _shown(value, **kw), definition)


def corpus_metrics(c: dict[str, int]) -> list[Metric]:
    """Counts over environments, tools and certified scenarios (``diversity_counts``)."""
    duplicates = _ratio(c["tasks"] - c["distinct_tasks"], c["tasks"])
    return [
        _metric("domains", "Distinct domains", c["domains"], "distinct environments.domain"),
        _metric("topics", "Distinct topics", c["topics"], "distinct environments.topic"),
        _metric(
            "tool_names",
            "Distinct tool names",
            c["tool_names"],
            f"distinct tools.name, out of {c['tools']:,} tools",
        ),
        _metric(
            "tool_signatures",
            "Distinct tool signatures",
            c["tool_signatures"],
            f"distinct (tool name, sorted parameter names) pairs, out of {c['tools']:,} tools",
        ),
        _metric(
            "signature_ratio",
            "Tool signature ratio",
            _ratio(c["tool_signatures"], c["tools"]),
            "distinct tool signatures ÷ tools (1 = no two tools alike)",
        ),
        _metric(
            "solution_shapes",
            "Distinct solution shapes (share)",
            _ratio(c["solution_shapes"], c["tasks"]),
            "distinct sequences of tool names in reference solutions ÷ certified scenarios",
            percent=True,
        ),
        _metric(
            "duplicate_share",
            "Duplicate tasks",
            duplicates,
            f"share of the {c['tasks']:,} certified tasks whose text (lower-cased, "
            "whitespace collapsed) equals an earlier one's: 1 − distinct ÷ all",
            percent=True,
        ),
    ]


def text_metrics(tasks: list[str]) -> list[Metric]:
    """distinct-n at the token budget and pairwise similarity of the sample's first tasks."""
    dn = distinct_n(tasks)
    budget = f"the first {TOKEN_BUDGET:,} tokens of certified tasks in scenario_id order"
    if dn.below_budget:
        budget += f" (only {dn.tokens:,} exist: not comparable with a full budget)"
    metrics = [
        _metric(
            f"distinct_{n}",
            f"distinct-{n}",
            ratio if dn.tokens else None,
            f"distinct token {n}-grams ÷ {n}-grams in {budget}; n-grams stay within a task",
        )
        for n, ratio in dn.ratios.items()
    ]
    sim = pairwise_similarity(tasks[:SIMILARITY_SAMPLE])
    sample = f"the first {sim.tasks:,} certified tasks in scenario_id order ({sim.pairs:,} pairs)"
    metrics += [
        _metric(
            "mean_similarity",
            "Mean pairwise task similarity",
            sim.mean if sim.pairs else None,
            f"mean Jaccard similarity of word-bigram sets over every pair of {sample}",
        ),
        _metric(
            "near_duplicate_share",
            "Near-duplicate tasks",
            sim.near_duplicate_share if sim.pairs else None,
            f"share of {sample} with another at similarity ≥ {NEAR_DUPLICATE}",
            percent=True,
        ),
    ]
    return metrics


FRAME = (
    "its text with quoted names, numbers, ids (any word with a digit) and capitalised words "
    "after a sentence's first word each replaced by a placeholder, a run of them by one, "
    "lower-cased"
)


def template_metrics(tasks: list[str], sources: list[tuple[str, str]]) -> list[Metric]:
    """Shares of tasks and sentences whose masked frame another task has, and of masked code
    lines of environment sources that an environment of another domain has too."""
    frames, lines = frame_share(tasks), cross_domain_line_share(sources)
    return [
        _metric(
            "shared_task_frames",
            "Tasks sharing a frame",
            frames.task_share,
            f"share of the {frames.tasks:,} certified tasks whose frame ({FRAME}) equals "
            "another task's",
            percent=True,
        ),
        _metric(
            "shared_sentence_frames",
            "Sentences sharing a frame",
            frames.sentence_share,
            f"share of the {frames.sentences:,} sentences of certified tasks (split after . ! "
            "or ?) whose frame occurs in another task",
            percent=True,
        ),
        _metric(
            "shared_code_lines",
            "Code lines shared across domains",
            lines.share,
            f"share of the {lines.lines:,} masked lines of environment sources (distinct per "
            "environment; string and number literals replaced, comments dropped, lines of "
            f"fewer than {MIN_LINE_TOKENS} tokens left out) that an environment of another "
            f"domain also has ({lines.domains:,} domains; n/a below two)",
            percent=True,
        ),
    ]


def diversity_section(reader: Reader) -> Section:
    counts = reader.rows("diversity_counts")[0]
    tasks = [r["task"] for r in reader.rows("task_sample", limit=TOKEN_BUDGET)]
    return Section(
        key="diversity",
        title="Diversity",
        text="How varied the corpus is. Tokens are lower-cased runs of letters, digits and "
        "underscores, and single punctuation marks; words are the tokens that are not "
        "punctuation. Tasks are read in scenario_id order, a content hash: a fixed sample that "
        "does not depend on which run wrote them. Text measures use certified scenarios only. "
        "Template measures mask the values first, so two tasks (or lines) made from one "
        "template with other names and numbers count as the same; near-duplicates do not.",
        metrics=corpus_metrics(counts)
        + text_metrics(tasks)
        + template_metrics(
            [r["task"] for r in reader.rows("certified_tasks")],
            [(r["domain"], r["source"]) for r in reader.rows("environment_sources")],
        ),
    )
