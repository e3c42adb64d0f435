"""One episode as a conversation an agent drives one assistant message at a time.

The environment lives in one sandbox host for the whole episode; the agent's tool calls run
there in the order written (parallel calls included), and whatever the agent gets wrong — an
unknown tool, arguments that are not a JSON object, more calls than a turn may make — comes
back as an error observation in the tool's own result shape. The episode ends with a recorded
reason (DESIGN §3.4):

- ``finished``: the agent answered the last user message in text (non-conversational mode; a
  multi-turn scenario's next message is sent after its text reply to the one before);
- ``user_stop``: the simulated user ended the conversation (conversational mode);
- ``max_steps``: the agent used its turns (``RolloutSettings.max_steps``) — truncated;
- ``tool_error``: the environment could not answer (its host timed out, died or overflowed);
- ``model_error``: the policy or user model failed for good, or the agent made
  ``max_bad_turns`` turns in a row with nothing usable in them.

Whatever the reason, the reward comes from the scenario's checks on the state reached.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from envmill.schemas.ids import canonical_json, content_id
from envmill.schemas.rollout import EpisodeSpec, RolloutSettings
from envmill.schemas.trajectory import TrajectoryRecord
from envmill.tasks.certify.scoring import final_answer, score_final_state
from envmill.tasks.core.opening import opening_message
from envmill.tasks.core.system_message import system_prompt
from envmill.tasks.judge import ReplyJudge, judge_reply
from envmill.tasks.llm import LlmError, LlmGateError, LlmUnreachableError
from envmill.tasks.llm.reply import ToolCall
from envmill.tasks.rollout.actions import Action, ActionError, read_action, valid_text
from envmill.tasks.rollout.agent import Policy
from envmill.tasks.rollout.user import SimulatedUser, split_stop
from envmill.tasks.sandbox import Sandbox, SandboxEpisode

# what a model's own answer can fail by: nothing usable in it (after the layer's retries and
# repair turns), or a request it refuses (400: a conversation past its context, say)
MODEL_FAILURES = frozenset(
    {"EmptyReply", "UnusableReply", "ReplyError", "BadRequestError", "UnprocessableEntityError"}
)


@dataclass
class StepResult:
    """What one action led to: the messages it added, and whether the episode is over."""

    messages: list[dict[str, Any]]
    terminated: bool = False
    truncated: bool = False


@dataclass
class _Ledger:
    """Counts and seconds of the episode, for the trajectory's usage and timings."""

    counts: Counter[str] = field(default_factory=Counter)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    began: float = field(default_factory=time.perf_counter)


