"""The LLM stages envmill knows: each one's prompt, the schema its reply must meet, and an example
input, so a configuration can be tried on every stage before a run spends anything on it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from envmill.schemas.topics import TopicVerdict
from envmill.tasks.backends.llm.skelbuilder.examples import STAGE_EXAMPLES


@dataclass(frozen=True)
class StageProbe:
    """One stage: the prompt it renders, what its reply must validate as, and example variables."""

    prompt: str
    schema: type[BaseModel] | None
    example: dict[str, Any]


STAGES: dict[str, StageProbe] = {
    "topics": StageProbe(
        prompt="topics",
        schema=TopicVerdict,
        example={
            "corpus": "API-Bank",
            "task": "Can you help me reschedule my dentist appointment to next Friday at 3pm?",
            "tools": ["QueryAppointment", "ModifyAppointment"],
        },
    ),
}
STAGES.update(
    {
        name: StageProbe(prompt=name, schema=schema, example=example)
        for name, (schema, example) in STAGE_EXAMPLES.items()
    }
)
