"""Near-duplicate detection: its settings, the items it compares and the pairs it records.

Duplicates are recorded, never dropped: a pair whose similarity reaches its measure's threshold
becomes a ``duplicates`` row (the later item, the earlier one it duplicates, the similarity and
the measure), and the corpus metrics count them per kind.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

DEDUPE_KINDS = ("environment", "task", "state")
# measure -> the kind of item it compares
MEASURES = {
    "code": "environment",  # AST-normalized source, identifiers alpha-renamed, literals masked
    "signature": "environment",  # tool names, parameter names and types
    "task": "task",  # the task text with ids, numbers, dates and names masked
    "state": "state",  # the initial state's paths and values, ids masked
}


class DedupeSettings(BaseModel):
    """Thresholds of near-duplicate detection (``[dedupe]`` in envmill.toml,
    ``ENVMILL_DEDUPE__*``): a pair at or above its measure's Jaccard similarity is recorded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(
        default=True, description="check a run's new items at the end of `envmill run`"
    )
    code: float = Field(
        default=0.95, gt=0, le=1, description="environments: shingles of the normalized source"
    )
    signature: float = Field(
        default=0.8, gt=0, le=1, description="environments: tool and parameter names and types"
    )
    task: float = Field(
        default=0.8, gt=0, le=1, description="tasks: word shingles of the masked text"
    )
    state: float = Field(
        default=0.9, gt=0, le=1, description="initial states: masked path=value items"
    )

    def threshold(self, measure: str) -> float:
        return getattr(self, measure)


class DedupeItem(BaseModel):
    """One item to compare: its id, when it was made (earlier items are the originals) and
    whether it is new (only pairs with a new item are looked for)."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    order: str  # sorts earlier items first: created_at then id
    new: bool = True


class EnvironmentItem(DedupeItem):
    source: str
    tools: list[dict]


class TaskItem(DedupeItem):
    task: str
    facts: dict = Field(default_factory=dict)  # user facts: their values are masked as names


class StateItem(DedupeItem):
    state: dict


class DuplicateRecord(BaseModel):
    """One pair above threshold: ``item_id`` (the later) duplicates ``duplicate_of``."""

    model_config = ConfigDict(frozen=True)

    kind: str
    item_id: str
    duplicate_of: str
    similarity: float = Field(ge=0, le=1)
    measure: str
