"""What the model is told of an environment's earlier scenarios when it writes the next state: a
line per scenario with its task and the records that set its state apart from the example.

Without it every state prompt but the number was the same, and a model at temperature 0.7 wrote
the same state again, which envmill then refused (a repair call for nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envmill.tasks.backends.llm.scengen.invariants import collections_of
from envmill.tasks.backends.llm.scengen.references import is_id

SHOWN_SCENARIOS = 6  # the latest earlier scenarios shown; a prompt stays short however many
SHOWN_RECORDS = 3  # records named per collection
_LABELS = ("name", "title", "full_name", "first_name", "label", "description")


@dataclass(frozen=True)
class EarlierScenario:
    """One decided scenario as the next state prompt shows it."""

    index: int
    task: str
    records: str


def earlier_scenario(index: int, state: dict[str, Any], task: str | None) -> EarlierScenario:
    """Scenario ``index``: its task (or that it has none) and its records, a few per collection,
    each by its id and what a person would call it."""
    shown = []
    for attr, records in collections_of(state):
        named = [_named(key, record) for key, record in list(records.items())[:SHOWN_RECORDS]]
        more = len(records) - SHOWN_RECORDS
        shown.append(f"{attr}: {', '.join(named)}" + (f" (+{more})" if more > 0 else ""))
    return EarlierScenario(index, task or "(no task was written)", "; ".join(shown))


def latest(earlier: list[EarlierScenario]) -> list[EarlierScenario]:
    return earlier[-SHOWN_SCENARIOS:]


def _named(key: str, record: dict[str, Any]) -> str:
    """``LN-3 (Ann Lee, overdue)``: the key, a label field and a status, where there are."""
    label = next((record[f] for f in _LABELS if isinstance(record.get(f), str) and record[f]), None)
    label = label or next(
        (
            v
            for f, v in record.items()
            if isinstance(v, str) and v and not is_id(v) and f != "status"
        ),
        None,
    )
    status = record.get("status")
    said = [str(x)[:40] for x in (label, status) if isinstance(x, str) and x]
    return f"{key} ({', '.join(said)})" if said else str(key)
