"""The episode loop (tasks/rollout/episode.py, batch.run_episode) with in-process scripted
policies and users: every termination reason, every kind of bad action, the reward from the
checks. The same loop against the local HTTP endpoint is in test_rollout_flow.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from envmill.schemas.llm import LlmCallRecord
from envmill.schemas.rollout import STOP_MARKER, EpisodeSpec, RolloutSettings
from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.llm import LlmCallError, LlmUnreachableError
from envmill.tasks.rollout.episode import Episode, run_episode
from envmill.tasks.rollout.user import user_side

SETTINGS = RolloutSettings(max_steps=12, max_calls_per_turn=3, max_bad_turns=2)


def spec_of(env, scenario: ScenarioSpec, sample: int = 0) -> EpisodeSpec:
    return EpisodeSpec(
        key=f"k{sample}",
        sample=sample,
        scenario=scenario,
        scenario_id=scenario.scenario_id,
        class_name=env.class_name,
        source=env.source,
        tools=[t if isinstance(t, dict) else t.model_dump() for t in env.tools],
        introduction="Clinic front desk.",
        business_rules=["Be kind."],
        state_changing_tools=[n for n, k in env.tool_kinds.items() if k == "state_change"],
    )


@pytest.fixture(scope="module")
def scenarios(clinic, clinic_scenarios) -> list[ScenarioSpec]:
    return [ScenarioSpec(env_id=clinic.env_id, **raw) for raw in clinic_scenarios["certified"]]


@pytest.fixture(scope="module")
def plain(scenarios) -> ScenarioSpec:
    return next(s for s in scenarios if s.mode == "non_conversational")


@pytest.fixture(scope="module")
def talk(scenarios) -> ScenarioSpec:
    return next(s for s in scenarios if s.mode == "conversational")


def call(name: str, arguments, call_id: str = "") -> dict:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def calls(*parts: dict) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": list(parts)}


class Script:
    """A policy that says what it is told, turn by turn, then 'Done.'; records what it saw."""

    def __init__(self, *turns, name: str = "scripted"):
        self.turns, self.name, self.seen = list(turns), name, []

    def act(self, messages, tools):
        self.seen.append(messages)
        turn = self.turns.pop(0) if self.turns else "Done."
        if isinstance(turn, Exception):
            raise turn
        return turn


def oracle(scenario: ScenarioSpec) -> Script:
    return Script(*[calls(call(s.tool, s.arguments)) for s in scenario.reference_solution])


def run(env, sandbox, scenario, policy, user=None, settings=SETTINGS):
    spec = spec_of(env, scenario)
    return run_episode(spec, sandbox, settings, policy, policy_name=policy.name, user=user)


def failed_call(stage: str) -> LlmCallError:
    record = LlmCallRecord(
        stage=stage, model="m", request_hash="h", outcome="failed", error_class="ReplyError"
    )
    return LlmCallError(f"LLM call failed ({stage}): ReplyError: unusable", record)


def tool_results(trajectory) -> list[dict]:
    return [json.loads(m["content"]) for m in trajectory.messages if m["role"] == "tool"]


def test_the_reference_solution_as_a_policy_finishes_with_full_reward(clinic, sandbox, plain):
    trajectory = run(clinic, sandbox, plain, oracle(plain))
    assert trajectory.termination == "finished"
    assert trajectory.success and trajectory.reward == 1.0
    assert trajectory.check_results == [True] * len(plain.checks)
    assert trajectory.steps == len(plain.reference_solution)
    assert trajectory.messages[0]["role"] == "system"
    assert "Clinic front desk." in trajectory.messages[0]["content"]
    assert trajectory.messages[1] == {"role": "user", "content": plain.task}
    assert trajectory.messages[-1] == {"role": "assistant", "content": "Done."}
    assert all(result["success"] for result in tool_results(trajectory))


def test_an_agent_that_does_nothing_gets_the_checks_verdict_on_the_initial_state(
    clinic, sandbox, plain
):
    trajectory = run(clinic, sandbox, plain, Script("I cannot help with that."))
    assert trajectory.termination == "finished" and trajectory.steps == 0
    assert not trajectory.success and trajectory.reward < 1.0


def test_unknown_tools_and_malformed_arguments_are_error_observations(clinic, sandbox, plain):
    first = plain.reference_solution[0]
    policy = Script(
        calls(call("launch_rockets", {})),
        calls(call(first.tool, '{"name": "Bram')),  # cut short
        calls(call(first.tool, "[1, 2]")),
        *oracle(plain).turns,
    )
    trajectory = run(
        clinic, sandbox, plain, policy, settings=SETTINGS.model_copy(update={"max_bad_turns": 5})
    )
    errors = [r["error"] for r in tool_results(trajectory)[:3]]
    assert "unknown tool 'launch_rockets'" in errors[0]
    assert "not valid JSON" in errors[1]
    assert "not an object" in errors[2]
    assert trajectory.termination == "finished" and trajectory.success
    assert trajectory.usage["invalid_calls"] == 3


def test_parallel_calls_run_in_order_and_each_is_answered(clinic, sandbox, plain):
    steps = plain.reference_solution
    together = calls(*[call(s.tool, s.arguments, f"c{i}") for i, s in enumerate(steps[:2])])
    policy = Script(together, *[calls(call(s.tool, s.arguments)) for s in steps[2:]])
    trajectory = run(clinic, sandbox, plain, policy)
    answered = [m["tool_call_id"] for m in trajectory.messages if m["role"] == "tool"]
    assert answered[:2] == ["c0", "c1"]
    assert trajectory.success


def test_too_many_calls_in_one_message_get_errors_beyond_the_limit(clinic, sandbox, plain):
    step = plain.reference_solution[0]
    burst = calls(*[call(step.tool, step.arguments) for _ in range(5)])
    trajectory = run(clinic, sandbox, plain, Script(burst))
    results = tool_results(trajectory)
    assert len(results) == 5 and results[0]["success"]
    assert not any("at most" in r.get("error", "") for r in results[:3])
    assert all("at most 3 tool calls" in r["error"] for r in results[3:])
    ids = [c["id"] for c in trajectory.messages[2]["tool_calls"]]
    assert len(set(ids)) == 5  # the policy gave none: each got its own


def test_repeated_unusable_turns_end_as_model_error(clinic, sandbox, plain):
    policy = Script(*[calls(call("nope", {})) for _ in range(5)])
    trajectory = run(clinic, sandbox, plain, policy)
    assert trajectory.termination == "model_error"
    assert trajectory.usage["turns"] == SETTINGS.max_bad_turns
    assert "without a usable tool call" in trajectory.details["reason"]


def test_an_empty_message_ends_as_model_error(clinic, sandbox, plain):
    trajectory = run(clinic, sandbox, plain, Script({"role": "assistant", "content": "  "}))
    assert trajectory.termination == "model_error" and "empty" in trajectory.details["reason"]


def test_a_policy_model_that_fails_for_good_ends_as_model_error(clinic, sandbox, plain):
    first = plain.reference_solution[0]
    policy = Script(calls(call(first.tool, first.arguments)), failed_call("policy"))
    trajectory = run(clinic, sandbox, plain, policy)
    assert trajectory.termination == "model_error" and trajectory.steps == 1
    assert "policy model failed" in trajectory.details["reason"]


def test_an_unreachable_endpoint_is_the_factorys_failure_not_a_trajectory(clinic, sandbox, plain):
    record = LlmCallRecord(stage="policy", model="m", request_hash="h", outcome="failed")
    policy = Script(LlmUnreachableError("cannot reach", record))
    with pytest.raises(LlmUnreachableError):
        run(clinic, sandbox, plain, policy)


def test_endless_tool_calls_are_truncated_at_max_steps(clinic, sandbox, plain):
    look = plain.reference_solution[0]
    policy = Script(*[calls(call(look.tool, look.arguments)) for _ in range(50)])
    trajectory = run(clinic, sandbox, plain, policy)
    assert trajectory.termination == "max_steps"
    assert trajectory.usage["turns"] == SETTINGS.max_steps


HANGING = '''
class Hanger:
    """A counter whose one tool never returns."""

    def __init__(self):
        self.count: int = 0

    def bump(self) -> dict:
        """Add one.

        Returns:
            dict: the new count.
        """
        self.count += 1
        return {"success": True, "message": "bumped", "data": self.count}

    def spin(self) -> dict:
        """Spin forever.

        Returns:
            dict: never.
        """
        while True:
            self.count = self.count
'''


def test_an_environment_that_hangs_ends_as_tool_error(sandbox):
    # admission's probes would refuse it (tool_stopped): served here without them
    tools = [
        {"type": "function", "function": {"name": n, "description": n, "parameters": {}}}
        for n in ("bump", "spin")
    ]
    env = SimpleNamespace(class_name="Hanger", source=HANGING, tools=tools, tool_kinds={})
    scenario = ScenarioSpec(
        env_id="0" * 16,
        task="Bump the counter.",
        initial_state={"count": 0},
        reference_solution=[{"tool": "bump", "arguments": {}}],
        checks=[{"description": "bumped", "code": CHECK_BUMPED}],
    )
    policy = Script(calls(call("bump", {}), call("spin", {}), call("bump", {})))
    trajectory = run(env, sandbox, scenario, policy)
    assert trajectory.termination == "tool_error"
    results = tool_results(trajectory)
    assert results[0]["success"] and not results[1]["success"]
    assert "not run" in results[2]["error"]  # every call still answered
    assert trajectory.reward == 1.0  # the bump before the hang was kept


CHECK_BUMPED = "def check(initial_state, final_state):\n    return final_state['count'] == 1\n"


class Talker:
    """A simulated user from a script; records what it was shown."""

    def __init__(self, *lines):
        self.lines, self.seen = list(lines), []

    def reply(self, conversation):
        self.seen.append(user_side(conversation))
        line = self.lines.pop(0) if self.lines else STOP_MARKER
        if isinstance(line, Exception):
            raise line
        return line


def test_a_conversation_ends_when_the_user_stops(clinic, sandbox, talk):
    user = Talker("I need to move my appointment.", "It's Alice Moreno.", f"Thanks! {STOP_MARKER}")
    policy = Script("Who am I speaking with?", *oracle(talk).turns, "All done.")
    trajectory = run(clinic, sandbox, talk, policy, user=user)
    assert trajectory.termination == "user_stop" and trajectory.success
    said = [m["content"] for m in trajectory.messages if m["role"] == "user"]
    assert said == ["I need to move my appointment.", "It's Alice Moreno.", "Thanks!"]
    # the user saw the agent's words as 'user' turns and its own as 'assistant' turns
    assert user.seen[1][-1] == {"role": "user", "content": "Who am I speaking with?"}
    assert user.seen[1][-2] == {"role": "assistant", "content": "I need to move my appointment."}
    assert all(m["role"] != "tool" for m in user.seen[-1])


def test_a_user_who_stops_at_once_and_a_failing_user_model(clinic, sandbox, talk):
    stopped = run(clinic, sandbox, talk, Script(), user=Talker(STOP_MARKER))
    assert stopped.termination == "user_stop" and len(stopped.messages) == 1
    broken = run(clinic, sandbox, talk, Script("Hello?"), user=Talker("Hi.", failed_call("user")))
    assert broken.termination == "model_error"
    assert "simulated user" in broken.details["reason"]


def test_a_conversational_scenario_needs_a_user(clinic, sandbox, talk):
    with pytest.raises(ValueError, match="needs a user"):
        Episode(spec_of(clinic, talk), sandbox, SETTINGS, policy="p")


def test_step_after_the_end_and_actions_that_are_not_messages(clinic, sandbox, plain):
    with Episode(spec_of(clinic, plain), sandbox, SETTINGS, policy="p") as episode:
        episode.start()
        result = episode.step(42)
        assert result.terminated and episode.termination == "model_error"
        with pytest.raises(RuntimeError):
            episode.step("more")


def test_call_ids_a_model_reuses_across_turns_are_made_unique(clinic, sandbox, plain):
    steps = plain.reference_solution
    policy = Script(*[calls(call(s.tool, s.arguments, "call_0")) for s in steps])
    trajectory = run(clinic, sandbox, plain, policy)
    ids = [c["id"] for m in trajectory.messages for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in trajectory.messages if m["role"] == "tool"]
    assert len(set(ids)) == len(ids) == len(steps) and answered == ids
    assert trajectory.success
