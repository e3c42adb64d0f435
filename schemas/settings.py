"""Settings (DESIGN §7): command-line flags > ENVMILL_* variables > ./envmill.toml > defaults.

Nested groups read from variables with a double underscore, e.g.
``ENVMILL_SANDBOX__WALL_SECONDS=2``, and from TOML tables, e.g. ``[sandbox] wall_seconds = 2``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from envmill.schemas.backends import (
    OWN_SCENARIOS,
    PROCEDURAL,
    TRAITS,
    BackendName,
    ScenarioSource,
    default_batch_sizes,
)
from envmill.schemas.benchmarks import BfclSettings
from envmill.schemas.dedupe import DedupeSettings
from envmill.schemas.llm import LlmSettings
from envmill.schemas.reward import RewardSettings
from envmill.schemas.rollout import RolloutSettings
from envmill.schemas.scengen import ScenGenSettings
from envmill.schemas.skeleton import SkeletonSettings
from envmill.schemas.topics import TopicSource

SETTINGS_FILE = "envmill.toml"
MAX_ENVS = 1_000_000  # a run's items are planned in memory: past this, split it into runs
MAX_SCENARIOS_PER_ENV = 10_000


class SettingsError(ValueError):
    """Settings that cannot be used; the message is one line naming the setting."""


class SandboxLimits(BaseModel):
    """Per-host limits of the sandbox; tests use tight ones so hostile programs stop quickly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_seconds: float = Field(
        default=10.0, gt=0, description="CPU time for one host (one episode)"
    )
    wall_seconds: float = Field(default=5.0, gt=0, description="wall time for one request")
    scenario_wall_seconds: float = Field(
        default=60.0, gt=0, description="wall time for certifying one scenario's reference run"
    )
    memory_mb: int = Field(default=512, ge=64)
    file_size_bytes: int = Field(default=1 << 20, ge=0)
    open_files: int = Field(default=64, ge=8)
    max_reply_bytes: int = Field(default=8 << 20, ge=1024)
    max_reply_values: int = Field(
        default=250_000,
        ge=100,
        description="JSON values one reply may decode into (objects, items)",
    )
    max_episode_bytes: int = Field(
        default=64 << 20, ge=1 << 16, description="reply bytes one episode may keep in all"
    )
    max_episode_values: int = Field(
        default=2_000_000, ge=1000, description="JSON values one episode may keep in all (memory)"
    )
    isolation: Literal["auto", "full", "basic"] = "auto"


class EnvmillSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="ENVMILL_", env_nested_delimiter="__", extra="forbid", toml_file=SETTINGS_FILE
    )

    home: Path | None = Field(default=None, description="data folder (--out); else ./envmill-data")
    backend: BackendName = PROCEDURAL
    scenarios_from: ScenarioSource = Field(
        default=OWN_SCENARIOS,
        description="llm: ScenGenerator writes the procedural backend's scenarios too",
    )
    seed: int = Field(
        default=0, ge=0, lt=2**63, description="seed of the whole run (a 64-bit column)"
    )
    envs: int = Field(default=24, gt=0, le=MAX_ENVS, description="environments to synthesize")
    scenarios_per_env: int = Field(default=12, gt=0, le=MAX_SCENARIOS_PER_ENV)
    domains: list[str] = Field(default_factory=list, description="empty: every domain")
    batch_size: int | None = Field(
        default=None, gt=0, description=f"environments per Dask task [{default_batch_sizes()}]"
    )
    workers: int = Field(default=2, gt=0, description="Dask worker processes of the local cluster")
    workers_per_core: int = Field(
        default=4, gt=0, description="the most local workers a run starts per CPU core"
    )
    dask_address: str | None = Field(default=None, description="an existing Dask scheduler")
    stall_seconds: float = Field(
        default=300.0,
        gt=0,
        allow_inf_nan=False,
        description="a run with no batch finished and no Dask worker alive this long ends",
    )
    dashboard: str = Field(
        default="127.0.0.1:0",
        pattern=r"^[^\s:]+:\d{1,5}$",
        description="HOST:PORT of the local cluster's dashboard (loopback, a free port, unless "
        "you ask for another)",
    )
    sandbox: SandboxLimits = Field(default_factory=SandboxLimits)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    skeleton: SkeletonSettings = Field(default_factory=SkeletonSettings)
    scengen: ScenGenSettings = Field(default_factory=ScenGenSettings)
    rollout: RolloutSettings = Field(default_factory=RolloutSettings)
    reward: RewardSettings = Field(default_factory=RewardSettings)
    dedupe: DedupeSettings = Field(default_factory=DedupeSettings)
    bfcl: BfclSettings = Field(default_factory=BfclSettings)
    topics: list[str] = Field(
        default_factory=list,
        description="llm backend: the topics to build (else the data folder's selected topics)",
    )
    topic_sources: dict[str, TopicSource] = Field(
        default_factory=dict,
        description="llm backend: per topic, what topic mining knew of it (shown to the planner)",
    )
    max_topic_chars: int = Field(default=2000, gt=0, description="the longest topic a run takes")
    max_topics: int = Field(default=1000, gt=0, description="the most topics a run takes")

    @model_validator(mode="after")
    def _workers_the_machine_holds(self) -> EnvmillSettings:
        """``--workers 100000`` would start spawning a hundred thousand processes."""
        cores = os.cpu_count() or 1
        if self.dask_address is None and self.workers > cores * self.workers_per_core:
            raise ValueError(
                f"{self.workers} workers is more than {self.workers_per_core} per core on this "
                f"{cores}-core machine ({cores * self.workers_per_core}); raise "
                "workers_per_core to allow it"
            )
        return self

    @model_validator(mode="after")
    def _batch_size_of_backend(self) -> EnvmillSettings:
        """The backend's own batch size: a topic per task for the llm backend (the unit of
        fan-out and of retry); a few environments per task for the procedural one, whose CPU
        work outweighs a task's cost."""
        if self.batch_size is None:
            self.batch_size = TRAITS[self.backend].batch_size
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, TomlConfigSettingsSource(settings_cls)


def load_settings(**flags: Any) -> EnvmillSettings:
    """Settings with ``flags`` (None = not given) on top; a bad value is one SettingsError line."""
    given = {key: value for key, value in flags.items() if value is not None}
    try:
        return EnvmillSettings(**given)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")  # a check of several fields
        raise SettingsError(f"setting '{where}': {message}" if where else message) from None
    except ValueError as exc:  # a malformed envmill.toml
        raise SettingsError(f"{SETTINGS_FILE}: {exc}") from None