class Episode:
    """A certified scenario opened for an agent; ``step`` takes its assistant messages.

    Args:
        spec: the scenario, its environment and the sample index.
        sandbox: where the environment runs.
        settings: turns, calls per turn, bad turns allowed.
        policy: the name stored in the trajectory's ``policy`` column.
        user: the simulated user; required for a conversational scenario.
        judge: who judges the final reply (envmill's rules unless the run asked for the LLM).
    """

    def __init__(
        self,
        spec: EpisodeSpec,
        sandbox: Sandbox,
        settings: RolloutSettings,
        *,
        policy: str,
        user: SimulatedUser | None = None,
        judge: ReplyJudge = judge_reply,
    ) -> None:
        if spec.scenario.mode == "conversational" and user is None:
            raise ValueError(f"scenario {spec.scenario_id} is conversational: it needs a user")
        self.spec, self.sandbox, self.settings = spec, sandbox, settings
        self.policy, self.user, self.judge = policy, user, judge
        self.messages: list[dict[str, Any]] = []
        self.sent = 1  # user messages of the scenario sent so far (the task is the first)
        self._offer()
        self.obtained: list[list[dict[str, Any]]] = [[]]  # results, per user message sent
        self.not_run: list[
            str
        ] = []  # ids of calls the environment never ran (refused, past limits)
        self.termination: str | None = None
        self.reason = ""
        self.turns = self._bad_turns = 0
        self.ledger = _Ledger()
        self._env: SandboxEpisode | None = None
        self._call_ids: set[str] = set()

    @property
    def done(self) -> bool:
        return self.termination is not None

    @property
    def conversational(self) -> bool:
        return self.spec.scenario.mode == "conversational"

    def start(self) -> list[dict[str, Any]]:
        """Load the environment and open the conversation: the system message, then the task
        (or the simulated user's opening). Returns the messages so far."""
        scenario = self.spec.scenario
        system = system_prompt(
            self.spec.introduction, self.spec.business_rules, scenario.initial_state
        )
        self.messages = [{"role": "system", "content": system}]
        self._env = self.sandbox.episode(
            self.spec.source, self.spec.class_name, scenario.initial_state
        )
        if not self._env.loaded:
            self.end("tool_error", f"the environment did not load: {self._env.load_outcome.error}")
            return list(self.messages)
        if self.conversational:
            self._hear_user()
        else:
            self.messages.append({"role": "user", "content": opening_message(scenario)})
        return list(self.messages)

    def step(self, action: Any) -> StepResult:
        """Apply one assistant message; an action that is no message at all ends the episode."""
        if self.done:
            raise RuntimeError("the episode is over; start another")
        before = len(self.messages)
        self.turns += 1
        try:
            taken = read_action(action, self.turns, self._call_ids)
        except ActionError as exc:
            self.end("model_error", f"turn {self.turns}: {exc}")
            return self._result(before)
        if taken.is_empty:
            self.end("model_error", f"turn {self.turns}: an empty assistant message")
            return self._result(before)
        self.messages.append(taken.message())
        self._call_ids.update(call.id for call in taken.calls)
        if taken.calls:
            self._run_calls(taken)
        elif self.conversational:
            self._hear_user()
        elif self.sent <= len(self.spec.scenario.turns):
            self._send_turn(self.spec.scenario.turns[self.sent - 1].content)
        else:
            self.end("finished", "the agent answered in text")
        if not self.done and self.turns >= self.settings.max_steps:
            self.end("max_steps", f"{self.turns} turns without an end")
        return self._result(before)

    def end(self, termination: str, reason: str) -> None:
        """Stop here (a policy model that failed for good ends it from outside)."""
        if not self.done:
            self.termination, self.reason = termination, reason

    def _result(self, before: int) -> StepResult:
        truncated = self.termination == "max_steps"
        return StepResult(self.messages[before:], self.done and not truncated, truncated)

    def _send_turn(self, content: str) -> None:
        """The scenario's next user message, after the agent's reply to the one before (and
        the tools it offers from then on)."""
        self.messages.append({"role": "user", "content": content})
        self.sent += 1
        self.obtained.append([])
        self._offer()

    def _offer(self) -> None:
        """The tools offered while the latest user message is answered: the environment's,
        without those the scenario withholds until then."""
        self.withheld = self.spec.scenario.withheld_at(self.sent - 1)
        tools = self.spec.tools
        self.offered_tools = [t for t in tools if t["function"]["name"] not in self.withheld]
        self.tools = {tool["function"]["name"] for tool in self.offered_tools}

    def _run_calls(self, action: Action) -> None:
        usable = 0
        for index, call in enumerate(action.calls):
            result, ran = self._outcome_of(call, index)
            usable += ran
            if ran:
                self.obtained[-1].append(result)
            else:
                self.not_run.append(call.id)
            self.messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": canonical_json(result)}
            )
            if self.done:  # the environment failed: the remaining calls are not run
                for later in action.calls[index + 1 :]:
                    self.not_run.append(later.id)
                    skipped = {"success": False, "error": "not run: the environment failed"}
                    content = canonical_json(skipped)
                    self.messages.append(
                        {"role": "tool", "tool_call_id": later.id, "content": content}
                    )
                return
        self._bad_turns = 0 if usable else self._bad_turns + 1
        if self._bad_turns >= self.settings.max_bad_turns:
            self.end("model_error", f"{self._bad_turns} turns in a row without a usable tool call")

    def _outcome_of(self, call: ToolCall, index: int) -> tuple[dict[str, Any], bool]:
        """The result the agent sees for one call, and whether the call reached the tool."""
        self.ledger.counts["tool_calls"] += 1
        limit = self.settings.max_calls_per_turn
        if index >= limit:
            return _error(f"not run: at most {limit} tool calls run from one message"), False
        if call.name in self.withheld:
            self.ledger.counts["invalid_calls"] += 1
            return _error(
                f"{call.name} is not available here; the tools are {sorted(self.tools)}"
            ), False
        if call.name not in self.tools:
            self.ledger.counts["invalid_calls"] += 1
            return _error(f"unknown tool {call.name!r}; the tools are {sorted(self.tools)}"), False
        try:
            arguments = call.arguments_json()
        except ValueError as exc:
            self.ledger.counts["invalid_calls"] += 1
            return _error(f"{call.name}: {exc}"), False
        if self._env is None:  # opened before the first turn, closed only when done
            return _error(f"not run: the episode of {call.name} is closed"), False
        began = time.perf_counter()
        outcome = self._env.call(call.name, arguments)
        self.ledger.seconds["tool_seconds"] += time.perf_counter() - began
        if not outcome.ok:
            self.end("tool_error", f"{call.name}: {outcome.error_class}: {outcome.error}")
        elif not outcome.succeeded:
            self.ledger.counts["failed_calls"] += 1
        return outcome.result, True

    @contextmanager
    def asking(self, who: str, clock: str) -> Iterator[None]:
        """Time a model's turn into ``clock``; a model that failed for good ends the episode
        (``model_error``), one the factory could not reach at all raises on."""
        began = time.perf_counter()
        try:
            yield
        except LlmError as exc:
            if is_infrastructure(exc):
                raise
            self.end("model_error", f"{who} failed: {exc}")
        finally:
            self.ledger.seconds[clock] += time.perf_counter() - began

    def _hear_user(self) -> None:
        if self.user is None:  # a conversational episode has one (checked when it opened)
            return
        text = None
        with self.asking("the simulated user's model", "user_seconds"):
            text = self.user.reply(self.messages[1:])
        if text is None:
            return
        words, stopped = split_stop(valid_text(text))
        turns = self.spec.scenario.turns
        if stopped and self.sent <= len(turns):  # done with this request: the next one
            self._send_turn(turns[self.sent - 1].content)
            return
        if words:
            self.messages.append({"role": "user", "content": words})
        if stopped:
            self.end("user_stop", "the simulated user ended the conversation")
        elif not words:
            self.end("model_error", "the simulated user said nothing")

    def finish(self) -> TrajectoryRecord:
        """Score the state reached with the scenario's checks, and close the environment."""
        if not self.done:
            self.end("max_steps", "ended before the agent finished")
        scenario = self.spec.scenario
        final = (self._env.state() if self._env else None) or scenario.initial_state
        began = time.perf_counter()
        answer = final_answer(self.messages)
        score = score_final_state(
            scenario, final, self.sandbox, answer, self.judge, obtained=self.obtained
        )
        self.ledger.seconds["check_seconds"] += time.perf_counter() - began
        self.close()
        return self._record(score)

    def _record(self, score: Any) -> TrajectoryRecord:
        identity: dict[str, Any] = {
            "scenario_id": self.spec.scenario_id,
            "policy": self.policy,
            "messages": self.messages,
        }
        if self.spec.sample:  # another sample of one conversation is another episode
            identity["sample"] = self.spec.sample
        wall = time.perf_counter() - self.ledger.began
        return TrajectoryRecord(
            trajectory_id=content_id(identity),
            scenario_id=self.spec.scenario_id,
            env_id=self.spec.scenario.env_id,
            policy=self.policy,
            messages=self.messages,
            check_results=score.check_results,
            reward=score.reward.reward,
            success=score.reward.success,
            steps=self.ledger.counts["tool_calls"],
            termination=self.termination,
            usage={"turns": self.turns, **self.ledger.counts},
            timings={"wall_seconds": wall, **self.ledger.seconds},
            details={
                "sample": self.spec.sample,
                "reason": self.reason,
                "check_errors": [error for error in score.errors if error],
                **_verdict_of(score),
                **({"not_run": self.not_run} if self.not_run else {}),
            },
        )

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_episode(
    spec: EpisodeSpec,
    sandbox: Sandbox,
    settings: RolloutSettings,
    policy: Policy,
    *,
    policy_name: str,
    user: SimulatedUser | None = None,
    judge: ReplyJudge = judge_reply,
) -> TrajectoryRecord:
    """The whole episode: the policy acts until the episode ends, then the checks score it.

    Raises:
        LlmUnreachableError, LlmGateError: the factory could not ask the model at all.
    """
    with Episode(spec, sandbox, settings, policy=policy_name, user=user, judge=judge) as episode:
        episode.start()
        while not episode.done:
            with episode.asking("the policy model", "policy_seconds"):
                action = policy.act(list(episode.messages), episode.offered_tools)
            if not episode.done:
                episode.step(action)
        return episode.finish()


def is_infrastructure(exc: BaseException) -> bool:
    """The call failed for want of an answer (unreachable, timed out, 5xx, rate-limited, a
    wrong model name or key), not because of what the model answered: the episode is the
    factory's failure and due again, not a ``model_error`` trajectory that a rerun would keep."""
    if isinstance(exc, LlmUnreachableError | LlmGateError):
        return True
    record = getattr(exc, "record", None)
    return record is None or record.error_class not in MODEL_FAILURES


def _verdict_of(score: Any) -> dict[str, Any]:
    """The judge's verdict on the reply, passed or not, with its reason (a reward a trainer
    questions can be traced to the words that earned it)."""
    verdict, held = score.verdict, score.results_verdict
    found = {} if verdict is None else {"verdict": asdict(verdict)}
    return found | ({} if held is None else {"results_verdict": asdict(held)})


def _error(message: str) -> dict[str, Any]:
    return {"success": False, "error": message}
