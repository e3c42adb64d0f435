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


class Turn(BaseModel):
    """A later user message of a multi-turn scenario (DESIGN §3.4), sent after the agent's reply
    to the message before; its reference steps begin at ``first_step`` of the flat solution (a
    turn may have none: the reference then says what it still needs)."""

    content: str = Field(min_length=1)
    first_step: int = Field(ge=0)
    offers: list[str] = Field(
        default_factory=list,
        description="withheld tools offered from this message on (BFCL's missed functions)",
    )


Split = Literal["train", "eval"]


class ScenarioContent(BaseModel):
    """What a scenario says; shared by the generated spec and the stored record.

    A multi-turn scenario's first user message is ``task`` and its ``turns`` follow (a turn may
    offer some of the ``withheld_tools`` from then on: a function the user adds); its checks
    judge the final state. ``expected_results[i]`` holds the tool results (whole result objects)
    the agent must have obtained by the end of user message i, judged by envmill as one more
    check (``tasks.judge.results``)."""

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
    turns: list[Turn] = Field(
        default_factory=list, description="the later user messages, in order (multi-turn)"
    )
    withheld_tools: list[str] = Field(
        default_factory=list, description="tools of the environment not offered in it"
    )
    expected_results: list[list[dict[str, Any]]] | None = Field(
        default=None,
        description="per user message, the tool results the agent must obtain by its end",
    )
    source: str = Field(default="envmill", description="where it came from, e.g. 'bfcl'")
    split: Split = "train"
    source_id: str | None = Field(
        default=None, description="its id in its source, e.g. BFCL's 'multi_turn_base_0'"
    )

    @model_validator(mode="after")
    def _one_reply_record(self) -> ScenarioContent:
        if self.expected_answer is not None and self.refusal is not None:
            raise ValueError("refusal: a scenario expects an answer or a refusal, not both")
        return self

    @model_validator(mode="after")
    def _turns_fit(self) -> ScenarioContent:
        starts = [turn.first_step for turn in self.turns]
        if starts != sorted(starts) or any(s > len(self.reference_solution) for s in starts):
            raise ValueError(
                "turns: each turn's first_step must be at most the number of reference steps "
                "and no smaller than the turn's before it"
            )
        messages = 1 + len(self.turns)
        if self.expected_results is not None and len(self.expected_results) != messages:
            raise ValueError(
                f"expected_results: one list per user message ({messages}), "
                f"not {len(self.expected_results)}"
            )
        offered = {tool for turn in self.turns for tool in turn.offers}
        if not offered <= set(self.withheld_tools):
            extra = sorted(offered - set(self.withheld_tools))[0]
            raise ValueError(f"turns: {extra!r} is offered by a turn but not withheld before it")
        for index, step in enumerate(self.reference_solution):
            if step.tool in self.withheld_at(self.turn_of(index)):
                raise ValueError(
                    f"withheld_tools: the reference solution calls {step.tool!r} "
                    "before a turn offers it"
                )
        return self

    def withheld_at(self, message: int) -> frozenset[str]:
        """The tools not offered while user message ``message`` (0 = the task) is answered."""
        offered = {tool for turn in self.turns[:message] for tool in turn.offers}
        return frozenset(self.withheld_tools) - offered

    @property
    def never_offered(self) -> frozenset[str]:
        """The withheld tools no turn offers: an export's tool list leaves out only these."""
        return self.withheld_at(len(self.turns))

    @property
    def user_messages(self) -> list[str]:
        """Every user message the scenario sends, the task first."""
        return [self.task, *(turn.content for turn in self.turns)]

    def turn_of(self, step: int) -> int:
        """The user message (0 = the task) whose reference steps include step ``step``; a step
        past the solution belongs to the last."""
        return sum(turn.first_step <= step for turn in self.turns)

    def turn_bounds(self) -> list[tuple[int, int]]:
        """Each user message's reference steps as ``(start, end)`` of the flat solution."""
        starts = [0, *(turn.first_step for turn in self.turns)]
        ends = [*starts[1:], len(self.reference_solution)]
        return list(zip(starts, ends, strict=True))


class ScenarioSpec(ScenarioContent):
    """A scenario as generated, before certification; its id is a hash of its content."""

    @property
    def scenario_id(self) -> str:
        """The §3.3 id; a reference answer, an expected answer, a refusal, turns, withheld tools
        or expected results join the hashed object only when there are some, so scenarios
        without them keep their ids. ``kind``, ``source`` and ``split`` are labels, never part
        of the id."""
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
        if self.turns:
            content["turns"] = [turn.model_dump(exclude_defaults=True) for turn in self.turns]
        if self.withheld_tools:
            content["withheld_tools"] = list(self.withheld_tools)
        if self.expected_results is not None:
            content["expected_results"] = self.expected_results
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
    reply follows the checks, then the verdict on the results it obtained where the scenario
    expects some. ``turn_states[i]``: the state when the scenario's turn i was sent (only for a
    multi-turn scenario; the reference's reply to each turn says what that turn changed).
    """

    scenario_id: str
    gates: list[GateResult]
    final_state: dict[str, Any] | None = None
    step_results: list[dict[str, Any]] = Field(default_factory=list)
    check_results: list[bool] = Field(default_factory=list)
    turn_states: list[dict[str, Any]] = Field(default_factory=list)

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
