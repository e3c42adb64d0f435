"""The comparison with published corpora: this corpus's counts beside the figures papers report.

Only figures a source states are given, each with the source that states it; a figure no source
gave reads "n/a". Sources are cited by title and address without a scheme, so the page links to
nothing (it fetches nothing and stays self-contained).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envmill.warehouse.report.model import Reader, Section, Table

NOT_FOUND = "n/a"
COLUMNS = ("corpus", "environments", "tools per environment", "tasks / scenarios",
           "trajectories", "sources")  # fmt: skip


@dataclass(frozen=True)
class PublishedCorpus:
    """One published corpus: its figures as stated (None when no source states one)."""

    name: str
    environments: str | None
    tools_per_environment: str | None
    tasks: str | None
    trajectories: str | None
    sources: tuple[str, ...]


ENVSCALER = "EnvScaler: Scaling Tool-Interactive Environments for LLM Agent via Programmatic "
AWM = "Agent World Model: Infinity Synthetic Environments for Agentic Reinforcement Learning"
TAU = "τ-bench: A Benchmark for Tool-Agent-User Interaction in Real-World Domains"
PUBLISHED = (
    PublishedCorpus(
        name="EnvScaler",
        environments="191",
        tools_per_environment="about 18.5 (10.4 query, 8.1 state-change)",
        tasks="about 7K scenarios (4.7K SFT, 2.5K RL)",
        trajectories="9,022 SFT trajectories (conversation and non-conversation)",
        sources=(
            f"[1] {ENVSCALER}Synthesis, Song et al. 2026, arXiv:2601.05808 "
            "(arxiv.org/abs/2601.05808): 191 environments, about 7K scenarios; its corpus "
            "statistics: about 10.4 query and 8.1 state-change tools per environment",
            "[2] RUC-NLPIR/EnvScaler README (github.com/RUC-NLPIR/EnvScaler): 4.7K SFT and "
            "2.5K RL scenarios",
            "[3] EnvScaler-SFT-Traj-9K dataset card "
            "(huggingface.co/datasets/XXHStudyHard/EnvScaler-SFT-Traj-9K): 9,022 trajectories",
        ),
    ),
    PublishedCorpus(
        name="AWM (Agent World Model)",
        environments="1,000",
        tools_per_environment="35 (mean)",
        tasks="10,000 tasks",
        trajectories=None,
        sources=(
            f"[4] {AWM}, Wang et al. 2026, arXiv:2602.10090 (arxiv.org/abs/2602.10090): 1,000 "
            "environments, 35 tools per environment on average",
            "[5] Agent World Model, OpenEnv documentation "
            "(meta-pytorch.org/OpenEnv/environments/agent_world_model.html): 10,000 tasks",
        ),
    ),
    PublishedCorpus(
        name="τ-bench",
        environments="2 (retail, airline)",
        tools_per_environment="15 retail (7 write), 13 airline (6 write)",
        tasks="165 tasks (115 retail, 50 airline)",
        trajectories=None,
        sources=(
            f"[6] {TAU}, Yao et al. 2024, arXiv:2406.12045 (arxiv.org/abs/2406.12045); figures "
            "as its specification table is summarised at alphaxiv.org/benchmarks/sierra/tau-bench",
        ),
    ),
)


def comparison_section(reader: Reader) -> Section:
    overview = reader.rows("overview")[0]
    envs = overview["environments"]
    ours = {
        "corpus": "this corpus (the runs covered)",
        "environments": f"{envs:,} in {overview['domains']:,} domains",
        "tools per environment": f"{overview['tools'] / envs:.1f} (mean)" if envs else NOT_FOUND,
        "tasks / scenarios": f"{overview['certified']:,} certified scenarios",
        "trajectories": f"{overview['trajectories']:,}",
        "sources": "this warehouse",
    }
    return Section(
        key="comparison",
        title="Compared with published corpora",
        text="Figures as their sources state them (rounding and units theirs): counts are not "
        "defined alike across papers, so read this as scale, not as a like-for-like measure. "
        f'"{NOT_FOUND}": no source found states the figure; none is estimated.',
        tables=[Table.of([ours, *map(published_row, PUBLISHED)], COLUMNS, "Corpus figures")],
    )


def published_row(corpus: PublishedCorpus) -> dict[str, Any]:
    return {
        "corpus": corpus.name,
        "environments": corpus.environments or NOT_FOUND,
        "tools per environment": corpus.tools_per_environment or NOT_FOUND,
        "tasks / scenarios": corpus.tasks or NOT_FOUND,
        "trajectories": corpus.trajectories or NOT_FOUND,
        "sources": "; ".join(corpus.sources),
    }
