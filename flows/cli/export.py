"""``envmill export``: the selected trajectories as files a trainer reads (README, "Exporting
for trainers"). The warehouse is only read; the export folder gets only the export's files."""

from __future__ import annotations

from collections import Counter
from enum import Enum
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from envmill.flows.cli.support import echo_error, fail
from envmill.flows.cli.warehouse import OutOption, _data_dir
from envmill.tasks.export.formats import FORMATS, format_help  # names only: writers load on use

if TYPE_CHECKING:
    from envmill.schemas.export import ExportSelection
    from envmill.tasks.export import ExportPlan
    from envmill.tasks.export.folder import Written
    from envmill.tasks.export.llamafactory import ShareGptStats
    from envmill.tasks.export.safe_text import SpecialTokens
    from envmill.warehouse.export_rows import Selected

NO_ROWS = 1  # an empty selection is a result, not a usage error


# --format's choices, built from the names the formats declare (a type checker cannot list them)
FormatName = Enum("FormatName", {name: name for name in FORMATS}, type=str)
FormatOption = Annotated[
    FormatName, typer.Option("--format", help=format_help(), show_choices=True)
]
ToOption = Annotated[Path, typer.Option("--to", help="the export folder (created if missing)")]


def export(
    fmt: FormatOption,  # pyright: ignore[reportInvalidTypeForm]
    to: ToOption,
    out: OutOption = None,
    min_reward: Annotated[
        float | None, typer.Option("--min-reward", help="keep rewards at least this (0 to 1)")
    ] = None,
    backend: Annotated[str | None, typer.Option(help="the environment's backend")] = None,
    domain: Annotated[str | None, typer.Option(help="the environment's domain")] = None,
    run_id: Annotated[str | None, typer.Option("--run", help="the trajectory's run")] = None,
    policy: Annotated[str | None, typer.Option(help="`reference` or a model name")] = None,
    validation: Annotated[
        float | None,
        typer.Option(help="share of environments held out as validation, e.g. 0.1"),
    ] = None,
    seed: Annotated[int, typer.Option(help="seed of the split")] = 0,
    include_dropped: Annotated[
        bool, typer.Option("--include-dropped", help="keep trajectories a filter dropped")
    ] = False,
    include_source: Annotated[
        list[str] | None,
        typer.Option(
            "--include-source",
            help="export a benchmark's held-out scenarios too, e.g. bfcl (never by default: "
            "they are evaluation data)",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="replace files of the export's names not envmill's")
    ] = False,
    special_tokens: Annotated[
        str,
        typer.Option(
            "--special-tokens",
            help="chat-template control strings in the text (<|im_start|>, [INST], …): escape "
            "(a zero-width space breaks them), drop or keep [escape]",
        ),
    ] = "escape",
) -> None:
    """Export trajectories for a trainer: OpenAI fine-tuning, LlamaFactory or Parquet (TRL)."""
    from envmill.schemas.export import ExportSelection

    if min_reward is not None and not 0.0 <= min_reward <= 1.0:
        fail(f"--min-reward must be between 0 and 1, not {min_reward:g}")
    if validation is not None and not 0.0 < validation < 1.0:
        fail(f"--validation must be a share between 0 and 1 (exclusive), not {validation:g}")
    from envmill.tasks.export.safe_text import SPECIAL_TOKEN_MODES

    if special_tokens not in SPECIAL_TOKEN_MODES:
        modes = ", ".join(SPECIAL_TOKEN_MODES)
        fail(f"--special-tokens must be one of {modes}, not {special_tokens!r}")
    root = _data_dir(out).resolve()
    folder = to.expanduser().resolve()  # links and '..' followed: where the files would land
    if folder == root or root in folder.parents:
        fail(f"--to {to} is inside the data folder {root}; choose a folder outside it")
    selection = ExportSelection(
        min_reward=min_reward,
        backend=backend,
        domain=domain,
        run_id=run_id,
        policy=policy,
        include_dropped=include_dropped,
        include_sources=tuple(include_source or ()),
    )
    selected = _select(root, selection)
    plan = _build(selected, fmt.value, validation, seed, special_tokens)
    written = _write(folder, plan, _about(plan, selected, selection, validation, seed), force)
    _warn_empty_split(plan, validation)
    typer.echo(_summary(plan, selected, folder, written))


def _select(root: Path, selection: ExportSelection) -> Selected:
    from envmill.warehouse.export_rows import select_for_export

    selected = select_for_export(root, selection)
    if not selected.records:
        fail(_nothing_selected(selected, selection, root), NO_ROWS)
    return selected


def _build(
    selected: Selected, fmt: str, validation: float | None, seed: int, special_tokens: str
) -> ExportPlan:
    from envmill.tasks.export import ExportInvalid, build_export

    try:
        mode = cast("SpecialTokens", special_tokens)  # checked by the command
        plan = build_export(selected.records, fmt, validation, seed, mode)
    except ExportInvalid as exc:
        fail(f"export refused: {exc}", 1)
    if not sum(plan.trajectories.values()):
        fail(
            f"none of the {len(selected.records)} trajectories can be exported: "
            f"{_counts(plan.unexportable)}",
            NO_ROWS,
        )
    return plan


