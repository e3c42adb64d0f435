"""SkelBuilder's records (EnvScaler's logic modelling and quality evaluation): what each LLM stage
answers, the settings that bound the stages, one row per probe call, and the draft a topic ends as.

The answer models are what the client validates a reply against (``schema=``); they say only what
a reply must hold to be usable. Whether the code in it is any good is for the checks that follow
(assembly, admission, probes), which hand their findings back to the model for a bounded repair.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envmill.schemas.environment import EnvWarning, ToolKind
from envmill.schemas.llm import LlmCallRecord

IDENTIFIER = r"^[a-z][a-z0-9_]*$"
ProbeKind = Literal["positive", "negative"]
Verdict = Literal["pass", "warning", "fail"]


class SkeletonSettings(BaseModel):
    """How far the LLM backend goes for one topic before it gives up, and what it accepts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repair_rounds: int = Field(default=2, ge=0, description="rounds that show the model its errors")
    min_tools: int = Field(default=8, ge=1, description="operations an environment must have")
    pass_threshold: float = Field(
        default=0.85,
        ge=0,
        le=1,
        description="(pass + warning) / probes needed to keep an environment",
    )
    probe_rounds: int = Field(
        default=2, ge=1, description="testing-agent rounds to cover every tool"
    )
    tools_per_probe_call: int = Field(
        default=10, ge=1, description="tools one testing-agent call covers"
    )
    probes_per_judge_call: int = Field(default=20, ge=1, description="probes one judge call judges")
    methods_per_call: int = Field(
        default=6,
        ge=1,
        description="operations one skeleton_method call writes (an entity's together)",
    )
    method_threads: int = Field(
        default=24, ge=1, description="calls of one topic in flight at once"
    )
    item_threads: int = Field(
        default=16, ge=1, description="topics one worker process builds at once"
    )
    attempt: int = Field(
        default=0,
        ge=0,
        description="which retry of a topic this is: its repairs and judgements ask for new "
        "samples, so a retry does not replay a cached answer that failed",
    )
    preview_records: int = Field(
        default=5, ge=1, description="records per collection shown to the model from a state"
    )
    untested_success_share: float = Field(
        default=0.25,
        ge=0,
        le=1,
        description="share of the state-changing tools that may end with no successful probe "
        "before the gate refuses the environment (each is a finding either way)",
    )
    warnings_fail: bool = Field(
        default=False, description="count the judge's warnings as failures in the pass rate"
    )


class AttributeSpec(BaseModel):
    """One attribute of an entity in the state plan."""

    name: str = Field(pattern=IDENTIFIER)
    type: str = Field(
        description="str, int, float, bool, date, datetime, enum: a | b | c, or list[<type>]"
    )
    description: str


class EntityPlan(BaseModel):
    """One kind of record the environment keeps, e.g. a loan."""

    name: str = Field(pattern=IDENTIFIER, description="singular, e.g. 'loan'")
    description: str
    attributes: list[AttributeSpec] = Field(min_length=1)


MAX_RULES = 30  # a plan's business rules (the prompt asks for 8 to 15): each is in every
MAX_RULE_CHARS = 500  # trajectory's system message, so a runaway list is a runaway corpus


class StatePlan(BaseModel):
    """Stage ``skeleton_plan``: the environment's entities and business rules."""

    environment: str = Field(description="a short name, e.g. 'Public library lending'")
    category: str = Field(description="one or two words naming the domain, e.g. 'library'")
    class_name: str = Field(pattern=r"^[A-Z][A-Za-z0-9]*$")
    introduction: str = Field(description="three sentences: what it keeps, who uses it, rules")
    entities: list[EntityPlan] = Field(min_length=1)
    business_rules: list[str] = Field(min_length=1)


class CodeReply(BaseModel):
    """Stages ``skeleton_state``, ``skeleton_method`` and ``skeleton_repair``: Python source."""

    code: str = Field(min_length=1)


class ParameterSpec(BaseModel):
    """One parameter of an operation."""

    name: str = Field(pattern=IDENTIFIER)
    type: str = Field(description="str, int, float or bool (optional ones may be None)")
    description: str
    required: bool = True


class OperationSpec(BaseModel):
    """One tool the environment will offer."""

    name: str = Field(pattern=IDENTIFIER)
    kind: Literal["query", "state_change"]
    entity: str = Field(default="", description="the entity it mainly reads or changes")
    summary: str = Field(description="one sentence: what the tool does")
    parameters: list[ParameterSpec] = Field(default_factory=list)
    constraints: list[str] = Field(
        default_factory=list, description="the business rules this operation enforces"
    )


class OperationList(BaseModel):
    """Stage ``skeleton_operations``: the tools, queries and state changes."""

    operations: list[OperationSpec] = Field(min_length=1)


