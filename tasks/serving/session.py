"""One scenario's environment held open for an outside agent: call its tools, start over, score.

A ``ToolSession`` is what a protocol adapter (MCP today, an OpenEnv server tomorrow) needs and
no more: the tools offered now (the environment's schemas, without those the scenario
withholds), a call that always answers with a result object in the tools' own shape
(DESIGN §3.1), a reset to a scenario's initial state, and the reward of the state reached — the
one reward function certification and rollouts use (``score_final_state``), the reply judged
where the scenario expects one and the results obtained where it expects those.

The environment runs in envmill's sandbox, never here: a host that dies answers its call with
an error result, and the next call gets a fresh host loaded with the last good state
(``SandboxEpisode``). A multi-turn scenario's later user messages are sent with
``next_message``, which also offers the tools a message makes available and starts a new
bucket of obtained results (what the ``expected_results`` verdict reads).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envmill.schemas.rollout import EpisodeSpec
from envmill.tasks.certify.scoring import EpisodeScore, plain_text, score_final_state
from envmill.tasks.core.opening import opening_message
from envmill.tasks.core.system_message import system_prompt
from envmill.tasks.judge import ReplyJudge, judge_reply
from envmill.tasks.sandbox import Sandbox, SandboxEpisode

Result = dict[str, Any]  # a tool's result object (DESIGN §3.1)


@dataclass(frozen=True)
class CheckReport:
    """One check of the reward: what it asks, whether it held, and why (a check that failed to
    run says its error; the judge's verdict always says its reason)."""

    description: str
    passed: bool
    reason: str | None = None


@dataclass(frozen=True)
class RewardReport:
    """The reward of the state reached, its success, and every check with its description."""

    scenario_id: str
    reward: float
    success: bool
    checks: list[CheckReport] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "scenario_id": self.scenario_id,
            "reward": self.reward,
            "success": self.success,
            "checks": [vars(check) for check in self.checks],
        }


class ToolSession:
    """One environment's tools over one of its certified scenarios at a time.

    Args:
        specs: the scenarios this session may serve, by id (all of one environment).
        sandbox: where the environment runs.
        scenario_id: the scenario to open first.
        judge: who judges a final reply (envmill's rules unless told otherwise).
    """

    def __init__(
        self,
        specs: Mapping[str, EpisodeSpec],
        sandbox: Sandbox,
        scenario_id: str,
        judge: ReplyJudge = judge_reply,
    ) -> None:
        if scenario_id not in specs:
            raise KeyError(f"scenario {scenario_id} is not served here")
        self.specs, self.sandbox, self.judge = dict(specs), sandbox, judge
        self._lock = threading.Lock()  # one call at a time: the environment is one object
        self._env: SandboxEpisode | None = None
        self.spec = specs[scenario_id]
        self.obtained: list[list[Result]] = [[]]
        self.sent = 1

    @property
    def scenario_id(self) -> str:
        return self.spec.scenario_id

    def tools(self) -> list[dict[str, Any]]:
        """The tool schemas offered now (Chat Completions form): the environment's, without
        those the scenario withholds until a later message."""
        withheld = self.spec.scenario.withheld_at(self.sent - 1)
        return [tool for tool in self.spec.tools if tool["function"]["name"] not in withheld]

    def call(self, name: str, arguments: Any) -> Result:
        """Run one tool; whatever goes wrong comes back as ``{"success": False, "error": ...}``."""
        offered = sorted(tool["function"]["name"] for tool in self.tools())
        if name not in offered:
            known = name in {tool["function"]["name"] for tool in self.spec.tools}
            said = "is not available here" if known else "is not a tool of this environment"
            return _error(f"{name!r} {said}; the tools are {offered}")
        if not isinstance(arguments, dict):
            return _error(f"{name}: the arguments must be a JSON object")
        with self._lock:
            outcome = self._episode().call(name, arguments)
            if outcome.ok:  # a result the tool gave (a failed host's is no result obtained)
                self.obtained[-1].append(outcome.result)
        return outcome.result

    def reset(self, scenario_id: str | None = None) -> Result:
        """Back to the initial state of ``scenario_id`` (default: the current scenario)."""
        if scenario_id is not None and scenario_id not in self.specs:
            served = ", ".join(sorted(self.specs))
            return _error(f"scenario {scenario_id} is not served here; these are: {served}")
        with self._lock:
            self.close()
            self.spec = self.specs[scenario_id or self.scenario_id]
            self.obtained, self.sent = [[]], 1
            loaded = self._episode().load_outcome
        if not loaded.ok:
            return _error(f"the environment did not load: {loaded.error_class}: {loaded.error}")
        return {"success": True, "message": f"scenario {self.scenario_id} restarted"} | {
            "data": self.introduction()
        }

    def introduction(self) -> dict[str, Any]:
        """What an agent is told of the current scenario: its system message and first user
        message (the task, or a conversational user's opening request), and how many follow."""
        scenario = self.spec.scenario
        system = system_prompt(
            self.spec.introduction, self.spec.business_rules, scenario.initial_state
        )
        return {
            "scenario_id": self.scenario_id,
            "mode": scenario.mode,
            "system": system,
            "task": opening_message(scenario),
            "later_messages": len(scenario.turns),
        }

    def next_message(self) -> Result:
        """The scenario's next user message (multi-turn), with the tools it offers from now on;
        the results obtained after it count for it."""
        turns = self.spec.scenario.turns
        with self._lock:
            if self.sent > len(turns):
                return _error("there is no further user message in this scenario")
            content = turns[self.sent - 1].content
            self.sent += 1
            self.obtained.append([])
        names = [tool["function"]["name"] for tool in self.tools()]
        return {"success": True, "data": {"message": content, "tools": names}}

    def reward(self, final_reply: Any = "") -> RewardReport:
        """Score the state reached: every check on (initial state, current state), then the
        judge's verdict on ``final_reply`` and on the results obtained where the scenario
        expects them. Nothing is reset: scoring twice gives the same report."""
        with self._lock:
            final = self._episode().state() or self.spec.scenario.initial_state
            obtained = [list(results) for results in self.obtained]
        score = score_final_state(
            self.spec.scenario,
            final,
            self.sandbox,
            plain_text(final_reply),
            self.judge,
            obtained=obtained,
        )
        return RewardReport(
            self.scenario_id, score.reward.reward, score.reward.success, self._checks(score)
        )

    def _checks(self, score: EpisodeScore) -> list[CheckReport]:
        described = [check.description for check in self.spec.scenario.checks]
        reasons = list(score.errors[: len(described)])
        for what, verdict in (
            ("the final reply says what the scenario expects", score.verdict),
            ("the tool results the scenario expects were obtained", score.results_verdict),
        ):
            if verdict is not None:
                described.append(what)
                reasons.append(verdict.reason)
        pairs = zip(described, score.check_results, reasons, strict=True)
        return [CheckReport(text, passed, reason) for text, passed, reason in pairs]

    def _episode(self) -> SandboxEpisode:
        """The open environment, loaded with the scenario's initial state on first use."""
        if self._env is None:
            scenario = self.spec.scenario
            self._env = self.sandbox.episode(
                self.spec.source, self.spec.class_name, scenario.initial_state
            )
        return self._env

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    def __enter__(self) -> ToolSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _error(message: str) -> Result:
    return {"success": False, "error": message}
