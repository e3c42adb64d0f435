"""BFCL multi-turn as a backend: its classes become environments, its tasks scenarios.

The pipeline treats what this backend makes like any other backend's: the adapted module is
admitted by the same policy and runs in the same sandbox, every scenario is certified by the
same gates, and the rows land in the same tables (DESIGN §2, §4). Items are the sets of classes
the category's tasks involve, one environment each; an item's scenarios are its tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envmill.schemas.backends import BFCL
from envmill.schemas.benchmarks import BFCL_EVAL_VERSION, BFCL_SOURCE, BfclSettings
from envmill.schemas.ids import content_id
from envmill.schemas.llm import LlmCallRecord
from envmill.schemas.run import EnvItemSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.schemas.skeleton import ProbeRecord
from envmill.tasks.backends.base import PlanError, ScenarioDrafts
from envmill.tasks.backends.imported.bfcl.adapt import AdaptedEnvironment, build_environment
from envmill.tasks.backends.imported.bfcl.package import BfclDataError, BfclTask, read_tasks
from envmill.tasks.backends.imported.scenarios import bfcl_scenarios

if TYPE_CHECKING:
    from envmill.tasks.envs import AdmittedEnvironment
    from envmill.tasks.sandbox import Sandbox

CLASS_JOIN = "+"  # an item's subject: its classes, sorted, joined


@dataclass(frozen=True)
class BfclDraft:
    """An adapted module for one set of classes, with the prose the pipeline stores beside it."""

    adapted: AdaptedEnvironment
    classes: tuple[str, ...]
    domain: str = BFCL
    origin: str = BFCL_SOURCE  # the environments table's corpus name
    call_records: Sequence[LlmCallRecord] = ()
    probes: Sequence[ProbeRecord] = field(default_factory=tuple)

    @property
    def source(self) -> str:
        return self.adapted.source

    @property
    def topic(self) -> str:
        return self.adapted.topic

    @property
    def introduction(self) -> str:
        return self.adapted.introduction

    @property
    def business_rules(self) -> list[str]:
        return list(self.adapted.business_rules)


class BfclBackend:
    """``envmill import bfcl``: one category of BFCL multi-turn, read from the pinned package."""

    name = BFCL
    version = f"bfcl-1/{BFCL_EVAL_VERSION}"
    item_threads = 1

    def __init__(self, settings: BfclSettings) -> None:
        self.settings = settings
        self._tasks: list[BfclTask] | None = None

    def provenance(self) -> dict[str, Any]:
        return {
            "generator": self.version,
            "models": {},
            "prompts": {},
            "benchmark": {"package": f"bfcl-eval=={BFCL_EVAL_VERSION}", **self._about()},
        }

    def _about(self) -> dict[str, Any]:
        return {"category": self.settings.category, "limit": self.settings.limit}

    def tasks(self) -> list[BfclTask]:
        """The category's tasks, the first ``limit`` of them; a package that is missing or of
        another shape is a one-line PlanError."""
        if self._tasks is None:
            try:
                tasks = read_tasks(f"multi_turn_{self.settings.category}")
            except BfclDataError as exc:
                raise PlanError(str(exc)) from None
            limit = self.settings.limit
            self._tasks = tasks[:limit] if limit else tasks
        return self._tasks

    def plan_items(self, settings: EnvmillSettings) -> list[EnvItemSpec]:
        """One item per set of classes, keyed by the tasks it imports: a folder that holds
        another category's, or fewer of this one's (``--limit``), imports these all the same."""
        groups: dict[tuple[str, ...], list[str]] = {}
        for task in self.tasks():
            groups.setdefault(class_set(task), []).append(task.id)
        return [
            EnvItemSpec(
                index=i,
                subject=CLASS_JOIN.join(classes),
                seed=0,
                key=content_id({"generator": self.version, "tasks": groups[classes]}),
            )
            for i, classes in enumerate(sorted(groups))
        ]

    def make_environment(self, item: EnvItemSpec, sandbox: Sandbox) -> BfclDraft:
        classes = tuple(item.subject.split(CLASS_JOIN))
        return BfclDraft(adapted=build_environment(list(classes)), classes=classes)

    def make_scenarios(
        self,
        draft: BfclDraft,
        env: AdmittedEnvironment,
        item: EnvItemSpec,
        count: int,
        sandbox: Sandbox,
    ) -> ScenarioDrafts:
        """Every task of the item's classes (``count`` does not cap a benchmark: a test set is
        imported whole or by ``limit``)."""
        tasks = [task for task in self.tasks() if class_set(task) == draft.classes]
        return bfcl_scenarios(tasks, draft.adapted, env, sandbox)


def class_set(task: BfclTask) -> tuple[str, ...]:
    """The classes a task involves, in one order whatever order the file lists them in."""
    return tuple(sorted(task.involved_classes))
