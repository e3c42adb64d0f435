"""Records and settings of rollouts: episodes of a policy model (and a simulated user) against
certified scenarios, the filters that judge them, and what an export hands to a trainer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envmill.schemas.scenario import ScenarioSpec

STOP_MARKER = "###STOP###"  # the simulated user ends the conversation with it (as in tau-bench)
OPENING_CUE = (
    "Start the conversation."  # the simulated user's first turn has nothing else to answer
)
POLICY_STAGE, USER_STAGE = "policy", "rollout_user"  # LLM stages (llm.stages.<name>)
FILTERS = ("reward", "length", "format", "user_sanity")


class FilterSettings(BaseModel):
    """Thresholds of the trajectory filters; every verdict is a row with its reason."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_reward: float = Field(
        default=1.0, ge=0.0, le=1.0, description="keep a reward at least this"
    )
    require_success: bool = Field(
        default=True, description="keep only episodes where every check held"
    )
    min_steps: int = Field(default=1, ge=0, description="tool calls an episode must make at least")
    max_steps: int = Field(default=60, ge=1, description="tool calls an episode may make at most")
    max_messages: int = Field(
        default=200, ge=2, description="messages a conversation may have at most"
    )
    paste_share: float = Field(
        default=0.8,
        gt=0.0,
        le=1.0,
        description="a user message repeating this share of the task's words in a row pastes it",
    )


class RolloutSettings(BaseModel):
    """How episodes run (``[rollout]`` in envmill.toml, ``ENVMILL_ROLLOUT__*``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    samples: int = Field(
        default=1, ge=1, le=1024, description="episodes per scenario (sample index)"
    )
    max_steps: int = Field(
        default=30, ge=1, le=1000, description="agent turns (policy calls) per episode"
    )
    max_calls_per_turn: int = Field(
        default=8,
        ge=1,
        le=128,
        description="tool calls run from one assistant message; more get errors",
    )
    max_bad_turns: int = Field(
        default=3, ge=1, description="agent turns in a row with no usable action before model_error"
    )
    episodes_per_batch: int = Field(
        default=16, ge=1, le=10_000, description="episodes per worker task"
    )
    episode_threads: int = Field(
        default=16,
        ge=1,
        le=256,
        description="episodes one worker runs at once (they wait on the model)",
    )
    scenarios: str = Field(
        default="",
        description="SQL condition on certified scenarios (and their domain), e.g. mode = '…'",
    )
    ungrounded: bool = Field(
        default=False,
        description="also scenarios rejected by `grounded` alone: every gate of their reward "
        "passed, only their reference passed a value the conversation never showed (a "
        "benchmark's ground truth often does); for evaluation, never for training data",
    )
    filters: FilterSettings = Field(default_factory=FilterSettings)


class EpisodeSpec(BaseModel):
    """One episode to run: a certified scenario, the environment that serves it, a sample index.

    ``key`` hashes what makes the episode (scenario, policy and user models, sample, the
    episode-shaping settings): a rerun finds the episodes it finished by it.
    """

    key: str
    sample: int = Field(default=0, ge=0)
    scenario: ScenarioSpec
    scenario_id: str
    class_name: str
    source: str
    tools: list[dict[str, Any]]
    introduction: str = ""
    business_rules: list[str] = Field(default_factory=list)
    state_changing_tools: list[str] = Field(default_factory=list)
    domain: str = ""
    backend: str = ""


class EpisodeBatch(BaseModel):
    """Episodes run together by one worker task; ``key`` names its warehouse parts."""

    key: str
    episodes: list[EpisodeSpec]


class VerdictRecord(BaseModel):
    """One filter's verdict on one trajectory: kept or dropped, and why (a ``verdicts`` row)."""

    trajectory_id: str = Field(pattern=r"^[0-9a-f]{16}$")
    filter: str
    kept: bool
    reason: str
    details: dict[str, Any] = Field(default_factory=dict)
