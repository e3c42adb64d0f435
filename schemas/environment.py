"""Records for an environment module and its tools (DESIGN §3.1)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ToolKind = Literal["query", "state_change"]


class FunctionSpec(BaseModel):
    """The ``function`` part of a Chat Completions tool schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class ToolSchema(BaseModel):
    """One tool in Chat Completions form: ``{"type": "function", "function": {...}}``."""

    type: Literal["function"] = "function"
    function: FunctionSpec


class PolicyViolation(BaseModel):
    """One reason the static policy refuses a program, with the line it names."""

    model_config = ConfigDict(frozen=True)

    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message} [{self.rule}]"


class EnvWarning(BaseModel):
    """Something the environment check found questionable without refusing the environment: a
    judge's warning on a probe, or a state-changing tool no probe saw succeed."""

    kind: Literal["judge_warning", "never_succeeded"]
    tool: str
    probes: list[int] = Field(default_factory=list, description="the probes it rests on")
    message: str


class EnvironmentRecord(BaseModel):
    """An environment module with everything derived from it, as the warehouse stores it."""

    env_id: str = Field(pattern=r"^[0-9a-f]{16}$")
    class_name: str
    source: str
    tools: list[ToolSchema]
    tool_kinds: dict[str, ToolKind] = Field(default_factory=dict)
    state_schema: dict[str, Any]
    topic: str = ""
    introduction: str = ""
    business_rules: list[str] = Field(default_factory=list)
    backend: str
    domain: str = Field(
        default="", description="the procedural domain, or the LLM topic's category"
    )
    seed: int | None = None
    checked: dict[str, Any] = Field(
        default_factory=dict, description="how it was checked: policy, sandbox load, probes"
    )
    warnings: list[EnvWarning] = Field(
        default_factory=list, description="what its check found questionable (LLM backend)"
    )
    origin: str = Field(
        default="envmill",
        description="where it came from, e.g. 'bfcl' (``source`` is the module's own code)",
    )
