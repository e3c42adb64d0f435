"""An export in memory: the selected records read as conversations, split by environment,
rendered in one format and validated, before anything is written.

A record whose conversation breaks a structure rule (or, for LlamaFactory, cannot alternate) is
left out and counted by rule; every file is validated from its bytes, and a file that fails is
:class:`ExportInvalid` (a bug, not a choice: nothing is written).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from envmill.schemas.export import ExportRecord
from envmill.tasks.export.conversation import Unexportable, read_conversation
from envmill.tasks.export.format import ExportFormat
from envmill.tasks.export.formats import FORMATS
from envmill.tasks.export.llamafactory import ShareGptStats
from envmill.tasks.export.safe_text import SpecialTokens, Touched, safe_record
from envmill.tasks.export.split import SPLITS, Split, split_items

DATASET_INFO = "dataset_info.json"


class ExportInvalid(ValueError):
    """A rendered file failed its format's validator."""


@dataclass
class ExportPlan:
    """The files of one export and what it took, left out and changed."""

    format: str
    files: dict[str, bytes] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)  # file name -> examples in it
    trajectories: dict[Split, int] = field(default_factory=dict)
    environments: dict[Split, int] = field(default_factory=dict)
    unexportable: Counter[str] = field(default_factory=Counter)
    touched: Touched = field(default_factory=Touched)  # special tokens and broken text made safe
    special_tokens: str = "escaped"  # what became of them, as the summary says it
    sharegpt: ShareGptStats = field(default_factory=ShareGptStats)
    dataset_info: dict[str, Any] = field(default_factory=dict)  # entries to merge


def build_export(
    records: list[ExportRecord],
    fmt: str,
    validation: float | None = None,
    seed: int = 0,
    special_tokens: SpecialTokens = "escape",
) -> ExportPlan:
    """Render and validate ``records`` (in the order given) as ``fmt``.

    Args:
        records: the selected trajectories, each with its environment's tools.
        fmt: the name of one of ``FORMATS``.
        validation: the share of environments to hold out; None writes one ``train`` file.
            A split that comes out empty gets no file (its counts are 0).
        seed: seeds the split.
        special_tokens: what becomes of chat-template control strings in the text
            (``safe_text``): escaped, dropped or kept.

    Raises:
        ExportInvalid: a rendered file failed validation; the message names its problems.
    """
    done = {"escape": "escaped", "drop": "dropped", "keep": "kept"}[special_tokens]
    spec, plan = FORMATS[fmt], ExportPlan(format=fmt, special_tokens=done)
    records = [safe_record(record, special_tokens, plan.touched) for record in records]
    items = [item for record in records if (item := _convert(spec, record, plan)) is not None]
    groups = split_items(items, key=lambda pair: pair[0].env_id, validation=validation, seed=seed)
    for split in SPLITS if validation else ("train",):
        plan.trajectories[split] = len(groups[split])
        plan.environments[split] = len({record.env_id for record, _ in groups[split]})
        if validation and not groups[split]:
            continue  # no empty file: `datasets` cannot read a Parquet file of no rows
        name = f"{split}.{spec.extension}"
        data = spec.render([converted for _, converted in groups[split]])
        problems = spec.validate(data)
        if problems:
            raise ExportInvalid(f"{name} fails its own validation: {'; '.join(problems[:3])}")
        plan.files[name] = data
        plan.rows[name] = len(groups[split])
    if spec.dataset_info is not None:
        plan.dataset_info = spec.dataset_info({n.split(".")[0]: n for n in plan.files})
    return plan


def _convert(spec: ExportFormat, record: ExportRecord, plan: ExportPlan) -> Any:
    try:
        conversation = read_conversation(record.messages, record.tools)
        return record, spec.convert(record, conversation, plan.sharegpt)
    except Unexportable as exc:
        plan.unexportable[exc.code] += 1
        return None