class Contradiction(BaseModel):
    """Two business rules that cannot both hold, or a rule a tool's documented behaviour breaks."""

    between: str = Field(description="what contradicts what, e.g. 'rule 3 and rule 7'")
    explanation: str


class RulesReview(BaseModel):
    """Stage ``skeleton_rules``: the contradictions found, and the rules as they should read
    (the rules shown stand when there is no contradiction)."""

    contradictions: list[Contradiction] = Field(default_factory=list)
    rules: list[str] = Field(default_factory=list, description="rewritten so none contradicts")


class InitialStateReply(BaseModel):
    """Stage ``skeleton_initial_state``: a state that instantiates the class."""

    state: dict[str, Any]


class ProposedCall(BaseModel):
    """One call the testing agent wants run, and what it expects."""

    tool: str
    kind: ProbeKind
    arguments: dict[str, Any] = Field(default_factory=dict)
    expectation: str = Field(default="", description="what the call should do, in one sentence")
    at_time: str | None = Field(
        default=None,
        description="an ISO time the state's clock is moved forward to before the call",
    )


class ProbeCalls(BaseModel):
    """Stage ``skeleton_probe``: the testing agent's calls, run in order as one chain."""

    calls: list[ProposedCall]


class ProbeStateReply(BaseModel):
    """Stage ``skeleton_probe_state``: the attributes that make a state in which the tools that
    never succeeded can, and the calls that show it (run in order on that state)."""

    state: dict[str, Any] = Field(
        description="attributes to change: a collection's records are added or replaced by key, "
        "any other attribute is replaced; the rest stays as the initial state has it"
    )
    calls: list[ProposedCall] = Field(default_factory=list)


class ProbeJudgement(BaseModel):
    """The judge's verdict on one probe."""

    probe: int = Field(description="the probe's number as shown")
    verdict: Verdict
    reason: str


class ProbeJudgements(BaseModel):
    """Stage ``skeleton_judge``: one verdict per probe shown."""

    verdicts: list[ProbeJudgement]


class ProbeRecord(BaseModel):
    """One probe call of the environment check, with the judge's verdict: a row of
    ``env_probes``. A probe runs on the state the earlier successful probes of its testing-agent
    call left (the first on the checked initial state, or on the probe state); its diff is
    measured against that state."""

    run_id: str = ""
    env_id: str = Field(pattern=r"^[0-9a-f]{16}$")
    topic: str
    item: str = ""
    probe_index: int = Field(ge=0)
    round: int = Field(ge=0, description="testing-agent round that proposed it")
    tool: str
    tool_kind: ToolKind
    kind: ProbeKind
    expectation: str = ""
    arguments: dict[str, Any]
    result: dict[str, Any]
    state_diff: list[dict[str, Any]] = Field(default_factory=list)
    verdict: Verdict
    reason: str


class EnvCheckReport(BaseModel):
    """The environment check's outcome: counts, the pass rate and the gate."""

    probes: int = 0
    passed: int = 0
    warnings: int = 0
    failed: int = 0
    pass_rate: float = 0.0
    threshold: float
    untested: list[str] = Field(default_factory=list, description="tools no probe reached")
    never_succeeded: list[str] = Field(
        default_factory=list, description="state-changing tools no positive probe succeeded with"
    )
    accepted: bool = False
    code: Literal[
        "", "no_probes", "pass_rate_below_threshold", "untested_tools", "untested_success"
    ] = ""
    reason: str = ""


class SkeletonDraft(BaseModel):
    """What a topic ends as when it passes: the module and all that the next stages need.

    It meets the pipeline's ``EnvironmentDraft`` (source, topic, introduction, business_rules,
    domain); the plan, operations and checked initial state are for scenario generation.
    """

    source: str
    class_name: str
    topic: str
    introduction: str
    business_rules: list[str]
    domain: str = Field(description="the plan's category")
    plan: StatePlan
    operations: list[OperationSpec]
    initial_state: dict[str, Any]
    check: EnvCheckReport
    warnings: list[EnvWarning] = Field(
        default_factory=list, description="the judge's warnings and the check's findings"
    )
    llm_calls: int = Field(default=0, description="LLM calls this topic made, repairs included")
    repairs: int = Field(default=0, description="parts rewritten after a failed check")
    admitted: Any = Field(
        default=None,
        exclude=True,
        repr=False,
        description="the AdmittedEnvironment of ``source`` (not stored): a caller may use it "
        "instead of admitting the same source again",
    )
    call_records: list[LlmCallRecord] = Field(
        default_factory=list,
        exclude=True,
        repr=False,
        description="the records of the LLM calls made for it (rows of llm_calls, not stored here)",
    )
    probes: list[ProbeRecord] = Field(
        default_factory=list,
        exclude=True,
        repr=False,
        description="the probes that checked it (rows of env_probes, not stored here)",
    )
