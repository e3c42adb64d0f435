"""What every stage of one topic shares: the topic, its LLM conversation, the sandbox, the
settings and a small thread pool for the calls of a stage that do not depend on each other."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from envmill.schemas.skeleton import SkeletonSettings
from envmill.tasks.backends.llm.skelbuilder.asking import Asker
from envmill.tasks.sandbox import Sandbox

PREVIEW_ITEMS = 3  # list items of a tool result shown to the judge
PREVIEW_TEXT = 300  # characters of one string shown to the judge


@dataclass
class TopicContext:
    topic: str
    asker: Asker
    sandbox: Sandbox
    settings: SkeletonSettings
    pool: ThreadPoolExecutor
    # the record of the answer each part of the module came from (its last repair, else the
    # answer that wrote it), marked refused when a check after assembly sends the part back
    origins: dict[str, int] = field(default_factory=dict)

    def wrote(self, parts: list[str], receipt: list[int]) -> None:
        """The answer on record at ``receipt`` wrote ``parts``."""
        for part in parts:
            if receipt:
                self.origins[part] = receipt[0]

    def sent_back(self, part: str, problem: str) -> None:
        """A check after assembly refused ``part``: its answer's record says so."""
        if part in self.origins:
            self.asker.refuse_kept(self.origins[part], problem)


def to_json(value: Any) -> str:
    """JSON for a prompt: indented, so a model reads it as easily as a person."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def preview_state(state: dict[str, Any], records: int) -> tuple[dict[str, Any], list[str]]:
    """The state with at most ``records`` entries per collection, and which ones were cut."""
    shown: dict[str, Any] = {}
    cut = []
    for key, value in state.items():
        if isinstance(value, dict) and len(value) > records:
            shown[key] = dict(list(value.items())[:records])
            cut.append(f"{key} ({records} of {len(value)} records shown)")
        else:
            shown[key] = value
    return shown, cut


def preview_value(value: Any) -> Any:
    """A tool result or diff value trimmed for a prompt, still valid JSON: long lists keep their
    first items and say how many more there were, long strings are cut."""
    if isinstance(value, dict):
        return {key: preview_value(item) for key, item in value.items()}
    if isinstance(value, list):
        head = [preview_value(item) for item in value[:PREVIEW_ITEMS]]
        more = len(value) - PREVIEW_ITEMS
        return head + [f"... {more} more"] if more > 0 else head
    if isinstance(value, str) and len(value) > PREVIEW_TEXT:
        return value[:PREVIEW_TEXT] + "..."
    return value


def chunked(items: list[Any], size: int) -> list[list[Any]]:
    return [items[start : start + size] for start in range(0, len(items), size)]
