"""The LLM stages envmill knows, named once: what every other list of stages is made from.

A stage is a kind of call, with its own model settings (``llm.stages.<name>``) and its own
``llm_calls`` rows; a stage with a prompt renders ``prompts/<name>.md``. The LLM backend takes
its stages from here, the offline model checks its responders against :data:`CHAT_STAGES`, and
``envmill llm check`` tries every stage of :data:`STAGES` (those with an example input) before
a run spends anything on it. The client (``tasks/llm``) names no stage: callers hand it theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from envmill.schemas.reward import JUDGE_STAGE
from envmill.schemas.rollout import POLICY_STAGE, USER_STAGE
from envmill.schemas.topics import TopicVerdict
from envmill.tasks.backends.llm.skelbuilder.examples import STAGE_EXAMPLES
from envmill.tasks.backends.llm.topics.select import EMBEDDING_STAGE

TOPIC_STAGE = "topics"  # one verdict per mined candidate
SKELETON_STAGES = (  # SkelBuilder: a topic into an environment
    "skeleton_plan",
    "skeleton_state",
    "skeleton_operations",
    "skeleton_method",
    "skeleton_repair",
    "skeleton_rules",
    "skeleton_initial_state",
    "skeleton_probe",
    "skeleton_probe_state",
    "skeleton_judge",
)
SCENARIO_STAGES = ("scenario_state", "scenario_task", "scenario_checks", "scenario_repair")
ROLLOUT_STAGES = (USER_STAGE, POLICY_STAGE)  # the policy's prompt is the environment's own
REWARD_STAGES = (JUDGE_STAGE,)  # the optional LLM judge of replies ([reward] judge = "llm")
CHAT_STAGES = (
    TOPIC_STAGE,
    *SKELETON_STAGES,
    *SCENARIO_STAGES,
    *ROLLOUT_STAGES,
    *REWARD_STAGES,
)
PROMPTED_STAGES = tuple(name for name in CHAT_STAGES if name != POLICY_STAGE)
EMBEDDING_STAGES = (EMBEDDING_STAGE,)
ALL_STAGES = (*CHAT_STAGES, *EMBEDDING_STAGES)


@dataclass(frozen=True)
class StageProbe:
    """One stage: the prompt it renders, what its reply must validate as, and example variables."""

    prompt: str
    schema: type[BaseModel] | None
    example: dict[str, Any]


TOPIC_EXAMPLE = {
    "corpus": "API-Bank",
    "task": "Can you help me reschedule my dentist appointment to next Friday at 3pm?",
    "tools": ["QueryAppointment", "ModifyAppointment"],
}
# The stages ``envmill llm check`` tries, in the order a run meets them.
STAGES: dict[str, StageProbe] = {
    TOPIC_STAGE: StageProbe(TOPIC_STAGE, TopicVerdict, TOPIC_EXAMPLE),
    **{name: StageProbe(name, *STAGE_EXAMPLES[name]) for name in SKELETON_STAGES},
}
