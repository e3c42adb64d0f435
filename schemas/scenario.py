"""Records for scenarios and their certification (DESIGN §3.3)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, ValidationError, model_validator

from envmill.schemas.answers import ExpectedAnswer, Refusal
from envmill.schemas.ids import content_id

Mode = Literal["non_conversational", "conversational"]
GateName = Literal[
    "loads",
    "solution_runs",
    "checks_pass",
    "not_trivial",
    "partial_fails",
    "guards_collateral",
    "accepts_reorder",
    "judges_text",
    "grounded",
    "deterministic",
]
GATES: tuple[GateName, ...] = get_args(GateName)  # in the order they are judged


class SolutionStep(BaseModel):
    """One tool call of a reference solution."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class CheckSpec(BaseModel):
    """A rule-based check: ``code`` defines ``check(initial_state, final_state) -> bool``. It
    judges states only; what the agent says is judged by envmill (``expected_answer``,
    ``refusal``)."""

    description: str
    code: str


class ScenarioContent(BaseModel):
    """What a scenario says; shared by the generated spec and the stored record."""

    env_id: str
    backend: str = Field(
        default="manual", description="what made it; 'manual' for hand-written files"
    )
    mode: Mode = "non_conversational"
    task: str
    user_facts: dict[str, Any] = Field(default_factory=dict)
    initial_state: dict[str, Any]
    reference_solution: list[SolutionStep]
    checks: list[CheckSpec]
    reference_answer: str | None = Field(
        default=None, description="what the reference says at the end"
    )
    expected_answer: ExpectedAnswer | None = Field(
        default=None, description="the value the reply must state (answer and conditional)"
    )
    refusal: Refusal | None = Field(
        default=None, description="the rule the reply must decline by (refusal)"
    )
    kind: str | None = Field(
        default=None, description="the generator's scenario kind, e.g. 'refusal'"
    )

    @model_validator(mode="after")
    def _one_reply_record(self) -> ScenarioContent:
        if self.expected_answer is not None and self.refusal is not None:
            raise ValueError("refusal: a scenario expects an answer or a refusal, not both")
        return self


class ScenarioSpec(ScenarioContent):
    """A scenario as generated, before certification; its id is a hash of its content."""

    @property
    def scenario_id(self) -> str:
        """The §3.3 id; a reference answer, an expected answer or a refusal joins the hashed
        object only when there is one, so scenarios without them keep their ids. ``kind`` is a
        label, never part of the id."""
        content = {
            "env_id": self.env_id,
            "initial_state": self.initial_state,
            "task": self.task,
            "reference_solution": [s.model_dump() for s in self.reference_solution],
            "checks": [c.model_dump() for c in self.checks],
        }
        if self.reference_answer is not None:
            content["reference_answer"] = self.reference_answer
        if self.expected_answer is not None:
            content["expected_answer"] = self.expected_answer.model_dump()
        if self.refusal is not None:
            content["refusal"] = self.refusal.model_dump()
        return content_id(content)

    @property
    def answer(self) -> str:
        """The reference's final words as checks see them ("" when it says nothing)."""
        return self.reference_answer or ""


class GateResult(BaseModel):
    """The verdict of one certification gate, with the reason a reader needs."""

    gate: GateName
    passed: bool
    reason: str = ""


class CertificationReport(BaseModel):
    """All gate verdicts of one scenario; ``status`` follows from them.

    ``step_results[i]`` is the result object reference step i returned, as an agent sees it
    (a failed host reads ``{"success": False, "error": ...}``): plain JSON, because a reference
    trajectory's tool message carries it verbatim. ``check_results[i]``: check i held on the
    final state; where the scenario expects a reply, the judge's verdict on the reference's
    reply follows the checks.
    """

    scenario_id: str
    gates: list[GateResult]
    final_state: dict[str, Any] | None = None
    step_results: list[dict[str, Any]] = Field(default_factory=list)
    check_results: list[bool] = Field(default_factory=list)

    @property
    def status(self) -> Literal["certified", "rejected"]:
        return "certified" if self.gates and all(g.passed for g in self.gates) else "rejected"

    @property
    def rejected_gate(self) -> GateName | None:
        return next((g.gate for g in self.gates if not g.passed), None)


class ScenarioRecord(ScenarioContent):
    """A scenario with its certification, as the warehouse stores it."""

    scenario_id: str
    status: Literal["certified", "rejected"]
    rejected_gate: GateName | None = None
    gates: list[GateResult]
    repairs: int = Field(
        default=0, ge=0, description="times the checks were rewritten after a refusal"
    )


def first_problem(exc: ValidationError) -> str:
    """A record that does not parse, in one line: the first field at fault and why
    (``expected_answer.value: …``), not pydantic's "1 validation error for …" header."""
    error = exc.errors()[0]
    where = [str(part) for part in error["loc"]]
    message = error["msg"].removeprefix("Value error, ")
    named, _, _ = message.partition(":")
    if named != message and " " not in named:  # a validator that names its field itself
        if where and named.split(".")[0] == where[-1]:
            where = where[:-1]
        return ".".join([*where, message])
    return f"{'.'.join(where) or '(the record)'}: {message}"