def _write(folder: Path, plan: ExportPlan, about: dict[str, Any], force: bool) -> Written:
    from envmill.tasks.export import ExportFolderError, write_export

    try:
        return write_export(folder, plan, about, force)
    except ExportFolderError as exc:
        fail(str(exc))


def _nothing_selected(selected: Selected, selection: ExportSelection, root: Path) -> str:
    filters = ", ".join(
        f"{name} {value}"
        for name, value in selection.model_dump(
            exclude={"include_dropped", "include_sources"}
        ).items()
        if value is not None
    )
    where = f" ({filters})" if filters else ""
    if selected.held_out and not selected.dropped:
        return (
            f"{selected.matched} trajectories match{where}, but all are of held-out benchmark "
            f"scenarios ({_counts(selected.held_out)}); --include-source exports them"
        )
    if selected.dropped:
        return (
            f"{selected.matched} trajectories match{where}, but verdicts drop all of them "
            f"({_counts(selected.dropped_by_filter)}); --include-dropped keeps them"
        )
    missing = (
        f"; {selected.orphans} lack their environment or scenario row" if selected.orphans else ""
    )
    return f"no trajectories match{where} in {root}{missing}"


def _about(
    plan: ExportPlan,
    selected: Selected,
    selection: ExportSelection,
    validation: float | None,
    seed: int,
) -> dict[str, Any]:
    """What the manifest records besides the files; nothing that changes between two runs."""
    about: dict[str, Any] = {
        "envmill": metadata.version("envmill"),
        "format": plan.format,
        "selection": selection.model_dump(),
        "split": {"validation": validation, "seed": seed, "by": "env_id"},
        "trajectories": plan.trajectories,
        "environments": plan.environments,
        "left_out": {
            "by_verdicts": selected.dropped,
            "by_filter": dict(sorted(selected.dropped_by_filter.items())),
            "unexportable": dict(sorted(plan.unexportable.items())),
            "without_environment_or_scenario": selected.orphans,
        },
    }
    if _changes_turns(plan):
        about["changed"] = vars(plan.sharegpt)
    return about


def _warn_empty_split(plan: ExportPlan, validation: float | None) -> None:
    if not validation:
        return
    environments = sum(plan.environments.values())
    for split, count in plan.trajectories.items():
        if not count:
            echo_error(
                f"{split} is empty, so no {split} file was written: of {environments} "
                f"environments none fell in it at share {validation:g}; try another --seed",
                prefix="warning",
            )


def _summary(plan: ExportPlan, selected: Selected, folder: Path, written: Written) -> str:
    splits = ", ".join(
        f"{split} {count} from {plan.environments[split]} environments"
        if count
        else f"{split} empty"
        for split, count in plan.trajectories.items()
    )
    parts = [
        f"exported {sum(plan.trajectories.values())} trajectories as {plan.format} to {folder} "
        f"({splits}): {', '.join(written.files)}"
    ]
    left = []
    if selected.dropped:
        left.append(f"{selected.dropped} by verdicts ({_counts(selected.dropped_by_filter)})")
    if plan.unexportable:
        left.append(
            f"{sum(plan.unexportable.values())} unexportable ({_counts(plan.unexportable)})"
        )
    if selected.orphans:
        left.append(f"{selected.orphans} without environment or scenario row")
    if selected.held_out:
        left.append(
            f"{sum(selected.held_out.values())} of held-out benchmark scenarios "
            f"({_counts(selected.held_out)}; --include-source exports them)"
        )
    parts.append("left out " + ", ".join(left) if left else "none left out")
    parts += _made_safe(plan)
    if _changes_turns(plan):
        parts += _changes(plan.sharegpt)
    if written.removed:
        parts.append(f"removed the earlier export's {', '.join(written.removed)}")
    return "; ".join(parts)


def _made_safe(plan: ExportPlan) -> list[str]:
    """What ``--special-tokens`` and the text's repair touched, where they touched anything."""
    touched, how = plan.touched, plan.special_tokens
    said = [f"{touched.special_tokens} special tokens {how}"] if touched.special_tokens else []
    broken = f"{touched.surrogates} broken characters replaced"
    return said + ([broken] if touched.surrogates else [])


def _changes_turns(plan: ExportPlan) -> bool:
    from envmill.tasks.export import FORMATS

    return FORMATS[plan.format].changes_turns


def _changes(stats: ShareGptStats) -> list[str]:
    """What the ShareGPT conversion changed, where it changed anything."""
    said = (
        (stats.dropped_texts, "assistant texts beside tool calls dropped"),
        (stats.joined_turns, "turns joined"),
        (stats.cut_turns, "trailing turns cut"),
    )
    return [f"{count} {what}" for count, what in said if count]


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counter.items()))
